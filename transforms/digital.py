"""Digital corruptions: contrast, elastic transform, pixelate and JPEG compression.

Each function takes the NxNx3 uint8 (N the edition's side) image and a ``numpy.random.RandomState`` and returns what
the reference hands to the driver's ``np.uint8`` (``docs/reference/algorithms.md``,
"Digital"): a float array in [0, 255], or a uint8 array where the reference returns a PIL image.
Only :func:`elastic_transform` draws random numbers.
"""
from __future__ import annotations

import io

import cv2
from .jit import numba
import numpy as np
from PIL import Image

from .filters import gaussian_filter
from .geometry import displace_reflect
from .units import to_unit

__all__ = ["contrast", "channel_means", "elastic_transform", "pixelate", "jpeg_compression"]


def contrast(x: np.ndarray, rng: np.random.RandomState, *, factor: float) -> np.ndarray:
    """Scale every channel's deviation from its own mean by ``factor``.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Not used (the corruption is deterministic); accepted for a uniform signature.
    factor : float
        Contrast factor, >= 0 (< 1 lowers contrast; 0 gives a flat image of the channel means).

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255]: ``clip((u - m) * factor + m, 0, 1) * 255`` with
        ``u = x/255`` and ``m`` the per-channel mean of ``u`` over rows and columns.
    """
    u = np.ascontiguousarray(to_unit(x))
    _scale_deviations(u, channel_means(u), float(factor))
    return u


def channel_means(u: np.ndarray) -> np.ndarray:
    """``numpy.mean(u, axis=(0, 1))`` of a C-contiguous (H, W, C) float64 array, bit for bit, in one pass.

    NumPy reduces over the outer axes of such an array by adding row after row, every channel's
    sum running in pixel order from 0 (no pairwise summation: the kept channel axis is the inner
    loop), then divides by ``H * W``; this does the same additions in the same order, without
    NumPy's three-element inner loops.

    Parameters
    ----------
    u : numpy.ndarray
        float64, C-contiguous, shape (H, W, C).

    Returns
    -------
    numpy.ndarray
        float64, shape (C,).

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.digital import channel_means
    >>> u = np.random.RandomState(0).rand(5, 4, 3)
    >>> channel_means(u).tobytes() == np.mean(u, axis=(0, 1)).tobytes()
    True
    """
    if u.dtype != np.float64 or u.ndim != 3 or not u.flags.c_contiguous:
        raise ValueError(f"need a C-contiguous float64 (H, W, C) array, got {u.dtype} {u.shape}")
    return _channel_sums(u) / (u.shape[0] * u.shape[1])


@numba.njit(cache=True)
def _channel_sums(u):
    """Per channel, ``0 + u[0, 0] + u[0, 1] + ...`` in row-major pixel order (float64).

    Three channels run in three local sums (independent chains the processor overlaps); any
    other count in an array of sums.
    """
    flat = u.reshape(-1)
    pixels, channels = u.shape[0] * u.shape[1], u.shape[2]
    sums = np.zeros(channels)
    if channels == 3:
        red = green = blue = 0.0
        for p in range(pixels):
            red += flat[3 * p]
            green += flat[3 * p + 1]
            blue += flat[3 * p + 2]
        sums[0], sums[1], sums[2] = red, green, blue
        return sums
    for p in range(pixels):
        for k in range(channels):
            sums[k] += flat[channels * p + k]
    return sums


@numba.njit(cache=True)
def _scale_deviations(u, means, factor):
    """In place, per value: ``clip((u - m) * factor + m, 0, 1) * 255``, ``m`` its channel's mean (float64).

    Row by row against one row of means (each channel's repeated at its samples), so that the
    loop runs over contiguous values and vectorises.
    """
    height, width, channels = u.shape
    row_means = np.empty(width * channels)
    for m in range(width * channels):
        row_means[m] = means[m % channels]
    rows = u.reshape(height, width * channels)
    for i in range(height):
        row = rows[i]
        for m in range(width * channels):
            mean = row_means[m]
            row[m] = min(max((row[m] - mean) * factor + mean, 0.0), 1.0) * 255


def _elastic_anchor_points(height: int, width: int) -> np.ndarray:
    """The reference's three affine anchors, float32: centre +- a third of the short side.

    Built from (height, width) and used as (x, y) points, as the reference does (the same thing
    for square images).
    """
    centre = np.float32((height, width)) // 2
    third = min(height, width) // 3
    return np.float32([centre + third,
                       [centre[0] + third, centre[1] - third],
                       centre - third])


def _random_affine(image: np.ndarray, rng: np.random.RandomState, jitter: float) -> np.ndarray:
    """Warp ``image`` by the affine map that moves each anchor by ``uniform(-jitter, jitter)`` px.

    Draws ``uniform(-jitter, jitter, (3, 2))``; bilinear ``cv2.warpAffine``, border REFLECT_101.
    """
    height, width = image.shape[:2]
    src = _elastic_anchor_points(height, width)
    dst = src + rng.uniform(-jitter, jitter, size=src.shape).astype(np.float32)
    matrix = cv2.getAffineTransform(src, dst)
    return cv2.warpAffine(image, matrix, (width, height), borderMode=cv2.BORDER_REFLECT_101)


def _displacement(rng: np.random.RandomState, shape: tuple, alpha: float, sigma: float) -> np.ndarray:
    """One displacement field in pixels, float32: ``uniform(-1, 1, shape)`` smoothed, times ``alpha``.

    The smoothing is scikit-image's ``gaussian(..., sigma, mode='reflect', truncate=3)``, i.e.
    ``scipy.ndimage.gaussian_filter`` on the float64 draw, computed bit for bit by
    :func:`transforms.filters.gaussian_filter`.
    """
    field = gaussian_filter(rng.uniform(-1, 1, size=shape), sigma, mode="reflect", truncate=3)
    field *= alpha
    return field.astype(np.float32)


def elastic_transform(x: np.ndarray, rng: np.random.RandomState, *, alpha: float, sigma: float,
                      affine_jitter: float) -> np.ndarray:
    """A random affine warp followed by a smooth random displacement field.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Consumed by ``uniform(-affine_jitter, affine_jitter, (3, 2))``, then
        ``uniform(-1, 1, (H, W))`` for the column displacement, then ``uniform(-1, 1, (H, W))``
        for the row displacement: ``6 + 2*H*W`` uniforms.
    alpha : float
        Displacement scale in pixels (the smoothed field, roughly in [-1, 1] before smoothing,
        is multiplied by it).
    sigma : float
        Standard deviation in pixels of the Gaussian that smooths the field, >= 0 (0: no
        smoothing; with alpha 0 at 64/32 severity 1 the field is zero, but both arrays are drawn).
    affine_jitter : float
        Largest shift in pixels of each of the three affine anchor points.

    Returns
    -------
    numpy.ndarray
        float32, shape of ``x``, values in [0, 255].

    Notes
    -----
    The table's values are the reference's, which scales by 244 rather than 224. Sampling
    is bilinear with ``mode='reflect'`` as in today's scipy (>= 1.6), which differs from the
    scipy 1.0 of the original benchmark at the border only (algorithms.md, "Digital"). The reference samples
    the (H, W, 3) volume with integer channel coordinates; sampling each channel in 2-D gives the
    same values (the channel weights are exactly 1 and 0), which
    :func:`transforms.geometry.displace_reflect` does bit for bit, for all channels at once.
    """
    height, width = x.shape[:2]
    image = _random_affine(np.asarray(x, dtype=np.float32) / 255.0, rng, affine_jitter)
    dx = _displacement(rng, (height, width), alpha, sigma)
    dy = _displacement(rng, (height, width), alpha, sigma)
    return displace_reflect(image, dy, dx, to_255=True)


def pixelate(x: np.ndarray, rng: np.random.RandomState, *, factor: float) -> np.ndarray:
    """Downscale to ``int(N * factor)`` pixels a side with Pillow's BOX filter, then scale back.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (N, N, 3).
    rng : numpy.random.RandomState
        Not used (the corruption is deterministic); accepted for a uniform signature.
    factor : float
        Linear downscale factor in (0, 1].

    Returns
    -------
    numpy.ndarray
        uint8, shape (N, N, 3). Upsampling is Pillow's BOX, not NEAREST: they differ at 299
        severity 4 (74 -> 299), where BOX's source index floor((k + 0.5) n / N) hits a tie.
    """
    side = x.shape[0]
    small = int(side * factor)
    image = Image.fromarray(x).resize((small, small), Image.BOX)
    return np.asarray(image.resize((side, side), Image.BOX))


def jpeg_compression(x: np.ndarray, rng: np.random.RandomState, *, quality: int) -> np.ndarray:
    """Encode as a Pillow JPEG at ``quality`` (baseline, 4:2:0 chroma) and decode again.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Not used (the corruption is deterministic); accepted for a uniform signature.
    quality : int
        Pillow JPEG quality, 1..95.

    Returns
    -------
    numpy.ndarray
        uint8, shape of ``x``: the decoded pixels.
    """
    buffer = io.BytesIO()
    Image.fromarray(x).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return np.asarray(Image.open(buffer))
