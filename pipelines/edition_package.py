"""The package tars of an edition's ImageNet-C tree, from its :class:`schemas.edition.Layout`.

Each tar holds the corruptions of its categories (folders, or ``.npy`` files plus the labels
array), below the tree (``noise.tar``: ``gaussian_noise/1/...``) or with the tree folder as the
first member (``CIFAR-10-C.tar``: ``CIFAR-10-C/``, ``CIFAR-10-C/brightness.npy``, ...), written
reproducibly by :func:`pipelines.package.write_tar`.
"""
from __future__ import annotations

import os
import tarfile
from typing import Optional

from schemas.edition import Edition, Layout
from schemas.editions import EDITIONS

from .package import _members, _tar_info


def find_layout(tree: str) -> Optional[tuple[Edition, Layout]]:
    """The edition and layout whose release tree is ``tree`` (None when no edition has it)."""
    for edition in EDITIONS.values():
        for layout in edition.c.layouts.values():
            if layout.tree == tree:
                return edition, layout
    return None


def package_plan(release_dir: str, tree: str) -> Optional[list[tuple[str, list]]]:
    """``[(tar name, members)]`` for an edition's tree, or None when no edition has the tree.

    Members are paths relative to the release directory; a member that is the tree folder itself
    is packed as a folder entry alone, every other member with everything below it. Only entries
    present in the release are packed; a tar without any is left out.
    """
    found = find_layout(tree)
    if found is None:
        return None
    edition, layout = found
    packages = layout.packages or {category: (category,) for category in edition.c.categories}
    root = os.path.join(release_dir, tree)
    plan = []
    for name, categories in packages.items():
        members = [layout.corruption_entry(c) for c, spec in edition.c.corruptions.items()
                   if spec.category in categories]
        members = [m for m in members if os.path.exists(os.path.join(root, m))]
        if not members:
            continue
        if layout.labels_file and os.path.exists(os.path.join(root, layout.labels_file)):
            members.append(layout.labels_file)
        plan.append((f"{name}.tar", ([tree] if layout.package_prefix else []) + [f"{tree}/{m}" for m in members]))
    return plan


def write_edition_tar(release_dir: str, tree: str, members: list, destination: str, prefix: bool) -> None:
    """Write ``destination`` reproducibly and atomically (settings of :func:`pipelines.package.write_tar`).

    Member names start with ``tree/`` when ``prefix``, else they are relative to the tree."""
    base = release_dir if prefix else os.path.join(release_dir, tree)
    partial = destination + ".partial"
    with tarfile.open(partial, "w", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            relative = member if prefix else member[len(tree) + 1:]
            names = [relative] if member == tree else _members(base, relative)
            for name in names:
                info = _tar_info(base, name)
                if info.isdir():
                    archive.addfile(info)
                else:
                    with open(os.path.join(base, name), "rb") as stream:
                        archive.addfile(info, stream)
    os.replace(partial, destination)


def write_edition_packages(release_dir: str, tree: str, output_dir: str) -> Optional[list[str]]:
    """Write the tars of an edition's tree into ``output_dir``; None when no edition has ``tree``."""
    plan = package_plan(release_dir, tree)
    if plan is None:
        return None
    prefix = find_layout(tree)[1].package_prefix
    written = []
    for name, members in plan:
        destination = os.path.join(output_dir, name)
        write_edition_tar(release_dir, tree, members, destination, prefix)
        written.append(destination)
    return written
