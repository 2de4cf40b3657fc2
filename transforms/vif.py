"""Visual Information Fidelity as VCR measures it, and the visual change Delta v = 1 - VIF.

The variant is the wavelet-domain VIF of Sheikh and Bovik that VCR uses (``docs/reference/algorithms.md``,
"VIF"): OpenCV ``COLOR_RGB2GRAY`` of the uint8 images on the 0-255 scale, a pyrtools
steerable pyramid (4 scales, 6 orientations, the sp5 filters, ``reflect1`` edges), orientations
0 and 3 of every scale, Gaussian scale mixture on 3x3 blocks, sigma_n^2 = 0.1, per-band means and
``+1e-4`` pooling. Other "VIF"s (pixel-domain ``vifp``, sigma_n^2 = 0.4, inputs in [0, 1]) give
very different numbers and must not be substituted.

Written from that definition (pure NumPy on top of pyrtools' ``corrDn`` and sp5 filters, the
same calls ``SteerablePyramidSpace`` makes, for the two orientations used): local moments from
summed-area tables, reshape-based blocks. :class:`VifReference` keeps everything that depends on
the reference alone (its pyramid, local moments, GSM eigenvalues, ``s`` map and ``den_b``), so
measuring many distortions of one image costs about a fifth of separate :func:`vif` calls, with
the same bits.
"""
from __future__ import annotations

import math

import cv2
import numpy as np

from transforms.preprocess import BadInput

__all__ = ["PYRAMID_HEIGHT", "PYRAMID_ORDER", "PYRAMID_EDGES", "BANDS", "BLOCK", "NOISE_VARIANCE", "TOLERANCE",
           "POOL_OFFSET", "MIN_SIDE", "grey", "VifReference", "vif_grey", "vif", "delta_v"]

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
    """Raise :class:`~transforms.preprocess.BadInput` for an image too small for the pyramid (bad
    data: a build lists it among the failures)."""
    if min(shape[:2]) < MIN_SIDE:
        raise BadInput(f"VIF needs images of at least {MIN_SIDE}x{MIN_SIDE} pixels (the 4-scale steerable "
                         f"pyramid cannot be built below that); got {shape[0]}x{shape[1]}")


def _bands(image: np.ndarray) -> list[np.ndarray]:
    """The 8 pyramid bands of a grey image, in :data:`BANDS` order, float64.

    Exactly the bands of pyrtools ``SteerablePyramidSpace(image, height=4, order=5,
    edge_type='reflect1')`` (the same ``corrDn`` calls on the same filters), computing only the two
    orientations used and not the residual highpass.
    """
    from pyrtools.pyramids.c.wrapper import corrDn
    from pyrtools.pyramids.filters import parse_filter

    filters = parse_filter(f"sp{PYRAMID_ORDER}_filters", normalize=False)
    side = int(np.floor(np.sqrt(filters["bfilts"].shape[0])))
    orientations = sorted({o for _, o in BANDS})
    kernels = {o: filters["bfilts"][:, o].reshape(side, side).T for o in orientations}
    low = corrDn(image=np.asarray(image).astype(float), filt=filters["lo0filt"], edge_type=PYRAMID_EDGES)
    coefficients = {}
    for scale in range(PYRAMID_HEIGHT):
        for orientation in orientations:
            coefficients[scale, orientation] = np.asarray(corrDn(image=low, filt=kernels[orientation],
                                                                 edge_type=PYRAMID_EDGES), dtype=np.float64)
        low = corrDn(image=low, filt=filters["lofilt"], edge_type=PYRAMID_EDGES, step=(2, 2))
    return [coefficients[band] for band in BANDS]


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


class _ReferenceBand:
    """What one reference band contributes, whatever the distorted image: its cropped values, local
    moments, GSM eigenvalues, the s map and the den_b term."""

    def __init__(self, x: np.ndarray, level: int):
        self.window = 2 ** level + 1
        self.pad = (self.window - BLOCK) // 2
        height, width = (x.shape[0] // BLOCK) * BLOCK, (x.shape[1] // BLOCK) * BLOCK
        self.crop = (height, width)
        self.x = x = x[:height, :width]
        self.blocks = (height // BLOCK, width // BLOCK)
        self.mu = self.means(x)
        self.var = self.means(x * x) - self.mu * self.mu

        patches, _ = _block_vectors(x, 1)
        centred = patches - patches.mean(axis=0)
        covariance = centred.T @ centred / (patches.shape[0] - 1)
        eigenvalues, eigenvectors = np.linalg.eigh(covariance)
        self.eigenvalues = np.maximum(eigenvalues, TOLERANCE)
        inverse = (eigenvectors / self.eigenvalues) @ eigenvectors.T
        vectors, grid = _block_vectors(x, BLOCK)
        s = np.einsum("ni,ij,nj->n", vectors, inverse, vectors).reshape(grid) / (BLOCK * BLOCK)

        trim = math.ceil(((self.window - 1) / 2) / BLOCK)
        self.inner = (slice(trim, self.blocks[0] - trim), slice(trim, self.blocks[1] - trim))
        self.s = s[self.inner]
        self.lam = self.eigenvalues[:, None, None]
        self.den = float(np.log(1 + self.s * self.lam / NOISE_VARIANCE).mean(axis=(1, 2)).sum())

    def means(self, values: np.ndarray) -> np.ndarray:
        return _window_means(values, self.window, self.pad, self.blocks)

    def information(self, y: np.ndarray) -> float:
        """num_b of the distorted band ``y`` (same shape as the uncropped reference band)."""
        x, (height, width) = self.x, self.crop
        y = y[:height, :width]
        var_x = self.var.copy()
        mu_y = self.means(y)
        var_y = self.means(y * y) - mu_y * mu_y
        cov = self.means(x * y) - self.mu * mu_y
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

        gain, var_v = gain[self.inner], var_v[self.inner]
        return float(np.log(1 + gain * gain * self.s * self.lam / (var_v + NOISE_VARIANCE)).mean(axis=(1, 2)).sum())


class VifReference:
    """VCR's VIF against one reference image, its pyramid and statistics computed once.

    ``VifReference(reference)(distorted)`` equals ``vif(reference, distorted)`` bit for bit, for
    any number of distorted images: a build measures every draw of an image this way.

    Parameters
    ----------
    reference : numpy.ndarray
        uint8 RGB (H, W, 3), H and W >= :data:`MIN_SIDE`; or, with ``grey_input=True``, a 2-D
        image on the 0-255 scale.
    """

    def __init__(self, reference: np.ndarray, grey_input: bool = False):
        if grey_input:
            reference = np.asarray(reference)
            if reference.ndim != 2:
                raise ValueError(f"a grey image must be 2-D; got shape {reference.shape}")
            self._grey = reference
        else:
            self._grey = grey(_check_rgb(reference, "reference"))
        self.shape = np.asarray(reference).shape
        _check_size(self.shape)
        self._bands = [_ReferenceBand(x, math.ceil((i + 1) / 2)) for i, x in enumerate(_bands(self._grey))]

    def grey_information(self, distorted_grey: np.ndarray) -> tuple[list, list]:
        """Per band ``num_b + 1e-4`` and ``den_b + 1e-4`` of a grey distorted image."""
        distorted_grey = np.asarray(distorted_grey)
        if distorted_grey.shape != self._grey.shape:
            raise ValueError(f"reference and distorted differ in shape: {self._grey.shape} vs {distorted_grey.shape}")
        nums = [band.information(y) + POOL_OFFSET for band, y in zip(self._bands, _bands(distorted_grey))]
        return nums, [band.den + POOL_OFFSET for band in self._bands]

    def __call__(self, distorted: np.ndarray) -> float:
        """VIF of a uint8 RGB ``distorted`` image of the reference's shape."""
        _check_rgb(distorted, "distorted")
        if distorted.shape != self.shape:
            raise ValueError(f"reference and distorted differ in shape: {self.shape} vs {distorted.shape}")
        nums, dens = self.grey_information(grey(distorted))
        return float(np.mean(nums) / np.mean(dens))


def vif_grey(reference: np.ndarray, distorted: np.ndarray, *, full: bool = False):
    """VCR's VIF of two grey images on the 0-255 scale (2-D arrays of the same shape).

    With ``full=True`` also returns the per-band ``num_b + 1e-4`` and ``den_b + 1e-4`` lists, in
    :data:`BANDS` order (for debugging one band at a time).
    """
    reference, distorted = np.asarray(reference), np.asarray(distorted)
    if reference.ndim != 2 or reference.shape != distorted.shape:
        raise ValueError(f"grey images must be 2-D and of one shape; got {reference.shape} and {distorted.shape}")
    nums, dens = VifReference(reference, grey_input=True).grey_information(distorted)
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

    Examples
    --------
    >>> import numpy as np, transforms
    >>> rng = np.random.RandomState(0)
    >>> reference = rng.randint(0, 256, size=(72, 72, 3)).astype(np.uint8)  # 72 is the smallest side
    >>> round(transforms.vif(reference, reference), 6)
    1.0
    >>> noisy = np.clip(reference + rng.normal(0, 20, reference.shape), 0, 255).astype(np.uint8)
    >>> 0 < transforms.vif(reference, noisy) < 1
    True
    """
    _check_rgb(reference, "reference")
    _check_rgb(distorted, "distorted")
    if reference.shape != distorted.shape:
        raise ValueError(f"reference and distorted differ in shape: {reference.shape} vs {distorted.shape}")
    return VifReference(reference)(distorted)


def delta_v(reference: np.ndarray, distorted: np.ndarray) -> float:
    """VCR's visual change ``1 - vif(reference, distorted)`` (0: nothing lost; < 1 always).

    Takes the same arguments as :func:`vif`.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> x = np.random.RandomState(0).randint(0, 256, size=(72, 72, 3)).astype(np.uint8)
    >>> abs(transforms.delta_v(x, x)) < 1e-12
    True
    >>> dark = (x // 2).astype(np.uint8)
    >>> round(transforms.delta_v(x, dark), 4) == round(1 - transforms.vif(x, dark), 4)
    True
    """
    return 1.0 - vif(reference, distorted)
