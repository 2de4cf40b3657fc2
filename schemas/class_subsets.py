"""The 200-class subsets of ImageNet-1k used by ImageNet-A and ImageNet-O (they differ).

- ImageNet-A: the 200 wnids of ``imagenet-a/<wnid>/``; the list ``timm`` ships as
  ``timm/data/_info/imagenet_a_synsets.txt`` (equal to ``imagenet_a_wnids`` in
  ``hendrycks/natural-adv-examples/eval_many_models.py``).
- ImageNet-O: the 200 wnids of ``imagenet-o/<wnid>/`` (``imagenet_o_wnids`` in the same file).

Both are sorted, so a folder tree read as an ImageFolder gives labels 0..199 in list order.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

from schemas.wnids import wnid_to_label

__all__ = ["SUBSETS", "subset_wnids", "subset_indices"]

SUBSETS = ("imagenet_a", "imagenet_o")


@lru_cache(maxsize=None)
def subset_wnids(subset: str) -> tuple[str, ...]:
    """The 200 sorted wnids of ``subset`` (``"imagenet_a"`` or ``"imagenet_o"``)."""
    if subset not in SUBSETS:
        raise ValueError(f"unknown class subset {subset!r}; valid: {', '.join(SUBSETS)}")
    text = resources.files("schemas").joinpath(f"data/{subset}_wnids.txt").read_text()
    wnids = tuple(text.split())
    labels = wnid_to_label()
    if len(set(wnids)) != 200 or list(wnids) != sorted(wnids) or not set(wnids) <= labels.keys():
        raise RuntimeError(f"schemas/data/{subset}_wnids.txt must hold 200 sorted ImageNet wnids")
    return wnids


def subset_indices(subset: str) -> np.ndarray:
    """ImageNet-1k label indices (0..999) of ``subset``'s 200 classes, ascending, int64."""
    labels = wnid_to_label()
    return np.array([labels[w] for w in subset_wnids(subset)], dtype=np.int64)
