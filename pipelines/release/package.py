"""Pack a release's folder tree into the official category tars plus their ``SHA256SUMS``.

ImageNet-C: ``noise.tar``, ``blur.tar``, ``weather.tar``, ``digital.tar``, ``extra.tar`` with
members ``<corruption>/<severity>/<wnid>/<file>``, as the Zenodo release. The tars are
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
import json
import os
import tarfile
from typing import Iterable, Iterator, Mapping, Optional

from schemas.release import CHECKSUMS, PACKAGES_DIR, RELEASE_JSON, TMP_DIR, TREE_CATEGORIES, checksum_line

from pipelines.formats import storage
from pipelines.formats.class_folders import release_class_folders
from pipelines.release.output_folder import FolderLock
from pipelines.release.verify import verify_release


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
    if storage.is_folder(path):
        below = {f[len(relative) + 1:] + "/": None for f in empty_folders if f.startswith(relative + "/")}
        yield from _members({**storage.list_tree(path), **below}, relative)
    else:
        yield relative, storage.size(path)


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
    if storage.is_local(output_dir):
        with contextlib.suppress(OSError):  # the temporary folder, when nothing else is in it
            os.rmdir(os.path.join(output_dir, TMP_DIR))
    return stream.sha256


def package_release(release_dir: str, output_dir: Optional[str] = None) -> list[str]:
    """Write one tar per category of the release's tree and a ``SHA256SUMS`` of them.

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


def _package(release_dir: str, output_dir: Optional[str]) -> list[str]:
    try:
        tree_name = json.loads(storage.read_bytes(storage.join(release_dir, RELEASE_JSON)))["tree"]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{release_dir} is not a built release: {RELEASE_JSON} unreadable or without a "
                         f"'tree' ({type(err).__name__})") from err
    from pipelines.release.edition_package import find_layout, write_edition_packages

    if tree_name not in TREE_CATEGORIES and find_layout(tree_name) is None:
        raise ValueError(f"no tar categories for tree {tree_name!r}; known trees: {', '.join(TREE_CATEGORIES)}")
    tree = storage.join(release_dir, tree_name)
    output_dir = output_dir or storage.join(release_dir, PACKAGES_DIR)
    if storage.is_local(output_dir):
        if os.path.islink(output_dir):
            raise PackageError(f"{output_dir} is a link: give a real folder for the tars")
        if os.path.lexists(output_dir) and not os.path.isdir(output_dir):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", output_dir)
    empty = sorted(release_class_folders(release_dir, tree_name))  # verified: exactly the expected ones
    tars = {} if tree_name in TREE_CATEGORIES else write_edition_packages(release_dir, tree_name, output_dir, empty)
    by_category: dict[str, list] = {}
    for folder, category in TREE_CATEGORIES.get(tree_name, {}).items():
        if storage.exists(storage.join(tree, folder)):  # a folder, or a CIFAR-10-P .npy
            by_category.setdefault(category, []).append(folder)
    for category, folders in by_category.items():
        destination = storage.join(output_dir, f"{category}.tar")
        tars[destination] = write_tar(tree, folders, destination,
                                      empty_folders=[f[len(tree_name) + 1:] for f in empty])
    lines = "".join(checksum_line(sha256, storage.basename(path)) for path, sha256 in tars.items())
    storage.write_atomic(output_dir, CHECKSUMS, lines.encode("utf-8"))
    storage.delete_tree(storage.join(output_dir, TMP_DIR))
    return list(tars)
