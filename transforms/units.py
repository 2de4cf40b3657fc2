"""The two conversions every corruption shares: uint8 to [0, 1] floats, and back to [0, 255]."""
from .jit import numba
import numpy as np

__all__ = ["to_unit", "clip_to_255"]

#: ``v / 255.`` for every uint8 value v, float64 and float32 (the float64 quotient rounded).
_UNIT = {np.dtype(np.float64): np.arange(256) / 255.0}
_UNIT[np.dtype(np.float32)] = _UNIT[np.dtype(np.float64)].astype(np.float32)
for _table in _UNIT.values():
    _table.flags.writeable = False


def to_unit(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Image as floats in [0, 1]: the reference's ``np.array(x) / 255.``, rounded to ``dtype``.

    Parameters
    ----------
    x : numpy.ndarray
        Image, any shape; uint8 (0..255) in every corruption.
    dtype : numpy.dtype
        float64 (default: the quotient itself) or float32 (``(x / 255.).astype(np.float32)``).

    Returns
    -------
    numpy.ndarray
        Shape of ``x``. A C-contiguous uint8 image is converted by looking each value's quotient
        up in a 256-entry table (the same float64 division, made once per value), in one pass.

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.units import to_unit
    >>> x = np.arange(256, dtype=np.uint8).reshape(16, 16)
    >>> to_unit(x).tobytes() == (x / 255.).tobytes()
    True
    >>> to_unit(x, np.float32).tobytes() == (x / 255.).astype(np.float32).tobytes()
    True
    """
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if dtype not in _UNIT:
        raise ValueError(f"dtype must be float64 or float32, got {dtype}")
    if x.dtype != np.uint8 or not x.flags.c_contiguous:
        return (x / 255.).astype(dtype, copy=False)
    out = np.empty(x.shape, dtype=dtype)
    _look_up(x.reshape(-1), _UNIT[dtype], out.reshape(-1))
    return out


@numba.njit(cache=True)
def _look_up(values, table, out):
    """``out[m] = table[values[m]]`` (uint8 indices)."""
    for m in range(values.shape[0]):
        out[m] = table[values[m]]


def clip_to_255(u: np.ndarray) -> np.ndarray:
    """``clip(u, 0, 1) * 255``, computed in place on ``u`` (which the caller owns); dtype kept.

    A C-contiguous float64 or float32 array is done in one pass (:func:`_clip_scale`: NumPy's
    comparisons, then the product in ``u``'s dtype); any other array by NumPy's two.

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.units import clip_to_255
    >>> clip_to_255(np.array([-0.5, 0.5, 2.0])).tolist()
    [0.0, 127.5, 255.0]
    """
    if u.dtype in (np.float64, np.float32) and u.flags.c_contiguous and u.flags.writeable:
        _clip_scale(u.reshape(-1), u.dtype.type(255))
        return u
    np.clip(u, 0.0, 1.0, out=u)
    u *= 255
    return u


@numba.njit(cache=True)
def _clip_scale(values, scale):
    """In place: ``v = 0 if v < 0 else v``; ``v = 1 if v > 1 else v``; ``v * scale``.

    NumPy's ``clip`` (which keeps -0.0 and NaN), then its ``*=``, value by value.
    """
    zero, one = values.dtype.type(0), values.dtype.type(1)
    for m in range(values.shape[0]):
        v = values[m]
        v = zero if v < zero else v
        v = one if v > one else v
        values[m] = v * scale
