"""Names and WordNet glosses of the 1000 ImageNet-1k classes.

``data/imagenet_class_names.tsv``: ``<wnid> TAB <lemmas, comma-separated> TAB <gloss>`` in label
order, the WordNet 3.0 lemmas and definitions as ``timm`` 1.0.31 ships them
(``timm/data/_info/imagenet_synset_to_lemma.txt`` and ``..._definition.txt``). The short name of
a class is its first lemma ("n02127052 lynx"), as the ImageNet-A/O READMEs and file names use.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

from schemas.wnids import imagenet_wnids

__all__ = ["class_name", "class_lemmas", "class_gloss"]


@lru_cache(maxsize=None)
def _table() -> Mapping[str, tuple]:
    text = resources.files("schemas").joinpath("data/imagenet_class_names.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines()]
    if [r[0] for r in rows] != list(imagenet_wnids()) or any(len(r) != 3 for r in rows):
        raise RuntimeError("schemas/data/imagenet_class_names.tsv must hold the 1000 wnids in label order")
    return MappingProxyType({wnid: (lemmas, gloss) for wnid, lemmas, gloss in rows})


def class_name(wnid: str) -> str:
    """Short name (first WordNet lemma) of an ImageNet-1k class, e.g. ``'lynx'``."""
    return _table()[wnid][0].split(",")[0].strip()


def class_lemmas(wnid: str) -> str:
    """All lemmas, e.g. ``'lynx, catamount'``."""
    return _table()[wnid][0]


def class_gloss(wnid: str) -> str:
    """The WordNet definition of the class."""
    return _table()[wnid][1]
