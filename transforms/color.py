"""Colour corruptions in HSV space: brightness and saturate, and the HSV conversions they use.

The conversions give exactly the values of scikit-image's, which the reference called
(``docs/reference/algorithms.md``, "HSV"); :mod:`transforms` code that needs HSV imports
:func:`rgb2hsv` and :func:`hsv2rgb` from here. Neither corruption draws random numbers.
"""
from __future__ import annotations

import numba
import numpy as np
from skimage.util import img_as_float

from .units import clip_to_255, to_unit

__all__ = ["rgb2hsv", "hsv2rgb", "brightness", "saturate"]


def _as_float_triples(array: np.ndarray, name: str) -> np.ndarray:
    """``array`` as float (``skimage.img_as_float``), shape (N, 3); ``ValueError`` unless (..., 3)."""
    array = np.asanyarray(array)
    if array.shape[-1:] != (3,):
        raise ValueError(f"{name} must have shape (..., 3) with 3 channels last; got shape {array.shape}")
    return img_as_float(array).reshape(-1, 3)


@numba.njit(cache=True, error_model="numpy")
def _rgb_to_hsv_pixels(rgb, hsv):
    """Per pixel, scikit-image's rgb2hsv operations in its dtype; see :func:`rgb2hsv`."""
    kind = rgb.dtype.type
    zero, one, two, four, six = kind(0), kind(1), kind(2), kind(4), kind(6)
    for n in range(rgb.shape[0]):
        r, g, b = rgb[n, 0], rgb[n, 1], rgb[n, 2]
        if r != r or g != g or b != b:  # a NaN channel makes every component NaN, then 0
            hsv[n, 0] = hsv[n, 1] = hsv[n, 2] = zero
            continue
        value = max(r, g, b)
        delta = value - min(r, g, b)
        if delta == 0:
            hue = saturation = zero
        else:
            saturation = delta / value
            if b == value:
                hue = four + (r - g) / delta
            elif g == value:
                hue = two + (b - r) / delta
            else:
                hue = (g - b) / delta
            hue = (hue / six) % one
        hsv[n, 0] = zero if hue != hue else hue  # NaN -> 0, as scikit-image
        hsv[n, 1] = zero if saturation != saturation else saturation
        hsv[n, 2] = zero if value != value else value


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
    The same floating-point operations as scikit-image, in its dtype, one pixel at a time
    (compiled); unlike scikit-image, this leaves NumPy's global error state alone (safe with
    threads). ``tests/transforms/test_noise_color_digital.py`` checks that the values are
    identical.
    """
    shape = np.shape(rgb)
    rgb = _as_float_triples(rgb, "rgb")
    hsv = np.empty_like(rgb)
    _rgb_to_hsv_pixels(rgb, hsv)
    return hsv.reshape(shape)


@numba.njit(cache=True)
def _hsv_to_rgb_pixels(hsv, rgb):
    """Per pixel, scikit-image's hsv2rgb operations in its dtype; see :func:`hsv2rgb`."""
    kind = hsv.dtype.type
    one, six = kind(1), kind(6)
    for n in range(hsv.shape[0]):
        h, s, v = hsv[n, 0], hsv[n, 1], hsv[n, 2]
        h6 = h * six
        floor6 = np.floor(h6)
        f = h6 - floor6
        p = v * (one - s)
        q = v * (one - f * s)
        t = v * (one - (one - f) * s)
        sextant = (int(floor6) & 0xFF) % 6  # NumPy's cast to uint8, then % 6
        if sextant == 0:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = v, t, p
        elif sextant == 1:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = q, v, p
        elif sextant == 2:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = p, v, t
        elif sextant == 3:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = p, q, v
        elif sextant == 4:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = t, p, v
        else:
            rgb[n, 0], rgb[n, 1], rgb[n, 2] = v, p, q


def hsv2rgb(hsv: np.ndarray) -> np.ndarray:
    """HSV to RGB with exactly the values of ``skimage.color.hsv2rgb`` (the sextant formula).

    Parameters
    ----------
    hsv : numpy.ndarray
        Shape (..., 3): hue (fraction of a turn, in [0, 1]; sextant ``floor(6 h)`` cast to
        uint8, mod 6), saturation and value, normally in [0, 1]. Integer images are scaled as
        in :func:`rgb2hsv`.

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
    rgb = np.empty_like(hsv)
    _hsv_to_rgb_pixels(hsv, rgb)
    return rgb.reshape(shape)


def _recolor(x: np.ndarray, channel: int, scale: float, offset: float) -> np.ndarray:
    """Map HSV ``channel`` (1 = S, 2 = V) to ``clip(c * scale + offset, 0, 1)``; back to RGB * 255."""
    hsv = rgb2hsv(to_unit(x))
    plane = hsv[..., channel]
    plane *= scale  # exact when scale is 1
    plane += offset
    np.clip(plane, 0.0, 1.0, out=plane)
    rgb = hsv2rgb(hsv)
    return clip_to_255(rgb)


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
