"""Noise corruptions: Gaussian, shot (Poisson), impulse (salt and pepper) and speckle.

Each function takes the NxNx3 uint8 (N the edition's side) image and a ``numpy.random.RandomState`` and returns
float64 values in [0, 255], which :func:`transforms.corrupt` truncates to uint8. The draws are
those of the reference (``docs/reference/algorithms.md``, "Noise" and "Random streams"): same methods,
shapes and order.
"""
from __future__ import annotations

from .jit import numba
import numpy as np

from .units import clip_to_255, to_unit

__all__ = ["gaussian_noise", "shot_noise", "salt_and_pepper_masks", "impulse_noise", "speckle_noise"]


def gaussian_noise(x: np.ndarray, rng: np.random.RandomState, *, sigma: float) -> np.ndarray:
    """Add zero-mean Gaussian noise to every channel value.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Consumed by one ``normal(0, sigma, x.shape)`` draw.
    sigma : float
        Standard deviation of the noise, in units of the full range (1 = 255 levels); > 0.

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255]: ``clip(x/255 + n, 0, 1) * 255``.
    """
    u = to_unit(x)
    u += rng.normal(size=x.shape, scale=sigma)
    return clip_to_255(u)


def shot_noise(x: np.ndarray, rng: np.random.RandomState, *, scale: float) -> np.ndarray:
    """Replace each channel value by a Poisson photon count, then rescale.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Consumed by one ``poisson(lam, x.shape)`` draw with ``lam = x/255 * scale`` (a value of 0
        draws nothing, as in NumPy's legacy algorithm).
    scale : float
        Photons at full intensity; smaller means noisier. > 0.

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255]: ``clip(poisson(x/255 * scale) / scale, 0, 1) * 255``.
    """
    counts = rng.poisson(to_unit(x) * scale)
    if counts.dtype != np.int64 or not counts.flags.c_contiguous:
        return clip_to_255(counts / scale)
    out = np.empty(counts.shape)
    _rescale_counts(counts.reshape(-1), float(scale), out.reshape(-1))
    return out


@numba.njit(cache=True)
def _rescale_counts(counts, scale, out):
    """Per value, ``clip(count / scale, 0, 1) * 255`` in float64: NumPy's division, clip and product."""
    for m in range(counts.shape[0]):
        v = counts[m] / scale
        v = 0.0 if v < 0.0 else v
        v = 1.0 if v > 1.0 else v
        out[m] = v * 255.0


def salt_and_pepper_masks(shape: tuple, rng: np.random.RandomState, amount: float,
                          salt_vs_pepper: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """The salt and pepper masks of scikit-image 0.13's ``random_noise(mode='s&p')``.

    scikit-image 0.13 drew ``choice([True, False], shape, p=[amount, 1 - amount])`` for the flipped
    values, then ``choice([True, False], shape, p=[salt_vs_pepper, 1 - salt_vs_pepper])`` for salt.
    ``choice`` with ``p`` is one ``random_sample(shape)`` compared against the normalised cumulative
    probability, which is reproduced here exactly (it equals ``amount`` for every tabled amount).

    Parameters
    ----------
    shape : tuple of int
        Shape of the image the masks cover.
    rng : numpy.random.RandomState
        Consumed by two ``random_sample(shape)`` draws: flip mask first, then salt mask.
    amount : float
        Probability in [0, 1] that a value is replaced.
    salt_vs_pepper : float, optional
        Probability in [0, 1] that a replaced value becomes salt (1) rather than pepper (0).

    Returns
    -------
    salt, pepper : numpy.ndarray
        Disjoint boolean masks of ``shape``.
    """
    flipped = rng.random_sample(shape) < _choice_threshold(amount)
    salted = rng.random_sample(shape) < _choice_threshold(salt_vs_pepper)
    return flipped & salted, flipped & ~salted


def _choice_threshold(p: float) -> float:
    """The cut ``choice([True, False], p=[p, 1 - p])`` applies to ``random_sample``: ``cdf[0]``."""
    cdf = np.cumsum([p, 1.0 - p])
    return float(cdf[0] / cdf[-1])


def impulse_noise(x: np.ndarray, rng: np.random.RandomState, *, amount: float) -> np.ndarray:
    """Set random channel values to 0 (pepper) or 255 (salt), independently per channel.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Consumed by :func:`salt_and_pepper_masks` (two ``random_sample(x.shape)`` draws).
    amount : float
        Share of values replaced, in [0, 1]; salt and pepper are equally likely.

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255].
    """
    x = np.asarray(x)
    if x.dtype != np.uint8 or not x.flags.c_contiguous:
        salt, pepper = salt_and_pepper_masks(x.shape, rng, amount)
        u = to_unit(x)
        u[salt] = 1.0
        u[pepper] = 0.0
        return clip_to_255(u)
    # salt_and_pepper_masks' two draws, compared and applied in one pass
    flips, salts = rng.random_sample(x.shape), rng.random_sample(x.shape)
    out = np.empty(x.shape)
    _salt_and_pepper(x.reshape(-1), flips.reshape(-1), salts.reshape(-1), _choice_threshold(amount),
                     _choice_threshold(0.5), out.reshape(-1))
    return out


@numba.njit(cache=True)
def _salt_and_pepper(x, flips, salts, flip_below, salt_below, out):
    """Per value: 255 where salted, 0 where peppered, else ``clip(x / 255., 0, 1) * 255``.

    A value is flipped where ``flips < flip_below`` and then salt where ``salts < salt_below``,
    pepper otherwise (:func:`salt_and_pepper_masks`); the salt 1.0 and pepper 0.0 become 255.0
    and 0.0 under ``clip_to_255``, and every other value is ``x / 255.`` clipped and scaled, as
    :func:`impulse_noise`'s NumPy steps make it.
    """
    for m in range(x.shape[0]):
        if flips[m] < flip_below:
            out[m] = 255.0 if salts[m] < salt_below else 0.0
        else:
            v = x[m] / 255.0
            v = 0.0 if v < 0.0 else v
            v = 1.0 if v > 1.0 else v
            out[m] = v * 255.0


def speckle_noise(x: np.ndarray, rng: np.random.RandomState, *, sigma: float) -> np.ndarray:
    """Multiplicative Gaussian noise: each value ``v`` becomes ``v + v * n``.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 image, shape (H, W, 3).
    rng : numpy.random.RandomState
        Consumed by one ``normal(0, sigma, x.shape)`` draw.
    sigma : float
        Standard deviation of the relative noise ``n``; > 0.

    Returns
    -------
    numpy.ndarray
        float64, shape of ``x``, values in [0, 255]: ``clip(u + u*n, 0, 1) * 255`` with ``u = x/255``.
    """
    u = to_unit(x)
    n = rng.normal(size=x.shape, scale=sigma)
    n *= u
    n += u
    return clip_to_255(n)
