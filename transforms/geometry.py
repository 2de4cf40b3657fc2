"""Geometric helpers shared by several corruptions and perturbations."""
from __future__ import annotations

import math

import numpy as np
from scipy import ndimage


def clipped_zoom(image: np.ndarray, zoom_factor: float) -> np.ndarray:
    """Zoom into the centre of a square image, keeping its size (the reference ``clipped_zoom``).

    The central ``ceil(H / zoom_factor)`` square is enlarged with ``scipy.ndimage.zoom``
    (bilinear, ``order=1``, corners aligned), then the result is trimmed back to H x H by
    the same centred offset on both axes (spec ``imagenet_c.md`` section 3.3).

    Parameters
    ----------
    image : numpy.ndarray
        Shape (H, H) or (H, H, C), any float or integer dtype; the dtype is kept.
    zoom_factor : float
        Enlargement, >= 1.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``image``.
    """
    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.shape[0] != image.shape[1]:
        raise ValueError("image must be a square array of shape (H, H) or (H, H, C), got "
                         f"{getattr(image, 'shape', type(image))}")
    if not zoom_factor >= 1:
        raise ValueError(f"zoom_factor must be >= 1, got {zoom_factor!r}")
    side = image.shape[0]
    crop = int(math.ceil(side / zoom_factor))
    top = (side - crop) // 2
    centre = image[top:top + crop, top:top + crop]
    if image.ndim == 2:
        centre = centre[..., np.newaxis]
    zoomed = ndimage.zoom(centre, (zoom_factor, zoom_factor, 1), order=1)
    trim = (zoomed.shape[0] - side) // 2
    out = zoomed[trim:trim + side, trim:trim + side]
    return out[..., 0] if image.ndim == 2 else out
