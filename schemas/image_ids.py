"""Named image-id lists bundled with the project, as data: ``--image-ids NAME`` selects one.

An id list holds one ``<wnid>/<file>`` (or ``<file>``) a line. Each bundled list is a file in
``schemas/data/`` whose provenance and licence lie beside it (``<file stem>.LICENSE.txt``) and
whose SHA-256 is recorded here and checked every time the list is loaded.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Mapping

__all__ = ["IdList", "ID_LISTS", "is_named_id_list", "named_id_list_bytes"]


@dataclass(frozen=True)
class IdList:
    """A bundled id list.

    Attributes
    ----------
    file : str
        File name in ``schemas/data/``.
    sha256 : str
        Lower-case hex SHA-256 of the file's bytes.
    count : int
        Number of ids it holds.
    source : str
        Where it comes from (repository, commit, path).
    licence : str
        Its licence (full text in ``schemas/data/<file stem>.LICENSE.txt``).
    """

    file: str
    sha256: str
    count: int
    source: str
    licence: str


#: Name -> bundled id list.
ID_LISTS: Mapping[str, IdList] = MappingProxyType({
    "robustbench-5000": IdList(
        file="robustbench_imagenet_test_image_ids.txt",
        sha256="d4121626d07722a0126c35b1563042e46a546f1a05ce705f2cdc635896d58574",
        count=5000,
        source="RobustBench/robustbench @ 78fcc9e, robustbench/helper_files/imagenet_test_image_ids.txt "
               "(the 5,000 ImageNet validation images RobustBench evaluates ImageNet-C on)",
        licence="MIT, Copyright (c) 2020 Francesco Croce, Maksym Andriushchenko, Vikash Sehwag"),
})


def is_named_id_list(name: str) -> bool:
    """True when ``name`` is one of :data:`ID_LISTS` (rather than a path to a user's file)."""
    return name in ID_LISTS


def named_id_list_bytes(name: str) -> bytes:
    """The bytes of a bundled id list, after checking its SHA-256.

    Raises
    ------
    ValueError
        If ``name`` is not a bundled list, or the bundled file's SHA-256 differs from the
        recorded one (a damaged installation).
    """
    if name not in ID_LISTS:
        raise ValueError(f"unknown id list {name!r}; bundled lists: {', '.join(ID_LISTS)}")
    entry = ID_LISTS[name]
    data = resources.files("schemas").joinpath(f"data/{entry.file}").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise ValueError(f"schemas/data/{entry.file} has SHA-256 {digest}, expected {entry.sha256}: "
                           "the bundled id list is damaged; reinstall imagenet-cp")
    return data
