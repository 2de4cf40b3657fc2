"""The package tars of an edition's ImageNet-C tree, from its :class:`schemas.edition.Layout`.

Each tar holds the corruptions of its categories (folders, or ``.npy`` files plus the labels
array), below the tree (``noise.tar``: ``gaussian_noise/1/...``) or with the tree folder as the
first member (``CIFAR-10-C.tar``: ``CIFAR-10-C/``, ``CIFAR-10-C/brightness.npy``, ...), written
reproducibly by :func:`pipelines.release.package.write_tar`, on any file system :mod:`pipelines.formats.storage` reaches.
The clean config, where the layout has one, gets a tar of its own after them: ``clean.tar``, or
``<tree>-clean.tar`` for layouts that name their tars after the tree.
"""
from __future__ import annotations

from typing import Optional, Sequence

from schemas.edition import Edition, Layout
from schemas.editions import EDITIONS

from pipelines.formats import storage
from pipelines.release.package import write_tar


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
    root = storage.join(release_dir, tree)
    plan = []
    for name, categories in packages.items():
        members = [layout.corruption_entry(c) for c, spec in edition.c.corruptions.items()
                   if spec.category in categories]
        members = [m for m in members if storage.exists(storage.join(root, m))]
        if not members:
            continue
        if layout.labels_file and storage.exists(storage.join(root, layout.labels_file)):
            members.append(layout.labels_file)
        plan.append((f"{name}.tar", ([tree] if layout.package_prefix else []) + [f"{tree}/{m}" for m in members]))
    clean = layout.clean_template.split("/", 1)[0] if layout.clean_template else None
    if clean and storage.exists(storage.join(root, clean)):
        stem = clean.split(".", 1)[0]  # 'clean.npy' (CIFAR) -> CIFAR-10-C-clean.tar
        name = f"{tree}-{stem}" if layout.package_prefix else stem
        plan.append((f"{name}.tar", ([tree] if layout.package_prefix else []) + [f"{tree}/{clean}"]))
    return plan


def write_edition_tar(release_dir: str, tree: str, members: list, destination: str, prefix: bool,
                      empty_folders: Sequence[str] = ()) -> str:
    """Write ``destination`` reproducibly and atomically (:func:`pipelines.release.package.write_tar`); return
    its SHA-256.

    Member names start with ``tree/`` when ``prefix``, else they are relative to the tree;
    ``empty_folders`` (relative to the release) are the class folders that hold no file."""
    base = release_dir if prefix else storage.join(release_dir, tree)
    names = [member if prefix else member[len(tree) + 1:] for member in members]
    empty = [folder if prefix else folder[len(tree) + 1:] for folder in empty_folders]
    return write_tar(base, names, destination, folder_only=(tree,) if prefix else (), empty_folders=empty)


def write_edition_packages(release_dir: str, tree: str, output_dir: str,
                           empty_folders: Sequence[str] = ()) -> Optional[dict[str, str]]:
    """Write the tars of an edition's tree into ``output_dir``: ``{path: SHA-256}`` in plan order;
    None when no edition has ``tree``. ``empty_folders``: as :func:`write_edition_tar`."""
    plan = package_plan(release_dir, tree)
    if plan is None:
        return None
    prefix = find_layout(tree)[1].package_prefix
    return {storage.join(output_dir, name): write_edition_tar(release_dir, tree, members,
                                                              storage.join(output_dir, name), prefix, empty_folders)
            for name, members in plan}
