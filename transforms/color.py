"""Colour corruptions in HSV space: brightness and saturate, and the HSV conversions they use.

The conversions give exactly the values of scikit-image's, which the reference called
(``../shared/spec/imagenet_c.md`` section 3.6); :mod:`transforms` code that needs HSV imports
:func:`rgb2hsv` and :func:`hsv2rgb` from here. Neither corruption draws random numbers.
"""
from __future__ import annotations

import numpy as np
from skimage.util import img_as_float


def _as_float_triples(array: np.ndarray, name: str) -> np.ndarray:
    """``array`` as float (``skimage.img_as_float``), shape (N, 3); ``ValueError`` unless (..., 3)."""
    array = np.asanyarray(array)
    if array.shape[-1:] != (3,):
        raise ValueError(f"{name} must have shape (..., 3) with 3 channels last; got shape {array.shape}")
    return img_as_float(array).reshape(-1, 3)


def rgb2hsv(rgb: np.ndarray) -> np.ndarray:
    """RGB to HSV with exactly the values of ``skimage.color.rgb2hsv``.

    Parameters
    ----------
    rgb : numpy.ndarray
        Shape (..., 3). Floats are taken as values in [0, 1] (float32 stays float32); integer
        images are scaled to [0, 1] first (``skimage.img_as_float``).

    Returns
    -------
    numpy.ndarray
        Same shape, float: hue in [0, 1) (fraction of a turn), saturation ``(max - min) / max`` in
        [0, 1] and value ``max``. Hue and saturation are 0 where ``max == min``; NaN becomes 0.
        Where several channels equal the maximum, blue wins over green, green over red.

    Raises
    ------
    ValueError
        If the last axis does not have 3 channels.

    Notes
    -----
    Unlike scikit-image, this leaves NumPy's global error state alone (safe with threads) and
    avoids boolean fancy indexing; ``tests/transforms/test_noise_color_digital.py`` checks that the
    values are identical.
    """
    shape = np.shape(rgb)
    rgb = _as_float_triples(rgb, "rgb")
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = rgb.max(axis=-1)
    delta = value - rgb.min(axis=-1)
    grey = delta == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        saturation = delta / value
        hue = np.where(b == value, 4.0 + (r - g) / delta,
                       np.where(g == value, 2.0 + (b - r) / delta, (g - b) / delta))
    hue /= 6.0
    hue %= 1.0
    hue[grey] = 0.0
    saturation[grey] = 0.0
    hsv = np.stack((hue, saturation, value), axis=-1)
    hsv[np.isnan(hsv)] = 0.0
    return hsv.reshape(shape)


def hsv2rgb(hsv: np.ndarray) -> np.ndarray:
    """HSV to RGB with exactly the values of ``skimage.color.hsv2rgb`` (the sextant formula).

    Parameters
    ----------
    hsv : numpy.ndarray
        Shape (..., 3): hue (fraction of a turn; sextant ``floor(6 h)`` cast to uint8, mod 6),
        saturation and value, normally in [0, 1]. Integer images are scaled as in
        :func:`rgb2hsv`.

    Returns
    -------
    numpy.ndarray
        Same shape, float RGB: with ``f = 6h - floor(6h)``, ``p = v(1 - s)``, ``q = v(1 - f s)``,
        ``t = v(1 - (1 - f) s)``, sextants 0..5 give (v,t,p), (q,v,p), (p,v,t), (p,q,v), (t,p,v),
        (v,p,q).

    Raises
    ------
    ValueError
        If the last axis does not have 3 channels.
    """
    shape = np.shape(hsv)
    hsv = _as_float_triples(hsv, "hsv")
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    h6 = h * 6
    floor6 = np.floor(h6)
    f = h6 - floor6
    p = v * (1 - s)
    q = v * (1 - f * s)
    t = v * (1 - (1 - f) * s)
    sextant = floor6.astype(np.uint8) % 6
    rgb = np.empty(hsv.shape, dtype=np.result_type(p, q, t, v))
    for channel, choices in enumerate(((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))):
        np.choose(sextant, choices, out=rgb[..., channel])
    return rgb.reshape(shape)


def _recolor(x: np.ndarray, channel: int, scale: float, offset: float) -> np.ndarray:
    """Map HSV ``channel`` (1 = S, 2 = V) to ``clip(c * scale + offset, 0, 1)``; back to RGB * 255."""
    hsv = rgb2hsv(x / 255.0)
    plane = hsv[..., channel]
    plane *= scale  # exact when scale is 1
    plane += offset
    np.clip(plane, 0.0, 1.0, out=plane)
    rgb = hsv2rgb(hsv)
    np.clip(rgb, 0.0, 1.0, out=rgb)
    rgb *= 255
    return rgb


def brightness(x: np.ndarray, rng: np.random.RandomState, *, delta: float) -> np.ndarray:
    """Raise the HSV value of every pixel by ``delta`` (clipped to 1).

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Not used (the corruption is deterministic); accepted for a uniform signature.
    delta : float
        Added to V, in units of the full range (1 = 255 levels); in [0, 1].

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255].
    """
    return _recolor(x, channel=2, scale=1, offset=delta)


def saturate(x: np.ndarray, rng: np.random.RandomState, *, multiplier: float, offset: float) -> np.ndarray:
    """Scale and shift the HSV saturation of every pixel: ``S = clip(S * multiplier + offset, 0, 1)``.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Not used (the corruption is deterministic); accepted for a uniform signature.
    multiplier : float
        Saturation factor, >= 0 (< 1 desaturates).
    offset : float
        Added to the scaled saturation, in [0, 1].

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255].
    """
    return _recolor(x, channel=1, scale=multiplier, offset=offset)
