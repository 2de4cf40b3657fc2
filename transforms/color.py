"""Colour corruptions in HSV space: brightness and saturate, and the HSV conversions they use.

The conversions give exactly the values of scikit-image's, which the reference called
(``docs/reference/algorithms.md``, "HSV"); :mod:`transforms` code that needs HSV imports
:func:`rgb2hsv` and :func:`hsv2rgb` from here. Neither corruption draws random numbers.
"""
from __future__ import annotations

from .jit import numba
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
    """Map HSV ``channel`` (1 = S, 2 = V) to ``clip(c * scale + offset, 0, 1)``; back to RGB * 255.

    A C-contiguous uint8 (H, W, 3) image is done in one pass (:func:`_recolor_pixels`), any other
    by the same steps over whole arrays; both give the same bits.
    """
    x = np.asarray(x)
    if x.dtype == np.uint8 and x.ndim == 3 and x.shape[2] == 3 and x.flags.c_contiguous:
        out = np.empty(x.shape)
        scales, offsets = [1.0, 1.0], [0.0, 0.0]
        scales[channel - 1], offsets[channel - 1] = float(scale), float(offset)
        _recolor_pixels(x.reshape(-1), scales[0], offsets[0], scales[1], offsets[1], out.reshape(-1))
        return out
    hsv = rgb2hsv(to_unit(x))
    plane = hsv[..., channel]
    plane *= scale  # exact when scale is 1
    plane += offset
    np.clip(plane, 0.0, 1.0, out=plane)
    rgb = hsv2rgb(hsv)
    return clip_to_255(rgb)


@numba.njit(cache=True, error_model="numpy")
def _recolor_pixels(x, s_scale, s_offset, v_scale, v_offset, out):
    """Per pixel of a uint8 image (flat, RGB triples): :func:`_recolor`'s steps, in float64.

    ``u = x / 255.``, scikit-image's rgb2hsv (:func:`_rgb_to_hsv_pixels`), the saturation and the
    value each scaled, shifted and clipped to [0, 1] by NumPy's comparisons (the channel that
    :func:`_recolor` leaves gets ``* 1.0 + 0.0``, which keeps it: it is in [0, 1] and not -0.0),
    hsv2rgb (:func:`_hsv_to_rgb_pixels`), and :func:`transforms.units.clip_to_255`'s
    comparisons and product. The conversions' branches depend on each pixel's colour, and
    their mispredicted jumps were most of the time; here every pixel does the same operations,
    the branches' values picked by selects (so the loop runs on vectors) or by exact
    identities, with the same results:

    - the hue's numerator and offset are chosen by the maximal channel (blue before green
      before red); the red case adds the offset 0.0, exact as its quotient is never -0.0 (no
      channel is -0.0, and ``x - x`` is +0.0);
    - a grey pixel (``delta == 0``) divides by 1 instead of 0 and its hue is multiplied by 0.0
      (a finite hue times 0.0 is +0.0, scikit-image's 0); other hues by 1.0, and their divisor
      ``delta + 0.0`` is ``delta``; the saturation is ``delta / value``, or ``0 / 1`` for black;
    - ``% 1`` of the hue over 6, which lies in [-1/6, 5/6]: Python's modulo adds 1 to a negative
      value and keeps the others (a zero as +0.0), so ``+ 1.0`` or ``+ 0.0`` (never -0.0 here);
    - hsv2rgb's sextant chooses red, green and blue among (v, t, p, q).

    No component is NaN (``u`` is in [0, 1], the scales and offsets finite), so scikit-image's
    NaN tests change nothing. Every colour of 2^24 gives the bits of the array steps for the
    tables' parameters.
    """
    zero, one, two, four, six, full = 0.0, 1.0, 2.0, 4.0, 6.0, 255.0
    for n in range(x.shape[0] // 3):
        r, g, b = x[3 * n] / full, x[3 * n + 1] / full, x[3 * n + 2] / full
        value = max(r, g, b)
        delta = value - min(r, g, b)
        grey = delta == zero
        blue, green = b == value, g == value
        numerator = (r - g) if blue else ((b - r) if green else (g - b))
        base = four if blue else (two if green else zero)
        hue = base + numerator / (delta + (one if grey else zero))
        hue = hue * (zero if grey else one) / six
        hue = hue + (one if hue < zero else zero)
        saturation = delta / (value + (one if value == zero else zero))
        saturation = _clip_unit(saturation * s_scale + s_offset)
        value = _clip_unit(value * v_scale + v_offset)
        h6 = hue * six
        floor6 = np.floor(h6)
        f = h6 - floor6
        t = value * (one - (one - f) * saturation)
        p = value * (one - saturation)
        q = value * (one - f * saturation)
        sextant = (int(floor6) & 0xFF) % 6  # NumPy's cast to uint8, then % 6
        red = value if (sextant == 0 or sextant == 5) else (q if sextant == 1 else (t if sextant == 4 else p))
        grn = t if sextant == 0 else (value if (sextant == 1 or sextant == 2) else (q if sextant == 3 else p))
        blu = t if sextant == 2 else (value if (sextant == 3 or sextant == 4) else (q if sextant == 5 else p))
        out[3 * n] = _clip_unit(red) * full
        out[3 * n + 1] = _clip_unit(grn) * full
        out[3 * n + 2] = _clip_unit(blu) * full


@numba.njit(cache=True, inline="always")
def _clip_unit(v):
    """``v`` clipped to [0, 1] by NumPy's comparisons: ``0 if v < 0``, then ``1 if v > 1``."""
    v = 0.0 if v < 0.0 else v
    return 1.0 if v > 1.0 else v


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
