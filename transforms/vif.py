"""Visual Information Fidelity as VCR measures it, and the visual change Delta v = 1 - VIF.

The variant is the wavelet-domain VIF of Sheikh and Bovik that VCR uses (``../shared/spec/vcr.md``
section 2.4): OpenCV ``COLOR_RGB2GRAY`` of the uint8 images on the 0-255 scale, a pyrtools
steerable pyramid (4 scales, 6 orientations, the sp5 filters, ``reflect1`` edges), orientations
0 and 3 of every scale, Gaussian scale mixture on 3x3 blocks, sigma_n^2 = 0.1, per-band means and
``+1e-4`` pooling. Other "VIF"s (pixel-domain ``vifp``, sigma_n^2 = 0.4, inputs in [0, 1]) give
very different numbers and must not be substituted.

Written from that definition (pure NumPy on top of pyrtools): local moments from summed-area
tables, reshape-based blocks.
"""
from __future__ import annotations

import math

import cv2
import numpy as np

PYRAMID_HEIGHT = 4
"""Scales of the steerable pyramid."""
PYRAMID_ORDER = 5
"""Order of the steerable filters: 6 orientations (sp5)."""
PYRAMID_EDGES = "reflect1"
"""pyrtools edge handling: reflect about the edge sample."""
BANDS = ((3, 3), (3, 0), (2, 3), (2, 0), (1, 3), (1, 0), (0, 3), (0, 0))
"""(scale, orientation) of the bands used, in processing order (coarsest first)."""
BLOCK = 3
"""Side of the GSM blocks (pixels of a band)."""
NOISE_VARIANCE = 0.1
"""sigma_n^2 of the visual noise, absolute on the 0-255 scale."""
TOLERANCE = 1e-15
"""Floor of variances and eigenvalues."""
POOL_OFFSET = 1e-4
"""Added to every band's numerator and denominator before pooling."""
MIN_SIDE = 72
"""Smallest image side (pixels) for which pyrtools builds the 4-scale sp5 pyramid."""


def grey(image: np.ndarray) -> np.ndarray:
    """OpenCV ``COLOR_RGB2GRAY`` of a uint8 RGB image: uint8 (H, W), ~0.299 R + 0.587 G + 0.114 B."""
    return cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY)


def _check_rgb(image, name: str) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
        raise ValueError(f"{name} must be a uint8 RGB array of shape (H, W, 3); got {got}")
    return image


def _check_size(shape) -> None:
    if min(shape[:2]) < MIN_SIDE:
        raise ValueError(f"VIF needs images of at least {MIN_SIDE}x{MIN_SIDE} pixels (the 4-scale steerable "
                         f"pyramid cannot be built below that); got {shape[0]}x{shape[1]}")


def _bands(image: np.ndarray) -> list[np.ndarray]:
    """The 8 pyramid bands of a grey image, in :data:`BANDS` order, float64."""
    from pyrtools.pyramids import SteerablePyramidSpace

    pyramid = SteerablePyramidSpace(image.astype(np.float64), height=PYRAMID_HEIGHT, order=PYRAMID_ORDER,
                                    edge_type=PYRAMID_EDGES)
    return [np.asarray(pyramid.pyr_coeffs[band], dtype=np.float64) for band in BANDS]


def _window_means(values: np.ndarray, window: int, pad: int, blocks: tuple) -> np.ndarray:
    """Mean of ``values`` (mirror-padded by ``pad``) over the ``window`` x ``window`` square centred on
    each non-overlapping 3x3 block; shape ``blocks``."""
    padded = np.pad(values, pad, mode="reflect")
    table = np.zeros((padded.shape[0] + 1, padded.shape[1] + 1))
    table[1:, 1:] = padded.cumsum(axis=0).cumsum(axis=1)
    rows = np.arange(blocks[0]) * BLOCK
    cols = np.arange(blocks[1]) * BLOCK
    top, left = rows[:, None], cols[None, :]
    total = (table[top + window, left + window] - table[top, left + window]
             - table[top + window, left] + table[top, left])
    return total / (window * window)


def _block_vectors(band: np.ndarray, stride: int) -> np.ndarray:
    """Every 3x3 patch at ``stride`` (1: all patches; 3: the blocks), as rows of 9 values (row-major)."""
    patches = np.lib.stride_tricks.sliding_window_view(band, (BLOCK, BLOCK))[::stride, ::stride]
    return patches.reshape(-1, BLOCK * BLOCK), patches.shape[:2]


def _band_information(x: np.ndarray, y: np.ndarray, level: int) -> tuple[float, float]:
    """(num_b, den_b) of one band pair (reference ``x``, distorted ``y``) at level 1..4."""
    window = 2 ** level + 1
    pad = (window - BLOCK) // 2
    height, width = (x.shape[0] // BLOCK) * BLOCK, (x.shape[1] // BLOCK) * BLOCK
    x, y = x[:height, :width], y[:height, :width]
    blocks = (height // BLOCK, width // BLOCK)

    mu_x, mu_y = _window_means(x, window, pad, blocks), _window_means(y, window, pad, blocks)
    var_x = _window_means(x * x, window, pad, blocks) - mu_x * mu_x
    var_y = _window_means(y * y, window, pad, blocks) - mu_y * mu_y
    cov = _window_means(x * y, window, pad, blocks) - mu_x * mu_y
    negative_x, negative_y = var_x < 0, var_y < 0
    var_x[negative_x], cov[negative_x] = 0.0, 0.0
    var_y[negative_y], cov[negative_y] = 0.0, 0.0

    gain = cov / (var_x + TOLERANCE)
    var_v = var_y - gain * cov
    flat_x = var_x < TOLERANCE
    gain[flat_x], var_v[flat_x], var_x[flat_x] = 0.0, var_y[flat_x], 0.0
    flat_y = var_y < TOLERANCE
    gain[flat_y], var_v[flat_y] = 0.0, 0.0
    inverted = gain < 0
    var_v[inverted], gain[inverted] = var_y[inverted], 0.0
    var_v[var_v < TOLERANCE] = TOLERANCE

    patches, _ = _block_vectors(x, 1)
    centred = patches - patches.mean(axis=0)
    covariance = centred.T @ centred / (patches.shape[0] - 1)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    eigenvalues = np.maximum(eigenvalues, TOLERANCE)
    inverse = (eigenvectors / eigenvalues) @ eigenvectors.T
    vectors, grid = _block_vectors(x, BLOCK)
    s = np.einsum("ni,ij,nj->n", vectors, inverse, vectors).reshape(grid) / (BLOCK * BLOCK)

    trim = math.ceil(((window - 1) / 2) / BLOCK)
    inner = (slice(trim, blocks[0] - trim), slice(trim, blocks[1] - trim))
    gain, var_v, s = gain[inner], var_v[inner], s[inner]
    lam = eigenvalues[:, None, None]
    num = np.log(1 + gain * gain * s * lam / (var_v + NOISE_VARIANCE)).mean(axis=(1, 2)).sum()
    den = np.log(1 + s * lam / NOISE_VARIANCE).mean(axis=(1, 2)).sum()
    return float(num), float(den)


def vif_grey(reference: np.ndarray, distorted: np.ndarray, *, full: bool = False):
    """VCR's VIF of two grey images on the 0-255 scale (2-D arrays of the same shape).

    With ``full=True`` also returns the per-band ``num_b + 1e-4`` and ``den_b + 1e-4`` lists, in
    :data:`BANDS` order (for debugging against the spec's section 6.2).
    """
    reference, distorted = np.asarray(reference), np.asarray(distorted)
    if reference.ndim != 2 or reference.shape != distorted.shape:
        raise ValueError(f"grey images must be 2-D and of one shape; got {reference.shape} and {distorted.shape}")
    _check_size(reference.shape)
    nums, dens = [], []
    for index, (x, y) in enumerate(zip(_bands(reference), _bands(distorted))):
        num, den = _band_information(x, y, math.ceil((index + 1) / 2))
        nums.append(num + POOL_OFFSET)
        dens.append(den + POOL_OFFSET)
    value = float(np.mean(nums) / np.mean(dens))
    return (value, nums, dens) if full else value


def vif(reference: np.ndarray, distorted: np.ndarray) -> float:
    """VCR's Visual Information Fidelity of ``distorted`` with respect to ``reference``.

    Parameters
    ----------
    reference, distorted : numpy.ndarray
        uint8 RGB images of the same shape (H, W, 3), H and W >= :data:`MIN_SIDE` (72). Both are
        converted with OpenCV ``COLOR_RGB2GRAY`` and used on the 0-255 scale. A distorted image
        computed in float must be truncated to uint8 first (``astype(np.uint8)``), as VCR does.

    Returns
    -------
    float
        VIF > 0: 1 for identical images, lower for information lost, above 1 for contrast
        enhancement.

    Raises
    ------
    ValueError
        On a dtype, shape or size the measure does not take (the message says which).
    """
    _check_rgb(reference, "reference")
    _check_rgb(distorted, "distorted")
    if reference.shape != distorted.shape:
        raise ValueError(f"reference and distorted differ in shape: {reference.shape} vs {distorted.shape}")
    _check_size(reference.shape)
    return vif_grey(grey(reference), grey(distorted))


def delta_v(reference: np.ndarray, distorted: np.ndarray) -> float:
    """VCR's visual change ``1 - vif(reference, distorted)`` (0: nothing lost; < 1 always).

    Takes the same arguments as :func:`vif`.
    """
    return 1.0 - vif(reference, distorted)
