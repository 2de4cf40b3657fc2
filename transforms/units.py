"""The two conversions every corruption shares: uint8 to [0, 1] floats, and back to [0, 255]."""
import numpy as np

__all__ = ["to_unit", "clip_to_255"]


def to_unit(x: np.ndarray) -> np.ndarray:
    """uint8 image as float64 in [0, 1]: the reference's ``np.array(x) / 255.``."""
    return np.asarray(x) / 255.0


def clip_to_255(u: np.ndarray) -> np.ndarray:
    """``clip(u, 0, 1) * 255``, computed in place on ``u`` (which the caller owns); dtype kept."""
    np.clip(u, 0.0, 1.0, out=u)
    u *= 255
    return u
