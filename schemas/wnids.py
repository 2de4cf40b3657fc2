"""The 1000 ImageNet-1k class ids (wnids) and their label indices.

A label is the index of the wnid in the sorted list of the 1000 wnids, whatever the source.
The list is the one tensorflow-datasets ships as ``imagenet2012/labels.txt``.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

__all__ = ["imagenet_wnids", "wnid_to_label"]


@lru_cache(maxsize=None)
def imagenet_wnids() -> tuple[str, ...]:
    """The 1000 wnids in label order (sorted), e.g. ``('n01440764', 'n01443537', ...)``."""
    text = resources.files("schemas").joinpath("data/imagenet_wnids.txt").read_text()
    wnids = tuple(text.split())
    if len(wnids) != 1000 or list(wnids) != sorted(wnids):
        raise RuntimeError("schemas/data/imagenet_wnids.txt must hold 1000 sorted wnids")
    return wnids


@lru_cache(maxsize=None)
def wnid_to_label() -> Mapping[str, int]:
    """Map each wnid to its label index 0..999."""
    return MappingProxyType({w: i for i, w in enumerate(imagenet_wnids())})
