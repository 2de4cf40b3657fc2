"""Pack a release's folder tree into the official category tars plus their ``SHA256SUMS``.

ImageNet-C: ``noise.tar``, ``blur.tar``, ``weather.tar``, ``digital.tar``, ``extra.tar`` with
members ``<corruption>/<severity>/<wnid>/<file>``, as the Zenodo release. The tars are
reproducible: members in sorted depth-first order, folders included, mtime 0, owner 0/0 without
names, modes 0755/0644, GNU format. The release and the tars may lie on any file system
:mod:`pipelines.storage` reaches; the members are the tree's files and the folders that hold them.
"""
from __future__ import annotations

import contextlib
import json
import os
import tarfile
from typing import Iterator, Mapping, Optional

from schemas.release import CHECKSUMS, PACKAGES_DIR, RELEASE_JSON, TMP_DIR, TREE_CATEGORIES, checksum_line

from . import storage


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


def _tar_info(relative: str, size: Optional[int]) -> tarfile.TarInfo:
    info = tarfile.TarInfo(relative)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if size is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    else:
        info.size, info.mode = size, 0o644
    return info


def write_tar(tree: str, folders: list, destination: str) -> str:
    """Write ``destination`` holding ``folders`` (relative to ``tree``) reproducibly and atomically;
    return its SHA-256."""
    output_dir, name = storage.parent(destination), storage.basename(destination)
    with storage.open_atomic(output_dir, name) as stream:
        with tarfile.open(fileobj=stream, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for folder in folders:
                for relative, size in _members(storage.list_tree(storage.join(tree, folder)), folder):
                    info = _tar_info(relative, size)
                    if info.isdir():
                        archive.addfile(info)
                    else:
                        with storage.open_stream(storage.join(tree, relative)) as member:
                            archive.addfile(info, member)
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
        If the release has no ``release.json`` or its tree has no category table.
    """
    try:
        tree_name = json.loads(storage.read_bytes(storage.join(release_dir, RELEASE_JSON)))["tree"]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{release_dir} is not a built release: {err!r}") from err
    if tree_name not in TREE_CATEGORIES:
        raise ValueError(f"no tar categories for tree {tree_name!r}; known trees: {', '.join(TREE_CATEGORIES)}")
    tree = storage.join(release_dir, tree_name)
    output_dir = output_dir or storage.join(release_dir, PACKAGES_DIR)
    present = set(storage.list_folders(tree))
    by_category: dict[str, list] = {}
    for folder, category in TREE_CATEGORIES[tree_name].items():
        if folder in present:
            by_category.setdefault(category, []).append(folder)
    written, lines = [], []
    for category, folders in by_category.items():
        name = f"{category}.tar"
        destination = storage.join(output_dir, name)
        lines.append(checksum_line(write_tar(tree, folders, destination), name))
        written.append(destination)
    storage.write_atomic(output_dir, CHECKSUMS, "".join(lines).encode("utf-8"))
    storage.delete_tree(storage.join(output_dir, TMP_DIR))
    return written
