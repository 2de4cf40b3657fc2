"""Per-example seeds: the only source of randomness in a release."""
from __future__ import annotations

import hashlib

from .rng import CorruptionRng, make_rng

__all__ = ["example_seed", "example_rng"]


def example_seed(release_seed: int, image_key: str, name: str, severity: int) -> int:
    """A stable 32-bit seed for one output, from SHA-256 of its identity.

    Parameters
    ----------
    release_seed : int
        The release's seed (any non-negative int).
    image_key : str
        ``<wnid>/<file name>``, unique within a release.
    name : str
        Corruption or perturbation name.
    severity : int
        Severity (ImageNet-C) or difficulty (ImageNet-P).

    Returns
    -------
    int
        A seed in [0, 2**32), suitable for ``numpy.random.RandomState``. It depends on the four
        arguments alone: never on order, sharding, worker count or retries.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> transforms.example_seed(0, 'n01440764/ILSVRC2012_val_00000293.JPEG', 'fog', 3)
    1922402343
    >>> transforms.example_seed(1, 'n01440764/ILSVRC2012_val_00000293.JPEG', 'fog', 3)
    2945520630
    >>> rng = np.random.RandomState(transforms.example_seed(0, 'n01440764/ILSVRC2012_val_00000293.JPEG', 'fog', 3))
    """
    identity = f"imagenet-cp/v1\0{int(release_seed)}\0{image_key}\0{name}\0{int(severity)}"
    return int.from_bytes(hashlib.sha256(identity.encode("utf-8")).digest()[:4], "big")


def example_rng(release_seed: int, image_key: str, name: str, severity: int,
                mode: str = "reference") -> CorruptionRng:
    """A fresh stream for one output: ``make_rng(example_seed(...), mode)``.

    ``mode='reference'`` (the default) gives the stream of
    ``numpy.random.RandomState(example_seed(...))``, the legacy stream the reference consumes
    (drawn by :class:`transforms.exact_rng.ExactRandomState`, see :func:`transforms.make_rng`);
    ``mode='fast'`` gives a
    :class:`transforms.rng.FastRandomState` on the same seed (see :data:`transforms.RNG_MODES`).

    Examples
    --------
    >>> import transforms
    >>> key = 'n01440764/ILSVRC2012_val_00000293.JPEG'
    >>> type(transforms.example_rng(0, key, 'fog', 3)).__name__
    'ExactRandomState'
    >>> type(transforms.example_rng(0, key, 'fog', 3, mode='fast')).__name__
    'FastRandomState'
    >>> first, again = (transforms.example_rng(0, key, 'fog', 3).randint(1000) for _ in range(2))
    >>> first == again  # a fresh stream each time, the same draws
    True
    """
    return make_rng(example_seed(release_seed, image_key, name, severity), mode)
