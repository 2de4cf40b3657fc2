"""Blur corruptions: defocus, glass, motion, zoom and (extra) Gaussian blur.

Each function takes the NxNx3 uint8 (N the edition's side) RGB image ``x`` and a ``numpy.random.RandomState``
and returns what the reference (``hendrycks/robustness`` ``make_imagenet_c.py``) hands to
``np.uint8`` (``docs/reference/algorithms.md``, "Blur"); :func:`transforms.corrupt` applies
that truncation. Keyword parameters come from the edition's table (:mod:`schemas.editions`).
"""
from __future__ import annotations

import functools

import cv2
from .jit import numba
import numpy as np

from .filters import gaussian_filter
from .geometry import zoom_sum
from .motion import magick_motion_blur
from .units import clip_to_255, to_unit

__all__ = ["gaussian_rgb", "disk_kernel", "defocus_blur", "displace_pixels", "unit_to_uint8", "glass_pixel_count",
           "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur"]

_DISK_GRID_RADIUS = 8  # disks of radius <= 8 are drawn on a 17x17 grid (algorithms.md, "Defocus disk")


def gaussian_rgb(u: np.ndarray, sigma: float) -> np.ndarray:
    """scikit-image's ``gaussian(u, sigma, channel_axis=-1)`` on a float64 (H, W, C) image.

    That is ``scipy.ndimage.gaussian_filter`` with sigma (sigma, sigma, 0), mode 'nearest' and
    truncate 4, computed bit for bit by :func:`transforms.filters.gaussian_filter`.
    """
    return gaussian_filter(u, (sigma, sigma, 0), mode="nearest", truncate=4.0)


def disk_kernel(radius: int, alias_blur: float) -> np.ndarray:
    """The reference's anti-aliased disk kernel for defocus blur (algorithms.md, "Defocus disk").

    Parameters
    ----------
    radius : float
        Disk radius in pixels, >= 0 (ImageNet-C uses 3..10; the 64 and 32 editions use radii below
        1, a single tap; VCR's continuous range starts at 0, where the disk is the centre pixel alone).
    alias_blur : float
        Sigma (pixels, >= 0) of the Gaussian that smooths the disk's edge
        (``cv2.GaussianBlur``, 3x3 for radius <= 8, else 5x5; 0 lets OpenCV derive the sigma
        from the kernel size, as VCR's range allows).

    Returns
    -------
    numpy.ndarray
        float32, shape (17, 17) for radius <= 8, else (2 radius + 1, 2 radius + 1). The disk
        is normalised before the smoothing, so a disk that reaches the grid's edge (radius 8
        or > 8) sums to slightly more than 1 (the border is reflected), as in the reference.
    """
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0 pixels, got {radius!r}")
    if not alias_blur >= 0:
        raise ValueError(f"alias_blur must be >= 0, got {alias_blur!r}")
    if radius <= _DISK_GRID_RADIUS:
        grid, ksize = np.arange(-_DISK_GRID_RADIUS, _DISK_GRID_RADIUS + 1), (3, 3)
    else:
        grid, ksize = np.arange(-radius, radius + 1), (5, 5)  # integer radii (224, 299); VCR: as VCR does
    cols, rows = np.meshgrid(grid, grid)
    disk = np.array(cols ** 2 + rows ** 2 <= radius ** 2, dtype=np.float32)
    disk /= np.sum(disk)
    return cv2.GaussianBlur(disk, ksize=ksize, sigmaX=alias_blur)


@functools.lru_cache(maxsize=64)
def _table_disk_kernel(radius, alias_blur) -> np.ndarray:
    """:func:`disk_kernel`, kept per (radius, alias_blur) (the tables' few values), read-only."""
    kernel = disk_kernel(radius, alias_blur)
    kernel.flags.writeable = False
    return kernel


def defocus_blur(x: np.ndarray, rng: np.random.RandomState, *, radius: int, alias_blur: float) -> np.ndarray:
    """Defocus: correlate each channel with an anti-aliased disk (algorithms.md, "Blur"). No draws.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 RGB image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Unused (the signature is shared by every corruption).
    radius, alias_blur
        See :func:`disk_kernel`.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].
    """
    # cv2.filter2D: correlation, centred anchor, BORDER_REFLECT_101. The reference filters each
    # channel on its own; OpenCV filters the channels of a 3-channel image independently with
    # the same arithmetic, so one call gives the same values.
    return clip_to_255(cv2.filter2D(to_unit(x), -1, _table_disk_kernel(radius, alias_blur)))


@numba.njit(cache=True)
def displace_pixels(image, shifts, max_delta, iterations):
    """In place: the reference's glass-blur "swap", which copies y[h+dy, w+dx] into y[h, w].

    Visits rows H-d..d+1 and, in each row, columns W-d..d+1, both descending, ``iterations``
    times; ``shifts`` holds one (dx, dy) pair per visit, in visiting order.
    """
    height, width, depth = image.shape
    n = 0
    for _ in range(iterations):
        for h in range(height - max_delta, max_delta, -1):
            for w in range(width - max_delta, max_delta, -1):
                dx, dy = shifts[n, 0], shifts[n, 1]
                n += 1
                for c in range(depth):
                    image[h, w, c] = image[h + dy, w + dx, c]


def unit_to_uint8(u: np.ndarray) -> np.ndarray:
    """``(u * 255).astype(np.uint8)`` of a float64 image in [0, 1], in one pass.

    Parameters
    ----------
    u : numpy.ndarray
        float64, values in [0, 1] (up to rounding: every ``u * 255`` in [0, 256)), any shape.

    Returns
    -------
    numpy.ndarray
        uint8, shape of ``u``: each product truncated toward zero, as NumPy's cast does.
    """
    u = np.ascontiguousarray(u, dtype=np.float64)
    out = np.empty(u.shape, dtype=np.uint8)
    _scale_to_uint8(u.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True)
def _scale_to_uint8(values, out):
    """``out[m] = uint8(values[m] * 255.0)`` (truncation of values in [0, 256))."""
    for m in range(values.shape[0]):
        out[m] = np.uint8(values[m] * 255.0)


def glass_pixel_count(shape: tuple, max_delta: int, iterations: int) -> int:
    """Number of pixel visits (= (dx, dy) draws) of glass blur on an image of ``shape`` (H, W, ...)."""
    return iterations * max(shape[0] - 2 * max_delta, 0) * max(shape[1] - 2 * max_delta, 0)


def glass_blur(x: np.ndarray, rng: np.random.RandomState, *, sigma: float, max_delta: int,
               iterations: int) -> np.ndarray:
    """Glass: Gaussian blur, local pixel displacement, Gaussian blur again (algorithms.md, "Blur").

    Parameters
    ----------
    x : numpy.ndarray
        uint8 RGB image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Draws ``randint(-max_delta, max_delta, size=(N, 2))`` (dx, dy per visited pixel),
        N = ``glass_pixel_count(x.shape, max_delta, iterations)``; this equals the reference's
        N calls of ``randint(-max_delta, max_delta, size=2)``.
    sigma : float
        Gaussian sigma in pixels, > 0 (scikit-image ``gaussian``, mode 'nearest', truncate 4).
    max_delta : int
        Displacements lie in [-max_delta, max_delta - 1] pixels, >= 1.
    iterations : int
        Number of displacement passes, >= 1.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].
    """
    if max_delta < 1 or iterations < 1:
        raise ValueError(f"max_delta and iterations must be >= 1, got {max_delta!r}, {iterations!r}")
    blurred = gaussian_rgb(to_unit(x), sigma)
    shifts = rng.randint(-max_delta, max_delta, size=(glass_pixel_count(x.shape, max_delta, iterations), 2))
    if blurred.shape[2] != 3:
        image = unit_to_uint8(blurred)
        displace_pixels(image, shifts, max_delta, iterations)
        return clip_to_255(gaussian_rgb(to_unit(image), sigma))
    # Each pixel's three bytes and a zero in one 32-bit word, so that a swap moves one word.
    packed = np.empty(blurred.shape[:2] + (4,), dtype=np.uint8)
    _scale_to_words(blurred.reshape(-1), packed.reshape(-1))
    _displace_words(packed.view(np.uint32)[..., 0], shifts, max_delta, iterations)
    unit = np.empty(blurred.shape)
    _unpack_unit(packed.reshape(-1), _UNIT_TABLE, unit.reshape(-1))
    return clip_to_255(gaussian_rgb(unit, sigma))


#: ``v / 255.`` for every uint8 value v (:func:`transforms.units.to_unit`'s values).
_UNIT_TABLE = to_unit(np.arange(256, dtype=np.uint8))
_UNIT_TABLE.flags.writeable = False


@numba.njit(cache=True)
def _scale_to_words(u, packed):
    """:func:`unit_to_uint8` of a flat RGB image into bytes ``4 m .. 4 m + 2`` of pixel m; byte ``4 m + 3`` is 0."""
    for m in range(u.shape[0] // 3):
        packed[4 * m] = np.uint8(u[3 * m] * 255.0)
        packed[4 * m + 1] = np.uint8(u[3 * m + 1] * 255.0)
        packed[4 * m + 2] = np.uint8(u[3 * m + 2] * 255.0)
        packed[4 * m + 3] = 0


@numba.njit(cache=True)
def _displace_words(image, shifts, max_delta, iterations):
    """:func:`displace_pixels` of an (H, W) image whose pixels are single words: the same visits and copies."""
    height, width = image.shape
    n = 0
    for _ in range(iterations):
        for h in range(height - max_delta, max_delta, -1):
            row = image[h]
            for w in range(width - max_delta, max_delta, -1):
                dx, dy = shifts[n, 0], shifts[n, 1]
                n += 1
                row[w] = image[h + dy, w + dx]


@numba.njit(cache=True)
def _unpack_unit(packed, table, out):
    """``out[3 m + k] = table[packed[4 m + k]]``, k < 3: the pixels' bytes back as floats (:func:`to_unit`)."""
    for m in range(out.shape[0] // 3):
        out[3 * m] = table[packed[4 * m]]
        out[3 * m + 1] = table[packed[4 * m + 1]]
        out[3 * m + 2] = table[packed[4 * m + 2]]


def motion_blur(x: np.ndarray, rng: np.random.RandomState, *, radius: float, sigma: float) -> np.ndarray:
    """Motion: ImageMagick's one-sided motion blur at a random angle (algorithms.md, "Blur").

    Parameters
    ----------
    x : numpy.ndarray
        uint8 RGB image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Draws ``uniform(-45, 45)``: the blur direction in degrees.
    radius, sigma : float
        Kernel radius and sigma in pixels (see :func:`transforms.motion.magick_motion_blur`).

    Returns
    -------
    numpy.ndarray
        uint8, shape (H, W, 3). (The reference's PNG -> ImageMagick -> PNG round trip blurs
        each channel independently, so a grey PNG gives the same pixels.)
    """
    angle = rng.uniform(-45, 45)
    return magick_motion_blur(np.asarray(x), radius, sigma, angle)


def zoom_blur(x: np.ndarray, rng: np.random.RandomState, *, factors) -> np.ndarray:
    """Zoom: average of the image and its centre zooms by each factor, in float32 (algorithms.md). No draws.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 RGB image, shape (H, H, 3).
    rng : numpy.random.RandomState
        Unused.
    factors : sequence of float
        Zoom factors, each >= 1 (see :func:`transforms.geometry.clipped_zoom`).

    Returns
    -------
    numpy.ndarray
        float32, shape (H, H, 3), values in [0, 255].
    """
    u = to_unit(x, np.float32)
    total = zoom_sum(u, factors)  # the reference's running sum of clipped_zoom(u, factor), in one pass
    _average_to_255(u.reshape(-1), total.reshape(-1), np.float32(len(factors) + 1))
    return total


@numba.njit(cache=True)
def _average_to_255(u, total, count):
    """In place on ``total``, per float32 value: ``clip((u + total) / count, 0, 1) * 255``.

    The reference's float32 NumPy expression ``np.clip((x + out) / (len(factors) + 1), 0, 1) * 255``
    in one pass: each step is one float32 operation, as NumPy does it (the Python integers are
    float32 scalars there).
    """
    for m in range(total.shape[0]):
        value = (u[m] + total[m]) / count
        total[m] = min(max(value, np.float32(0.0)), np.float32(1.0)) * np.float32(255.0)


def gaussian_blur(x: np.ndarray, rng: np.random.RandomState, *, sigma: float) -> np.ndarray:
    """Gaussian blur of each channel (algorithms.md, "Blur"). No draws.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 RGB image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Unused.
    sigma : float
        Gaussian sigma in pixels, > 0 (scikit-image ``gaussian``, mode 'nearest', truncate 4).

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].
    """
    return clip_to_255(gaussian_rgb(to_unit(x), sigma))
