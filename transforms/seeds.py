"""Per-example seeds: the only source of randomness in a release."""
from __future__ import annotations

import hashlib

import numpy as np


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
    """
    identity = f"imagenet-cp/v1\0{int(release_seed)}\0{image_key}\0{name}\0{int(severity)}"
    return int.from_bytes(hashlib.sha256(identity.encode("utf-8")).digest()[:4], "big")


def example_rng(release_seed: int, image_key: str, name: str, severity: int) -> np.random.RandomState:
    """``numpy.random.RandomState(example_seed(...))``: a fresh legacy stream for one output."""
    return np.random.RandomState(example_seed(release_seed, image_key, name, severity))
