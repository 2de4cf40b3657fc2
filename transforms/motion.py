"""ImageMagick 6 motion blur (``MagickMotionBlurImage``) re-implemented in NumPy.

The reference (``hendrycks/robustness``) blurs through Wand/ImageMagick. This module
reproduces ImageMagick 6.9 Q16 (non-HDRI) bit for bit on 8-bit images (spec
``imagenet_c.md`` section 3.4): a one-sided half-Gaussian kernel laid along the
direction ``angle``, edge-replicated borders, double accumulation on 16-bit
quantum values, then the Q16 -> 8-bit conversion of the PNG writer.
"""
from __future__ import annotations

import math

import numpy as np

_SQRT_2PI = 2.50662827463100024161235523934010416269302368164062  # ImageMagick's MagickSQ2PI
_Q16_PER_8BIT = 257  # 8-bit value v is the 16-bit quantum 257 * v
_QUANTUM_RANGE = 65535


def motion_kernel(radius: float, sigma: float, angle: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights and pixel offsets of ImageMagick's motion-blur kernel.

    Parameters
    ----------
    radius : float
        Blur radius in pixels, > 0. The kernel has ``2 * ceil(radius) + 1`` taps.
    sigma : float
        Standard deviation of the half-Gaussian, in pixels, > 0.
    angle : float
        Direction of the blur in degrees (0 = towards +x, 90 = towards +y, i.e. down).

    Returns
    -------
    weights : numpy.ndarray
        float64, shape (taps,): ``exp(-i**2 / (2 sigma**2))`` for i = 0..taps-1, normalised
        to sum 1 (the peak is at offset 0).
    dx, dy : numpy.ndarray
        int64, shape (taps,): column and row offset of each tap,
        ``ceil(i * cos(angle) - 0.5)`` and ``ceil(i * sin(angle) - 0.5)`` as ImageMagick computes them.
    """
    if not radius > 0:
        raise ValueError(f"radius must be > 0 pixels, got {radius!r}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0 pixels, got {sigma!r}")
    taps = int(2 * math.ceil(radius) + 1)
    # Same scalar operations, in the same order, as MotionBlurImageChannel (libm via math).
    gauss = [math.exp(-(float(i) * i) / (2.0 * sigma * sigma)) / (_SQRT_2PI * sigma) for i in range(taps)]
    total = 0.0
    for g in gauss:
        total += g
    weights = np.array([g / total for g in gauss])
    theta = math.pi * angle / 180.0
    along_x = taps * math.cos(theta)
    along_y = taps * math.sin(theta)
    length = math.hypot(along_y, along_x)
    dx = np.array([math.ceil(i * along_x / length - 0.5) for i in range(taps)], dtype=np.int64)
    dy = np.array([math.ceil(i * along_y / length - 0.5) for i in range(taps)], dtype=np.int64)
    return weights, dx, dy


def magick_motion_blur(image: np.ndarray, radius: float, sigma: float, angle: float) -> np.ndarray:
    """``MagickMotionBlurImage(radius, sigma, angle)`` of ImageMagick 6 Q16 on an 8-bit image.

    Each output pixel is the weighted sum of the input pixels at the kernel offsets of
    :func:`motion_kernel` (one-sided: only pixels lying in the ``angle`` direction contribute),
    with coordinates clamped to the image (ImageMagick's default Edge virtual pixels). Channels
    are blurred independently.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W) or (H, W, C).
    radius, sigma, angle : float
        See :func:`motion_kernel` (pixels, pixels, degrees).

    Returns
    -------
    numpy.ndarray
        uint8, same shape as ``image``: what ImageMagick writes back to an 8-bit PNG.
    """
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError("image must be a uint8 array of shape (H, W) or (H, W, C), got "
                         f"{getattr(image, 'dtype', type(image))} {getattr(image, 'shape', '')}")
    weights, dx, dy = motion_kernel(radius, sigma, angle)
    height, width = image.shape[:2]
    # Replicating the edge by the longest offset makes every tap a shifted window.
    pad = int(max(np.abs(dx).max(), np.abs(dy).max()))
    widths = ((pad, pad), (pad, pad)) + ((0, 0),) * (image.ndim - 2)
    quantum = np.pad(image, widths, mode="edge").astype(np.float64) * _Q16_PER_8BIT
    total = np.zeros(image.shape, dtype=np.float64)
    term = np.empty_like(total)
    for weight, col, row in zip(weights, pad + dx, pad + dy):  # taps in ImageMagick's order
        np.multiply(quantum[row:row + height, col:col + width], weight, out=term)
        total += term
    q16 = np.clip(np.floor(total + 0.5), 0, _QUANTUM_RANGE)
    return np.floor(q16 / _Q16_PER_8BIT).astype(np.uint8)
