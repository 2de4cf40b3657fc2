"""Pack a release's folder tree into the official category tars plus their ``SHA256SUMS``.

ImageNet-C: ``noise.tar``, ``blur.tar``, ``weather.tar``, ``digital.tar``, ``extra.tar`` with
members ``<corruption>/<severity>/<wnid>/<file>``, as the Zenodo release. The tars are
reproducible: members in sorted depth-first order, folders included, mtime 0, owner 0/0 without
names, modes 0755/0644, GNU format.

A release is packed only once :func:`pipelines.verify.verify_release` finds it intact, so every
member is a file its ``SHA256SUMS`` and manifests list; links are never followed (a link anywhere
in the tree is refused, by verify and again while packing).
"""
from __future__ import annotations

import json
import os
import stat
import tarfile
from typing import Iterator, Optional

from schemas.release import CHECKSUMS, PACKAGES_DIR, RELEASE_JSON, TREE_CATEGORIES, checksum_line

from .output_folder import FolderLock
from .verify import file_sha256, verify_release


class PackageError(ValueError):
    """A release that must not be packed (it fails verification, or its tree holds a link)."""


def _lstat_mode(path: str) -> int:
    return os.lstat(path).st_mode


def _members(tree: str, relative: str) -> Iterator[str]:
    """``relative`` and everything below it (relative to ``tree``), folders before their contents."""
    yield relative
    path = os.path.join(tree, relative)
    mode = _lstat_mode(path)
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise PackageError(f"{path}: not a regular file or folder (links are never packed)")
    if stat.S_ISDIR(mode):
        for name in sorted(os.listdir(path)):
            yield from _members(tree, f"{relative}/{name}")


def _tar_info(tree: str, relative: str) -> tarfile.TarInfo:
    path = os.path.join(tree, relative)
    info = tarfile.TarInfo(relative)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    status = os.lstat(path)
    if stat.S_ISDIR(status.st_mode):
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    elif stat.S_ISREG(status.st_mode):
        info.size, info.mode = status.st_size, 0o644
    else:
        raise PackageError(f"{path}: not a regular file or folder (links are never packed)")
    return info


def write_tar(tree: str, folders: list, destination: str) -> None:
    """Write ``destination`` holding ``folders`` (relative to ``tree``) reproducibly and atomically."""
    partial = destination + ".partial"
    with tarfile.open(partial, "w", format=tarfile.GNU_FORMAT) as archive:
        for folder in folders:
            for relative in _members(tree, folder):
                info = _tar_info(tree, relative)
                if info.isdir():
                    archive.addfile(info)
                else:
                    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                    with os.fdopen(os.open(os.path.join(tree, relative), flags), "rb") as stream:
                        archive.addfile(info, stream)
    os.replace(partial, destination)


def package_release(release_dir: str, output_dir: Optional[str] = None) -> list[str]:
    """Write one tar per category of the release's tree and a ``SHA256SUMS`` of them.

    Parameters
    ----------
    release_dir : str
        A built release (its ``release.json`` names the tree).
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
    pipelines.output_folder.FolderBusy
        If a build or another ``package`` holds the release folder.
    """
    if not os.path.isdir(release_dir):
        raise PackageError(f"{release_dir} is not a release folder")
    try:
        lock = FolderLock(release_dir, "package", create=False).acquire()
    except FileNotFoundError as err:
        raise ValueError(f"{release_dir} is not a built release: {err}") from err
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
        with open(os.path.join(release_dir, RELEASE_JSON), encoding="utf-8") as stream:
            tree_name = json.load(stream)["tree"]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{release_dir} is not a built release: {RELEASE_JSON} unreadable or without a "
                         f"'tree' ({type(err).__name__})") from err
    from .edition_package import find_layout, write_edition_packages

    if tree_name not in TREE_CATEGORIES and find_layout(tree_name) is None:
        raise ValueError(f"no tar categories for tree {tree_name!r}; known trees: {', '.join(TREE_CATEGORIES)}")
    tree = os.path.join(release_dir, tree_name)
    output_dir = output_dir or os.path.join(release_dir, PACKAGES_DIR)
    if os.path.islink(output_dir):
        raise PackageError(f"{output_dir} is a link: give a real folder for the tars")
    os.makedirs(output_dir, exist_ok=True)
    written = [] if tree_name in TREE_CATEGORIES else write_edition_packages(release_dir, tree_name, output_dir)
    by_category: dict[str, list] = {}
    for folder, category in TREE_CATEGORIES.get(tree_name, {}).items():
        path = os.path.join(tree, folder)
        mode = _lstat_mode(path) if os.path.lexists(path) else 0
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode):  # a folder, or a CIFAR-10-P .npy; never a link
            by_category.setdefault(category, []).append(folder)
    for category, folders in by_category.items():
        destination = os.path.join(output_dir, f"{category}.tar")
        write_tar(tree, folders, destination)
        written.append(destination)
    lines = "".join(checksum_line(file_sha256(p), os.path.basename(p)) for p in written)
    with open(os.path.join(output_dir, CHECKSUMS), "w", encoding="utf-8") as stream:
        stream.write(lines)
    return written
