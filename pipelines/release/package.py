"""Pack a release's folder tree into the official category tars plus their ``SHA256SUMS``.

One plan per tree (:func:`package_plan`): an ImageNet-C tree of any edition is packed as its
:class:`schemas.edition.Layout` says (224: ``noise.tar``, ``blur.tar``, ``weather.tar``,
``digital.tar``, ``extra.tar`` with members ``<corruption>/<severity>/<wnid>/<file>``, as the Zenodo
release, then ``clean.tar``; ``CIFAR-10-C.tar`` with the tree folder as first member; ...); an
ImageNet-P or VCR tree by its category table (:func:`schemas.editions.category_trees`). The tars are
reproducible: members in sorted depth-first order, folders included, mtime 0, owner 0/0 without
names, modes 0755/0644, GNU format; every class folder is a member, the empty ones of a subset too
(:mod:`pipelines.formats.class_folders`). The release and the tars may lie on any file system
:mod:`pipelines.formats.storage` reaches; the members are the tree's files and the folders that hold them.

A release is packed only once :func:`pipelines.release.verify.verify_release` finds it intact, so every
member is a file its ``SHA256SUMS`` and manifests list; on a local disk links are never followed
(verify refuses a link anywhere in the release, and files are opened with ``O_NOFOLLOW``).
"""
from __future__ import annotations

import contextlib
import errno
import os
import tarfile
from typing import Iterable, Iterator, Mapping, NamedTuple, Optional

from schemas.edition import Edition, Layout
from schemas.editions import EDITIONS, category_trees
from schemas.release import PACKAGES_DIR, RELEASE_JSON, TFDS_DIR, TFDS_FORMAT, TMP_DIR, TREE_FORMAT, Release

from pipelines.formats import storage
from pipelines.formats.checksum_file import write_checksums
from pipelines.formats.checksum_table import ChecksumTable
from pipelines.formats.class_folders import listed_class_folders
from pipelines.formats.release_document import read_release
from pipelines.release.output_folder import FolderLock
from pipelines.release.verify import numbered_checksums, verify_release
from pipelines.release.verify_records import part_config

__all__ = ["tar_entries", "PackageError", "write_tar", "package_release", "TarPlan", "find_layout", "package_plan",
           "tfds_plan"]


def _members(files: Mapping[str, int], relative: str) -> Iterator[tuple[str, Optional[int]]]:
    """``(path, size)`` of the folder ``relative`` and everything below it, folders (size None)
    before their contents, names sorted at each level; ``files`` maps the paths of the files below
    the folder, relative to it, to their sizes."""
    yield relative, None
    children: dict = {}
    for path, size in files.items():
        name, _, rest = path.partition("/")
        children.setdefault(name, {})[rest] = size
    for name in sorted(children):
        below = children[name]
        if "" not in below:
            yield from _members(below, f"{relative}/{name}")
        elif len(below) == 1:
            yield f"{relative}/{name}", below[""]
        else:  # possible on an object store only
            raise ValueError(f"{relative}/{name} is both a file and a folder")


def tar_entries(base: str, relative: str, empty_folders: Iterable[str] = ()) -> Iterator[tuple[str, Optional[int]]]:
    """``(path, size)`` of ``relative`` (relative to ``base``): a file, or a folder (size None)
    followed by everything below it in tar order (see :func:`_members`), the ``empty_folders``
    below it (relative to ``base``) included."""
    path = storage.join(base, relative)
    if storage.is_local(path) and os.path.isdir(path):
        yield relative, None
        yield from _local_members(base, relative, frozenset(f for f in empty_folders if f.startswith(relative + "/")))
    elif storage.is_folder(path):
        below = {f[len(relative) + 1:] + "/": None for f in empty_folders if f.startswith(relative + "/")}
        yield from _members({**storage.list_tree(path), **below}, relative)
    else:
        yield relative, storage.size(path)


def _local_members(base: str, relative: str, empty: frozenset) -> Iterator[tuple[str, Optional[int]]]:
    """What :func:`_members` gives below the local folder ``relative`` (not the folder itself),
    walked one folder at a time: memory follows the widest folder, not the tree. A folder without a
    file below it is left out unless ``empty`` (paths relative to ``base``) names it, as a listing of
    the files leaves it out."""
    with os.scandir(os.path.join(base, relative)) as entries:
        children = sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries)
    for name, is_folder in children:
        path = f"{relative}/{name}"
        if not is_folder:
            yield path, os.path.getsize(os.path.join(base, path))
            continue
        below = _local_members(base, path, empty)
        first = next(below, None)
        if first is not None or path in empty:
            yield path, None
        if first is not None:
            yield first
            yield from below


def _tar_info(relative: str, size: Optional[int]) -> tarfile.TarInfo:
    info = tarfile.TarInfo(relative)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if size is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    else:
        info.size, info.mode = size, 0o644
    return info


class PackageError(ValueError):
    """A release that must not be packed (it fails verification, or its tree holds a link)."""


def _open_member(path: str):
    """A member's bytes; a local one opened without following a link (``O_NOFOLLOW``)."""
    if storage.is_local(path):
        return os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb")
    return storage.open_stream(path)


def write_tar(base: str, members: list, destination: str, folder_only: tuple = (),
              empty_folders: Iterable[str] = ()) -> str:
    """Write ``destination`` holding ``members`` (paths relative to ``base``, each with everything
    below it; those in ``folder_only`` as a folder entry alone) and the ``empty_folders`` below
    them (relative to ``base``: the class folders a subset misses) reproducibly and atomically, on
    any file system; return its SHA-256."""
    empty_folders = tuple(empty_folders)
    output_dir, name = storage.parent(destination), storage.basename(destination)
    with storage.open_atomic(output_dir, name) as stream:
        with tarfile.open(fileobj=stream, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for member in members:
                for relative, size in ([(member, None)] if member in folder_only
                                       else tar_entries(base, member, empty_folders)):
                    info = _tar_info(relative, size)
                    if info.isdir():
                        archive.addfile(info)
                    else:
                        with _open_member(storage.join(base, relative)) as data:
                            archive.addfile(info, data)
                    archive.members.clear()  # tarfile keeps every member it wrote: 200,000 in a tar of a whole release
    if storage.is_local(output_dir):
        with contextlib.suppress(OSError):  # the temporary folder, when nothing else is in it
            os.rmdir(os.path.join(output_dir, TMP_DIR))
    return stream.sha256


def package_release(release_dir: str, output_dir: Optional[str] = None) -> list[str]:
    """Write one tar per category of the release's tree and a ``SHA256SUMS`` of them (a release
    without a tree: one tar per TFDS config, :func:`tfds_plan`).

    Parameters
    ----------
    release_dir : str
        A built release (its ``release.json`` names the tree), local or on an object store.
    output_dir : str, optional
        Where the tars go (default ``release_dir/packages``).

    Returns
    -------
    list of str
        Paths of the tars written, in category order.

    Raises
    ------
    ValueError
        If the release fails verification (:class:`PackageError`, naming the first problems), has
        no ``release.json`` or its tree has no category table.
    pipelines.release.output_folder.FolderBusy
        If a build or another ``package`` holds the release folder.
    """
    try:
        lock = FolderLock(release_dir, "package", create=False).acquire()
    except FileNotFoundError as err:
        raise PackageError(f"{release_dir} is not a release folder") from err
    try:
        report = verify_release(release_dir, include_packages=False)  # our own lock file is not in it
        if not report.ok:
            lines = report.text().splitlines()
            shown = "; ".join(lines[:3]) + ("; ..." if len(lines) > 4 else "")
            raise PackageError(f"{release_dir} fails verification, not packed: {lines[-1]} ({shown}); "
                               f"run imagenet-cp verify {release_dir} for the full list")
        return _package(release_dir, output_dir)
    finally:
        lock.release()


class TarPlan(NamedTuple):
    """One tar of a package: its name, the folder its members are relative to, the members (each with
    everything below it, but those in ``folder_only``, packed as a folder entry alone)."""

    name: str
    base: str
    members: list
    folder_only: tuple = ()


def find_layout(tree: str) -> Optional[tuple[Edition, Layout]]:
    """The edition and layout whose ImageNet-C release tree is ``tree`` (None when no edition has it)."""
    for edition in EDITIONS.values():
        for layout in (edition.c.layouts.values() if edition.c else ()):
            if layout.tree == tree:
                return edition, layout
    return None


def _layout_plan(release_dir: str, tree: str, edition: Edition, layout: Layout) -> list[TarPlan]:
    """The tars of an ImageNet-C tree: one per package of the layout (default: one per category), then
    the clean config's (``clean.tar``, or ``<tree>-clean.tar`` for layouts that name their tars after
    the tree). Only entries present in the release are packed; a tar without any is left out."""
    packages = layout.packages or {category: (category,) for category in edition.c.categories}
    root = storage.join(release_dir, tree)
    prefix = [tree] if layout.package_prefix else []
    base = release_dir if layout.package_prefix else root

    def plan(name: str, members: list) -> TarPlan:
        names = prefix + [f"{tree}/{m}" if layout.package_prefix else m for m in members]
        return TarPlan(f"{name}.tar", base, names, tuple(prefix))

    plans = []
    for name, categories in packages.items():
        members = [layout.corruption_entry(c) for c, spec in edition.c.corruptions.items()
                   if spec.category in categories]
        members = [m for m in members if storage.exists(storage.join(root, m))]
        if not members:
            continue
        if layout.labels_file and storage.exists(storage.join(root, layout.labels_file)):
            members.append(layout.labels_file)
        plans.append(plan(name, members))
    clean = layout.clean_template.split("/", 1)[0] if layout.clean_template else None
    if clean and storage.exists(storage.join(root, clean)):
        stem = clean.split(".", 1)[0]  # 'clean.npy' (CIFAR) -> CIFAR-10-C-clean.tar
        plans.append(plan(f"{tree}-{stem}" if layout.package_prefix else stem, [clean]))
    return plans


def _category_plan(release_dir: str, tree: str, categories: Mapping[str, str]) -> list[TarPlan]:
    """The tars of a tree packed by category table: one per category, in table order, of the
    entries present (folders, or ``.npy`` files) below the tree."""
    root = storage.join(release_dir, tree)
    by_category: dict[str, list] = {}
    for entry, category in categories.items():
        if storage.exists(storage.join(root, entry)):
            by_category.setdefault(category, []).append(entry)
    return [TarPlan(f"{category}.tar", root, entries) for category, entries in by_category.items()]


def package_plan(release_dir: str, tree: str) -> Optional[list[TarPlan]]:
    """The tars of the release tree ``tree``, in order; None when no edition or benchmark has it."""
    found = find_layout(tree)
    if found is not None:
        return _layout_plan(release_dir, tree, *found)
    categories = category_trees().get(tree)
    return None if categories is None else _category_plan(release_dir, tree, categories)


def tfds_plan(release_dir: str, release: Release) -> list[TarPlan]:
    """The tars of a release without a tree: one per TFDS config, ``tfds-<config>.tar``, holding
    ``tfds/<dataset>/<config>/`` with its folders above it."""
    tfds = release.tfds
    top = [tfds.data_dir, f"{tfds.data_dir}/{tfds.name}"]
    return [TarPlan(f"{TFDS_DIR}-{config}.tar", release_dir, [*top, f"{top[1]}/{config}"], tuple(top))
            for config in (part_config(p) for p in release.manifest_parts)
            if storage.exists(storage.join(release_dir, f"{top[1]}/{config}"))]


def _package(release_dir: str, output_dir: Optional[str]) -> list[str]:
    try:
        release = read_release(release_dir)
    except (OSError, ValueError) as err:
        raise ValueError(f"{release_dir} is not a built release: {RELEASE_JSON} unreadable "
                         f"({type(err).__name__})") from err
    tree_name = release.tree
    if tree_name is None:
        raise ValueError(f"{release_dir} is not a built release: its {RELEASE_JSON} names no 'tree'")
    if TREE_FORMAT not in release.formats:
        if TFDS_FORMAT not in release.formats or release.tfds is None:
            raise PackageError(f"{release_dir} holds neither a tree nor TFDS records (--formats "
                               f"{','.join(release.formats)}): nothing to pack, its WebDataset shards are tars")
        return _write_package(release_dir, output_dir, tfds_plan(release_dir, release), "")
    return _write_package(release_dir, output_dir, package_plan(release_dir, tree_name), tree_name)


def _empty_class_folders(release_dir: str, tree_name: str) -> list[str]:
    """The class folders of the tree that hold no file (verified: those expected), its
    ``SHA256SUMS`` streamed into a :class:`ChecksumTable` (a whole release lists millions of files)."""
    with ChecksumTable.of(numbered_checksums(release_dir)) as listed:
        return sorted(listed_class_folders(release_dir, listed, tree_name))


def _write_package(release_dir: str, output_dir: Optional[str], plan: Optional[list[TarPlan]], tree_name: str
                   ) -> list[str]:
    """Write the tars of ``plan`` (of the tree ``tree_name``, whose empty class folders they hold;
    "": no tree) and their ``SHA256SUMS``."""
    if plan is None:
        known = [layout.tree for e in EDITIONS.values() if e.c for layout in e.c.layouts.values()]
        raise ValueError(f"no tar categories for tree {tree_name!r}; known trees: "
                         f"{', '.join(dict.fromkeys([*known, *category_trees()]))}")
    output_dir = output_dir or storage.join(release_dir, PACKAGES_DIR)
    if storage.is_local(output_dir):
        if os.path.islink(output_dir):
            raise PackageError(f"{output_dir} is a link: give a real folder for the tars")
        if os.path.lexists(output_dir) and not os.path.isdir(output_dir):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", output_dir)
    empty = _empty_class_folders(release_dir, tree_name) if tree_name else []
    tars = {}
    for tar in plan:
        destination = storage.join(output_dir, tar.name)
        below = "" if tar.base == release_dir else f"{tree_name}/"  # the tar's base, relative to the release
        tars[destination] = write_tar(tar.base, tar.members, destination, tar.folder_only,
                                      empty_folders=[f[len(below):] for f in empty if f.startswith(below)])
    write_checksums(output_dir, [(storage.basename(path), sha256) for path, sha256 in tars.items()])
    storage.delete_tree(storage.join(output_dir, TMP_DIR))
    return list(tars)
