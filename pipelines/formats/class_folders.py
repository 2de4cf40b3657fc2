"""Every class folder in every folder of classes, so that folder-inferring loaders label right.

RobustBench's ``CustomImageFolder``, torchvision's ``ImageFolder`` and Hugging Face's
``imagefolder`` number classes by the sub-folders they find, sorted. A release built from a subset
(``--limit``, ``--image-ids``, the bundled sample, RobustBench's 5,000 ids that miss three classes)
holds only some classes, and those loaders would give 0..k-1 instead of the dataset's indices. So
every folder that holds class folders (``ImageNet-C/fog/3/``, ``ImageNet-C/clean/``,
``ImageNet-P/rotate/``, ``Tiny-ImageNet-C/frost/1/``, ...) holds one folder per class name of the
release's ``label`` feature (the names of ``label.labels.txt``), empty for the classes the subset
misses: sorted, the folders give each class its index.

The write step makes them (:func:`make_class_folders`), ``verify`` accepts exactly these empty
folders (:func:`listed_class_folders`, :func:`expected_class_folders`) and ``package`` puts them in
the tars as folder entries.
An object store holds no empty folders: there the packages carry them.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Optional, Sequence

from schemas.release import TFDS_DIR
from schemas.tfds import TfdsDataset

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable, unsafe_path
from pipelines.formats.release_document import read_release

__all__ = ["LABELS_FILE", "label_names", "class_folder_parents", "class_folders", "make_class_folders",
           "make_class_folders_once", "release_label_names", "expected_class_folders", "listed_class_folders"]

LABELS_FILE = "label.labels.txt"
"""The TFDS metadata file of the ``label`` feature: one class name a line, in index order."""


def label_names(dataset: TfdsDataset) -> tuple:
    """Class names of a dataset's ``label`` feature, in index order (empty without names)."""
    return tuple(getattr(dataset.features.get("label"), "names", ()) or ())


def class_folder_parents(folders: Iterable[str], names: Iterable[str]) -> set:
    """Folders that hold class folders: the parent of each folder (holding files) named after a class.

    Parameters
    ----------
    folders : iterable of str
        ``/``-separated folders that hold output files, e.g. ``ImageNet-C/fog/3/n01440764``.
    names : iterable of str
        The class names.
    """
    names = set(names)
    return {parent for parent, _, name in (f.rpartition("/") for f in folders) if parent and name in names}


def class_folders(parents: Iterable[str], names: Iterable[str]) -> set:
    """Every class folder ``<parent>/<name>`` of every parent."""
    names = tuple(names)
    return {f"{parent}/{name}" for parent in parents for name in names}


def make_class_folders(output_dir: str, output_folders: Iterable[str], names: Iterable[str]) -> None:
    """Make, below a local ``output_dir``, every class folder of the parents of ``output_folders``
    (folders that hold outputs); nothing on an object store (it holds no empty folders)."""
    if not storage.is_local(output_dir):
        return
    names = tuple(names)
    for parent in sorted(class_folder_parents(output_folders, names)):
        local = os.path.join(output_dir, *parent.split("/"))
        os.makedirs(local, exist_ok=True)
        present = {entry.name for entry in os.scandir(local)}  # one listing, not one mkdir per class
        for name in sorted(set(names) - present):
            try:
                os.mkdir(os.path.join(local, name))
            except FileExistsError:
                pass



_class_folders_made: set = set()
"""``(release directory, parent)`` of the folders of classes this worker process made
(:func:`make_class_folders_once`)."""


def make_class_folders_once(output_dir: str, folder: str, names: Sequence[str]) -> None:
    """Before the first file of a folder of classes (the parent of ``folder``), make all its class
    folders, once per worker process (:func:`make_class_folders`): the release holds them all
    anyway, and the outputs of a subset, most of them the first of their class in their config,
    then find their folder made instead of each failing to create its file, making its folder and
    trying again. The tree's per-config step makes any that are still missing."""
    key = (output_dir, folder.rpartition("/")[0])
    if key not in _class_folders_made:
        make_class_folders(output_dir, [folder], names)
        _class_folders_made.add(key)

def release_label_names(root: str, listed: Iterable[str]) -> tuple:
    """The class names of a release: the lines of its first listed ``tfds/.../label.labels.txt``,
    or without TFDS records ``release.json``'s ``class_names`` (empty when it has neither)."""
    files = sorted(p for p in listed if p.startswith(f"{TFDS_DIR}/") and p.endswith(f"/{LABELS_FILE}"))
    if files:
        return tuple(storage.read_bytes(storage.join(root, files[0])).decode("utf-8").split())
    try:
        return tuple(read_release(root).class_names or ())
    except (OSError, ValueError):
        return ()


def expected_class_folders(root: str, listed: Iterable[str], tree: Optional[str] = None) -> set:
    """The class folders of a release's tree that hold no listed file (they must exist, empty).

    Parameters
    ----------
    root : str
        The release directory.
    listed : iterable of str
        The paths ``SHA256SUMS`` lists (held in memory: for a release of millions of files,
        :func:`listed_class_folders` reads them from its table).
    tree : str, optional
        The tree folder (default: ``release.json``'s ``tree``; none: no class folders).
    """
    listed = list(listed)
    tree = _release_tree(root) if tree is None else tree
    holding = {p.rpartition("/")[0] for p in listed if p.startswith(f"{tree}/")} if tree else set()
    return _empty_class_folders(root, tree, listed, holding, holding.__contains__)


def listed_class_folders(root: str, listed: ChecksumTable, tree: Optional[str] = None) -> set:
    """:func:`expected_class_folders` from the table of a release's ``SHA256SUMS``, by its queries:
    what is in memory is the folders of classes and the empty class folders, not the listed paths.

    Parameters
    ----------
    root : str
        The release directory.
    listed : ChecksumTable
        Its ``SHA256SUMS`` (the paths that could point outside the release left out, as ``verify``
        leaves them out of the comparison with the tree).
    tree : str, optional
        The tree folder (default: ``release.json``'s ``tree``; none: no class folders).
    """
    tree = _release_tree(root) if tree is None else tree
    labels = (p for p in listed.under(f"{TFDS_DIR}/") if not unsafe_path(p))
    holding = listed.folders_holding(f"{tree}/") if tree else ()
    return _empty_class_folders(root, tree, labels, holding, listed.holds_files)


def _empty_class_folders(root: str, tree: Optional[str], listed: Iterable[str], holding: Iterable[str],
                         holds: Callable[[str], bool]) -> set:
    """The class folders of ``tree`` for which ``holds`` is false, the parents of class folders
    found among ``holding`` (the folders of the tree a listed file lies in, read once), the class
    names from the labels file among ``listed``."""
    if not tree:
        return set()
    names = release_label_names(root, listed)
    return {folder for parent in sorted(class_folder_parents(holding, names))
            for folder in class_folders((parent,), names) if not holds(folder)}


def _release_tree(root: str) -> Optional[str]:
    try:
        return read_release(root).tree
    except (OSError, ValueError):
        return None
