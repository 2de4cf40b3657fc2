"""ImageMagick 6 motion blur (``MagickMotionBlurImage``) re-implemented in NumPy.

The reference (``hendrycks/robustness``) blurs through Wand/ImageMagick. This module
reproduces ImageMagick 6.9 Q16 (non-HDRI) bit for bit on 8-bit images (``docs/reference/algorithms.md``,
"Motion blur (ImageMagick)"): a one-sided half-Gaussian kernel laid along the
direction ``angle``, edge-replicated borders, double accumulation on 16-bit
quantum values, then the Q16 -> 8-bit conversion of the PNG writer.
"""
from __future__ import annotations

import math

import cv2
from .jit import numba
import numpy as np

from .filters import extended_rows

__all__ = ["motion_kernel", "magick_motion_blur"]

_SQRT_2PI = 2.50662827463100024161235523934010416269302368164062  # ImageMagick's MagickSQ2PI
_Q16_PER_8BIT = 257.0  # 8-bit value v is the 16-bit quantum 257 * v
_QUANTUM_RANGE = 65535.0


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
    channels = image.shape[2] if image.ndim == 3 else 1
    # Replicating the edge by the longest offset makes every tap a shifted window: numpy.pad's
    # mode 'edge' (extended_rows' index table for scipy's 'nearest'), copied by OpenCV's
    # BORDER_REPLICATE (the same values) where it takes the array as an image, else in two takes.
    pad = int(max(np.abs(dx).max(), np.abs(dy).max()))
    if image.flags.c_contiguous and channels <= 4:
        padded = cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
    else:
        padded = np.take(np.take(image, extended_rows(height, pad, "nearest"), axis=0),
                         extended_rows(width, pad, "nearest"), axis=1)
    # Each 8-bit value as its 16-bit quantum 257 v, exact in float32 (at most 65535 < 2^24), so that
    # the sums read it instead of converting and scaling the byte again at every tap.
    quanta = padded.reshape(height + 2 * pad, -1).astype(np.float32)
    quanta *= np.float32(_Q16_PER_8BIT)
    out = np.empty((height, width * channels), dtype=np.uint8)
    _blur_rows(quanta, weights, pad + dy, (pad + dx) * channels, out)
    return out.reshape(image.shape)


@numba.njit(cache=True)
def _blur_rows(padded, weights, rows, starts, out):
    """Row by row: ``sum_k (257 v[rows[k] + h, starts[k] + i]) * w[k]`` in tap order, then 8 bits.

    ``padded`` holds the quanta ``257 v`` (float32, exact) of the edge-replicated image with
    channels flattened into the row; the taps
    are added one after another from 0 (ImageMagick's double accumulation), four per pass over
    the row after ``taps % 4`` single ones. The sum is rounded to a Q16 quantum, clamped, and
    divided by 257 and floored, as the PNG writer does.
    """
    length = out.shape[1]
    total = np.empty(length)
    taps = weights.shape[0]
    for h in range(out.shape[0]):
        total[:] = 0.0
        k = 0
        while k < taps % 4:
            weight, src = weights[k], padded[h + rows[k], starts[k]:starts[k] + length]
            for i in range(length):
                total[i] += src[i] * weight
            k += 1
        while k < taps:
            w0, w1, w2, w3 = weights[k], weights[k + 1], weights[k + 2], weights[k + 3]
            s0 = padded[h + rows[k], starts[k]:starts[k] + length]
            s1 = padded[h + rows[k + 1], starts[k + 1]:starts[k + 1] + length]
            s2 = padded[h + rows[k + 2], starts[k + 2]:starts[k + 2] + length]
            s3 = padded[h + rows[k + 3], starts[k + 3]:starts[k + 3] + length]
            for i in range(length):
                t = total[i]
                t += s0[i] * w0
                t += s1[i] * w1
                t += s2[i] * w2
                t += s3[i] * w3
                total[i] = t
            k += 4
        for i in range(length):
            quantum = min(max(np.floor(total[i] + 0.5), 0.0), _QUANTUM_RANGE)
            out[h, i] = np.uint8(np.floor(quantum / _Q16_PER_8BIT))
