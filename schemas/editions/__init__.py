"""The catalogue of editions: name -> :class:`schemas.edition.Edition`.

One table module per edition (``imagenet``, ``inception``, ``tinyimagenet``, ``imagenet64``,
``cifar``), each holding that edition's ImageNet-C and ImageNet-P facts and its TFDS names in one
``EDITION`` value. Adding an edition is one new module whose ``EDITION`` is passed to
:func:`register_edition` (the built-in ones are registered here, in catalogue order); see
``docs/dev/adding-an-edition.md``.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Union

from schemas.edition import DEFAULT_EDITION, SOURCE_FAMILIES, Edition
from schemas.release import C_BENCHMARK, LEGACY_EDITIONS, P_BENCHMARK, Release

_CATALOGUE: dict[str, Edition] = {}

EDITIONS: Mapping[str, Edition] = MappingProxyType(_CATALOGUE)
"""Every registered edition by catalogue name (a read-only view; :func:`register_edition` adds)."""


def register_edition(edition: Edition) -> Edition:
    """Add ``edition`` to :data:`EDITIONS` (and so to every CLI list, ``--force`` and packaging).

    Raises
    ------
    ValueError
        If another edition has that name.
    """
    if _CATALOGUE.get(edition.name, edition) is not edition:
        raise ValueError(f"an edition named {edition.name!r} is registered already")
    _CATALOGUE[edition.name] = edition
    return edition


def get_edition(edition: Union[str, Edition, None] = None) -> Edition:
    """The :class:`Edition` named ``edition`` (an Edition passes through; None: the default).

    Raises
    ------
    ValueError
        On an unknown name, listing the valid ones.
    """
    if isinstance(edition, Edition):
        return edition
    name = DEFAULT_EDITION if edition is None else edition
    if name not in EDITIONS:
        raise ValueError(f"unknown edition {name!r}; valid editions: {', '.join(EDITIONS)}")
    return EDITIONS[name]


def edition_help(benchmark: str = C_BENCHMARK) -> str:
    """``--edition``'s help: every registered edition that has ``benchmark`` (``'c'`` or ``'p'``), with
    its image side and its inputs (:data:`schemas.edition.SOURCE_FAMILIES`)."""
    has = (lambda e: e.c is not None) if benchmark == C_BENCHMARK else (lambda e: e.p is not None)
    names = [f"{e.name} ({e.image_size}{', default' if e.name == DEFAULT_EDITION else ''}; "
             f"{' or '.join(dict.fromkeys(SOURCE_FAMILIES[f] for f in e.sources))})"
             for e in EDITIONS.values() if has(e)]
    return "edition: " + ", ".join(names) + "; without --input each builds its bundled sample"


class ReleaseIdentity(NamedTuple):
    """What a release is: its edition's catalogue name and its benchmark (``c``, ``p``, ``vcr``, ``a``, ``o``)."""

    edition: str
    benchmark: str


def release_identity(document: Union[Release, Mapping[str, Any]]) -> ReleaseIdentity:
    """``(edition, benchmark)`` of a :class:`schemas.release.Release` (or a build record, or their
    parsed JSON), new or old.

    A release names both (``"edition": "cifar", "benchmark": "p"``). Releases made before the
    ``benchmark`` field named the 224 edition's benchmarks by their tree (``imagenet-c``,
    ``imagenet-p``, ``vcr``, ``imagenet-a``, ``imagenet-o``: :data:`schemas.release.LEGACY_EDITIONS`)
    and the other editions by catalogue name alone, their ``tree`` telling C from P.

    Raises
    ------
    ValueError
        On a document that names no known edition or benchmark.
    """
    release = document if isinstance(document, Release) else Release.from_json(document)
    edition, benchmark = release.edition, release.benchmark
    if benchmark is not None:
        return ReleaseIdentity(edition, benchmark)
    if edition in LEGACY_EDITIONS:
        return ReleaseIdentity(*LEGACY_EDITIONS[edition])
    if edition in EDITIONS and release.tree is not None:
        p = EDITIONS[edition].p
        return ReleaseIdentity(edition, P_BENCHMARK if p is not None and release.tree in p.trees else C_BENCHMARK)
    raise ValueError(f"release.json names no known edition and benchmark (edition {edition!r})")


def category_trees() -> Mapping[str, Mapping[str, str]]:
    """Tree -> {top-level entry of the tree -> the category tar it is packed into}, for the trees
    packed by category: every registered edition's ImageNet-P trees (one folder per dataset, or one
    ``<dataset>.npy``) and the VCR tree (one tar per folder). The ImageNet-C trees are packed from
    their :class:`schemas.edition.Layout` instead."""
    from schemas.imagenet_p_editions import NPY
    from schemas.vcr import CLEAN, VCR_CORRUPTIONS, VCR_TREE

    trees = {tree: MappingProxyType({p.dataset_name(d) + (".npy" if e.p.output == NPY else ""): p.category
                                     for p in e.p.perturbations.values() for d in p.difficulties})
             for e in EDITIONS.values() if e.p for tree in e.p.trees}
    trees[VCR_TREE] = MappingProxyType({name: name for name in (*VCR_CORRUPTIONS, CLEAN)})
    return MappingProxyType(trees)


def release_trees() -> tuple:
    """Top folder of every tree a release of any registered edition can hold (C layouts, P trees)."""
    trees = [layout.tree for e in EDITIONS.values() if e.c for layout in e.c.layouts.values()]
    trees += [tree for e in EDITIONS.values() if e.p for tree in e.p.trees]
    return tuple(dict.fromkeys(trees))


from . import cifar, imagenet, imagenet64, inception, tinyimagenet  # noqa: E402  (they import this module's types)

for _module in (imagenet, inception, tinyimagenet, imagenet64, cifar):
    register_edition(_module.EDITION)

__all__ = ["EDITIONS", "DEFAULT_EDITION", "Edition", "ReleaseIdentity", "category_trees", "edition_help", "get_edition",
           "register_edition", "release_identity", "release_trees"]
