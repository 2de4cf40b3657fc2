"""What ``evaluate`` reads from a release, for every benchmark and edition, through
:mod:`pipelines.formats.storage` (a local disk, ``s3://``, ``gs://``).

ImageNet-C, any edition (the edition and its layout from ``release.json``'s tree, or, for an
official download without one, from the tree folder it holds):

- JPEG trees ``<tree>/<corruption>/<severity>/<wnid>/<file>`` and the clean config
  ``<tree>/clean/<wnid>/<file>``; labels index the sorted 1000 ImageNet wnids or, for Tiny
  ImageNet, the release's class list (``tfds/.../label.labels.txt``; the sorted class folders of
  the first condition of an official download);
- ``.npy`` trees (CIFAR) ``<tree>/<corruption>.npy`` + ``labels.npy``: rows in blocks of N per
  severity, severity 1 first (the severities of ``release.json``, all five for an official
  download), and ``clean.npy`` (one block of N rows); keys are the row in the block, ``%05d``;
- TFDS records ``tfds/<dataset>/<config>/<version>/<dataset>-<split>.tfrecord-*`` read with
  :mod:`pipelines.formats.tfrecord` (CRCs checked, no TensorFlow): the key is
  ``<class of label>/<base name of file_name>`` as in the tree, or the example's index where the
  examples have no file name (CIFAR).

ImageNet-A / -O: ``imagenet-a/<wnid>/<file>`` (package-a), ``imagenet-o/<wnid>/<file>``
(package-o), and ImageNet-O's in-distribution images (:func:`in_distribution`). ImageNet-P: :mod:`pipelines.evaluation.p_sequences`.
"""
from __future__ import annotations

import io
import os
from typing import Mapping, NamedTuple, Optional

import numpy as np

from schemas.adversarial import A_TREE, TASKS
from schemas.class_subsets import subset_indices
from schemas.edition import DEFAULT_EDITION, IMAGENET_LABELS, NPY, Edition, Layout
from schemas.editions import EDITIONS, release_identity
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.imagenet_val import IMAGE_EXTENSIONS
from schemas.release import CLEAN, MANIFEST_DIR, RELEASE_JSON, TFDS_DIR, CSettings, Release
from schemas.wnids import imagenet_wnids, wnid_to_label

from pipelines.formats import storage
from pipelines.formats.manifests import read_manifest_part
from pipelines.formats.release_document import read_release
from pipelines.formats.tfrecord import decode_example, iter_records

SOURCES = ("auto", "tree", "tfds")
"""Where ImageNet-C images are read: the tree (JPEG or ``.npy``), the TFDS records, or the tree when present."""


class CRelease(NamedTuple):
    """The ImageNet-C side of a release: its edition, layout and severities (``release.json``'s)."""

    edition: Edition
    layout: Layout
    severities: tuple


class CConfig(NamedTuple):
    """One condition to evaluate: ``clean`` or ``<corruption>_<severity>``, and where it lies.

    ``kind`` is ``'tree'`` (``location`` a folder of ``<class>/<file>``), ``'npy'`` (``location``
    the array, rows ``block * N ... (block + 1) * N`` of ``blocks`` blocks) or ``'tfds'``
    (``location`` the config's version folder).
    """

    name: str
    kind: str
    location: str
    block: int = 0
    blocks: int = 1


def release_document(release_dir: str) -> Optional[Release]:
    """``release.json`` of a release, None without one."""
    return read_release(release_dir) if storage.exists(storage.join(release_dir, RELEASE_JSON)) else None


def parse_config(name: str) -> tuple[str, int]:
    """``"fog_3"`` -> ``("fog", 3)``.

    Raises
    ------
    ValueError
        If ``name`` is not ``<corruption>_<severity>`` with a known corruption and severity 1..5.
    """
    corruption, _, severity = name.rpartition("_")
    if corruption not in CORRUPTIONS or severity not in {str(s) for s in SEVERITIES}:
        raise ValueError(f"{name!r} is not <corruption>_<severity> (severity 1..5, corruption one of "
                         f"{', '.join(CORRUPTIONS)})")
    return corruption, int(severity)


def check_config(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is ``clean`` or ``<corruption>_<severity>``."""
    if name != CLEAN:
        parse_config(name)


def release_tree(release_dir: str, document: Optional[Release], trees: Mapping[str, str]) -> Optional[tuple[str, str]]:
    """``(tree, edition name)`` of a release's data among ``trees`` (tree folder -> the edition
    whose tree it is): the tree ``release.json`` names, with the edition it names
    (:func:`schemas.editions.release_identity`; the tree's own where it names none that has that
    tree); else the first of ``trees`` whose folder is present (an official download without
    ``release.json``); else None. The one way evaluation finds a release's edition."""
    if document is not None and document.tree in trees:
        try:
            named = release_identity(document).edition
        except ValueError:
            named = None
        return document.tree, named if trees.get(document.tree) == named else trees[document.tree]
    return next(((tree, name) for tree, name in trees.items() if storage.is_folder(storage.join(release_dir, tree))),
                None)


def _c_trees() -> dict[str, str]:
    """C tree folder -> its edition, for every registered edition."""
    return {layout.tree: name for name, edition in EDITIONS.items() if edition.c is not None
            for layout in edition.c.layouts.values()}


def c_release(release_dir: str) -> CRelease:
    """The edition, layout and severities of a release's ImageNet-C data (:func:`release_tree`);
    the 224 edition's layout where it has no C tree."""
    document = release_document(release_dir)
    settings = document.config if document is not None else None
    severities = tuple(settings.severities if isinstance(settings, CSettings) and settings.severities is not None
                       else SEVERITIES)
    found = release_tree(release_dir, document, _c_trees())
    if found is None:
        edition = EDITIONS[DEFAULT_EDITION]
        return CRelease(edition, edition.c.layout(), tuple(SEVERITIES))
    tree, name = found
    edition = EDITIONS[name]
    return CRelease(edition, next(layout for layout in edition.c.layouts.values() if layout.tree == tree), severities)


def _jpeg_tree_configs(root: str) -> list[CConfig]:
    configs = []
    for corruption in storage.list_folders(root):
        if corruption == CLEAN:
            configs.append(CConfig(CLEAN, "tree", storage.join(root, CLEAN)))
            continue
        for severity in storage.list_folders(storage.join(root, corruption)):
            name = f"{corruption}_{severity}"
            parse_config(name)
            configs.append(CConfig(name, "tree", storage.join(root, f"{corruption}/{severity}")))
    return configs


def _npy_tree_configs(root: str, c: CRelease) -> list[CConfig]:
    present = {storage.basename(path) for path in storage.match(storage.join(root, "*.npy"))}
    configs = []
    clean = c.layout.clean_template
    if clean in present:
        configs.append(CConfig(CLEAN, "npy", storage.join(root, clean)))  # one block of N rows
    for corruption in CORRUPTIONS:
        entry = c.layout.corruption_entry(corruption)
        if entry in present:
            configs += [CConfig(f"{corruption}_{s}", "npy", storage.join(root, entry), block, len(c.severities))
                        for block, s in enumerate(c.severities)]
    return configs


def tree_configs(release_dir: str, c: CRelease) -> list[CConfig]:
    """The clean config (where the release has one) and every corruption and severity of the
    tree, sorted by name for JPEG trees, in corruption order for ``.npy`` trees.

    Raises
    ------
    ValueError
        On a JPEG tree folder that is not ``clean`` or ``<corruption>/<severity>``.
    """
    root = storage.join(release_dir, c.layout.tree)
    if not storage.is_folder(root):
        return []
    return _npy_tree_configs(root, c) if c.edition.c.encoding == NPY else _jpeg_tree_configs(root)


def tfds_configs(release_dir: str, c: CRelease) -> list[CConfig]:
    """Every TFDS config of the layout's dataset in the release (``clean`` included), sorted.

    Raises
    ------
    ValueError
        On a config that is neither ``clean`` nor one of the layout's ``<corruption>_<severity>``.
    """
    names = {c.layout.tfds.config(corruption, s): f"{corruption}_{s}" for corruption in CORRUPTIONS
             for s in SEVERITIES}
    names[CLEAN] = CLEAN
    configs = []
    for info in storage.match(storage.join(release_dir, f"{TFDS_DIR}/{c.layout.tfds.dataset}/*/*/dataset_info.json")):
        version_dir = storage.parent(info)
        config = storage.basename(storage.parent(version_dir))
        if config not in names:
            raise ValueError(f"{version_dir}: {config!r} is no config of {c.layout.tfds.dataset} (clean or "
                             "<corruption>_<severity>)")
        configs.append(CConfig(names[config], "tfds", version_dir))
    return sorted(configs)


def c_configs(release_dir: str, c: CRelease, source: str = "auto") -> list[CConfig]:
    """The conditions to evaluate from ``source`` (one of :data:`SOURCES`; ``auto``: the tree when
    it holds any, else the TFDS records)."""
    if source not in SOURCES:
        raise ValueError(f"source must be {', '.join(SOURCES)}; got {source!r}")
    configs = tree_configs(release_dir, c) if source != "tfds" else []
    return configs if configs or source == "tree" else tfds_configs(release_dir, c)


def tree_labels(release_dir: str, c: CRelease) -> dict:
    """class folder -> label of a JPEG tree: ImageNet's 1000 wnids, or the release's class list
    (its TFDS ``label.labels.txt``; the sorted class folders of the first condition without one)."""
    if c.edition.c.encoding == NPY:
        return {}
    if c.layout.label_space == IMAGENET_LABELS:
        return dict(wnid_to_label())
    pattern = storage.join(release_dir, f"{TFDS_DIR}/{c.layout.tfds.dataset}/*/*/label.labels.txt")
    for labels_file in storage.match(pattern):
        return {w: i for i, w in enumerate(storage.read_bytes(labels_file).decode().split())}
    first = next((config for config in tree_configs(release_dir, c) if config.name != CLEAN), None)
    return {w: i for i, w in enumerate(storage.list_folders(first.location))} if first else {}


def _tfds_classes(version_dir: str) -> tuple:
    found = storage.match(storage.join(version_dir, "label.labels.txt"))
    return tuple(storage.read_bytes(found[0]).decode().split()) if found else imagenet_wnids()


def npy_header(path: str) -> tuple[int, tuple, np.dtype]:
    """``(offset of the first row, shape, dtype)`` of a C-ordered ``.npy`` file, from its header."""
    head = storage.read_bytes(path, 0, 12)
    stream = io.BytesIO(head)
    major, _ = np.lib.format.read_magic(stream)
    length = int.from_bytes(head[8:10] if major == 1 else head[8:12], "little")
    start = 10 if major == 1 else 12
    stream = io.BytesIO(storage.read_bytes(path, 0, start + length))
    np.lib.format.read_magic(stream)
    shape, fortran, dtype = (np.lib.format.read_array_header_1_0(stream) if major == 1
                             else np.lib.format.read_array_header_2_0(stream))
    if fortran:
        raise ValueError(f"{path}: a Fortran-ordered array; expected the rows in C order")
    return start + length, tuple(shape), dtype


def read_npy_rows(path: str, first: int, count: int) -> np.ndarray:
    """Rows ``first ... first + count`` of a ``.npy`` file, read as one range (any file system)."""
    offset, shape, dtype = npy_header(path)
    if first + count > shape[0]:
        raise ValueError(f"{path}: rows {first}..{first + count} asked of {shape[0]}")
    row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    data = storage.read_bytes(path, offset + first * row, count * row)
    return np.frombuffer(data, dtype=dtype).reshape((count, *shape[1:]))


def read_npy(path: str) -> np.ndarray:
    """A whole (small) ``.npy`` file, e.g. ``labels.npy``."""
    return np.load(io.BytesIO(storage.read_bytes(path)), allow_pickle=False)


def labelled_paths(folder: str, suffix: str | None = None, labels: Optional[dict] = None):
    """Yield ``(key, label, path)`` for each ``<class>/<file>`` under ``folder`` (any file system),
    sorted by key; ``labels`` maps class folders to labels (the 1000 ImageNet wnids by default).

    Raises
    ------
    ValueError
        On a class folder outside ``labels``.
    """
    labels = wnid_to_label() if labels is None else labels
    for relative in storage.list_tree(folder):
        wnid, _, name = relative.partition("/")
        if wnid not in labels:
            raise ValueError(f"{storage.join(folder, wnid)}: {wnid!r} is not one of the edition's classes")
        if suffix is None or name.endswith(suffix):
            yield relative, labels[wnid], storage.join(folder, relative)


def _tree_files(config: CConfig, labels: dict):
    for key, label, path in labelled_paths(config.location, labels=labels):
        yield (config.name, key, label), path


def manifest_files(config: CConfig, release_dir: str, c: CRelease, labels: dict):
    """The ``((config, key, label), path)`` of a JPEG tree condition read from the release's
    manifest part ``manifest/<config>.jsonl``, which holds every file of the condition in key
    order: one file read instead of a walk of the condition's class folders (a build makes all
    of them, most empty). The labels come from the class folders, as the walk gives them.

    Returns None (walk the tree) when the release has no ``release.json``, or it names another
    tree or no such manifest part, or ``config`` lies elsewhere.

    Raises
    ------
    ValueError
        On a row outside the condition's folder, or of a class folder outside the edition's classes.
    """
    document = release_document(release_dir)
    part = f"{MANIFEST_DIR}/{config.name}.jsonl"
    if document is None or document.tree != c.layout.tree or part not in document.manifest_parts:
        return None
    folder = f"{c.layout.tree}/{CLEAN}" if config.name == CLEAN else "{}/{}/{}".format(
        c.layout.tree, *parse_config(config.name))
    if storage.join(release_dir, folder) != config.location:
        return None
    return _manifest_rows(config, release_dir, part, folder, labels)


def _manifest_rows(config: CConfig, release_dir: str, part: str, folder: str, labels: dict):
    for number, record in enumerate(read_manifest_part(release_dir, part), 1):
        path = record.path
        key = path[len(folder) + 1:]
        wnid, _, name = key.partition("/")
        if not path.startswith(folder + "/") or not name or "/" in name:
            raise ValueError(f"{part} line {number}: {path} is not a file of {folder}/<class>/")
        if wnid not in labels:
            raise ValueError(f"{storage.join(config.location, wnid)}: {wnid!r} is not one of the edition's classes")
        yield (config.name, key, labels[wnid]), storage.join(release_dir, path)


def _npy_rows(config: CConfig, labels_path: str):
    labels = read_npy(labels_path)
    _, shape, _ = npy_header(config.location)
    if config.name == CLEAN:  # clean.npy: N rows; labels.npy holds the N labels once per severity
        if not shape[0] or len(labels) % shape[0]:
            raise ValueError(f"{config.location}: {shape[0]} clean rows for {len(labels)} labels")
    elif shape[0] != len(labels) or len(labels) % config.blocks:
        raise ValueError(f"{config.location}: {shape[0]} rows for {len(labels)} labels in {config.blocks} severities")
    n = shape[0] // config.blocks
    for i in range(n):
        yield (config.name, f"{i:05d}", int(labels[config.block * n + i])), RowLocator(config.location,
                                                                                     config.block * n + i)


def _tfds_records(config: CConfig, split: str):
    classes = _tfds_classes(config.location)
    index = 0
    for shard in storage.match(storage.join(config.location, f"*-{split}.tfrecord-*")):
        with storage.open_stream(shard) as stream:
            for offset, data in iter_records(stream):
                example = decode_example(data)
                label = int(example["label"][0])
                key = (f"{classes[label]}/{os.path.basename(example['file_name'][0].decode())}"
                       if example.get("file_name") else f"{index:05d}")  # CIFAR: the row, as in the .npy block
                index += 1
                yield (config.name, key, label), RecordLocator(shard, offset, len(data))


class RecordLocator(NamedTuple):
    """Where one TFDS example is: its shard file and the byte range of the record's data (CRCs
    checked when it was listed)."""

    path: str
    offset: int
    length: int


class RowLocator(NamedTuple):
    """One row of a ``.npy`` file."""

    path: str
    row: int


def read_located(item):
    """The image a listed item locates: a path's file bytes (any file system), the encoded
    ``image`` of a TFDS record (:class:`RecordLocator`), a ``.npy`` row (:class:`RowLocator`); other
    items (bytes, arrays) as they are."""
    if isinstance(item, str):
        return storage.read_bytes(item)
    if isinstance(item, RecordLocator):
        return decode_example(storage.read_bytes(item.path, item.offset, item.length))["image"][0]
    if isinstance(item, RowLocator):
        return read_npy_rows(item.path, item.row, 1)[0]
    return item


def c_examples(config: CConfig, release_dir: str, c: CRelease, labels: dict):
    """Yield ``((config, key, label), item)`` of one condition: ``item`` locates the image, which a
    worker reads (:func:`read_located`): a file path (JPEG trees: listed from the release's manifest,
    :func:`manifest_files`, else by a walk of the tree), a :class:`RowLocator` (``.npy``
    rows) or a :class:`RecordLocator` (TFDS). A listing holds no pixels.

    Raises
    ------
    ValueError
        On a class folder outside the edition's classes, or an array that disagrees with its labels.
    """
    if config.kind == "tree":
        listed = manifest_files(config, release_dir, c, labels)
        yield from _tree_files(config, labels) if listed is None else listed
    elif config.kind == "npy":
        yield from _npy_rows(config, storage.join(release_dir, f"{c.layout.tree}/{c.layout.labels_file}"))
    else:
        yield from _tfds_records(config, c.layout.tfds.split)


ADVERSARIAL_TASKS = {task.tree: task for task in TASKS.values()}
"""Tree of a packaged set (package-a / package-o) -> its task (``name`` is its 200-class subset)."""


def adversarial_files(release_dir: str, tree: str = A_TREE) -> list:
    """``[(key '<wnid>/<file>', label, path)]`` of a packaged ImageNet-A or -O tree, sorted by key.

    Raises
    ------
    ValueError
        On a class folder outside the tree's 200 classes, or an empty tree.
    """
    root = storage.join(release_dir, tree)
    allowed = set(subset_indices(ADVERSARIAL_TASKS[tree].name).tolist())
    files = []
    for relative in storage.list_tree(root):
        folder, _, name = relative.partition("/")
        if not name or "/" in name:
            continue
        if wnid_to_label().get(folder) not in allowed:
            raise ValueError(f"{storage.join(root, folder)}: not one of the 200 {ADVERSARIAL_TASKS[tree].dataset_title} classes")
        if os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS:
            files.append((relative, wnid_to_label()[folder], storage.join(root, relative)))
    if not files:
        raise ValueError(f"{root} holds no images")
    return files


def adversarial_tree(release_dir: str) -> Optional[str]:
    """The packaged set a release holds (``imagenet-a`` or ``imagenet-o``), None for another release."""
    return next((tree for tree in ADVERSARIAL_TASKS if storage.is_folder(storage.join(release_dir, tree))), None)


class InDistribution(NamedTuple):
    """The in-distribution images of an ImageNet-O evaluation: ``items`` ``[(key, label, item)]``
    sorted by key (``item`` a path, an encoded image or a :class:`schemas.records.SourceEntry`),
    ``kind`` (``'clean_config'``, or the listing's ``'folder'`` / ``'tar'`` / ``'tfds'``),
    ``listed`` (images of any class found) and ``unusable`` (files the listing refused)."""

    items: list
    kind: str
    listed: int
    unusable: int


def _clean_config_items(path: str) -> Optional[tuple]:
    """``[(key, label, item)]`` of a release's clean config; None when ``path`` holds no ImageNet-C release."""
    c = c_release(path)
    configs = c_configs(path, c)
    if not configs:
        return None
    if not c.edition.scoring.in_distribution:
        raise ValueError(f"{path}: a {c.edition.name} release; ImageNet-O is scored against 224 ImageNet images")
    clean = [config for config in configs if config.name == CLEAN]
    if not clean:
        raise ValueError(f"{path}: the release has no clean config to take in-distribution images from")
    return [(key, label, item) for (_, key, label), item in c_examples(clean[0], path, c, tree_labels(path, c))]


def in_distribution(path: str, subset: str = "imagenet_o") -> InDistribution:
    """The images of ``subset``'s 200 classes in an ImageNet val input (a folder or tar, listed by
    :func:`pipelines.inputs.listing.index_source`) or in a release's clean config.

    Raises
    ------
    ValueError
        When the input holds no image of the 200 classes, or cannot be listed (one line).
    """
    from pipelines.inputs.listing import index_source

    items = _clean_config_items(path)
    kind, unusable = "clean_config", 0
    if items is None:
        index = index_source(path)
        kind, unusable = index.kind, len(index.failures)
        items = [(entry.key, entry.label, entry) for entry in index.entries]
    allowed = set(subset_indices(subset).tolist())
    kept = sorted((item for item in items if item[1] in allowed), key=lambda item: item[0])
    if not kept:
        raise ValueError(f"--in-distribution {path}: no image of the 200 ImageNet-O classes among the "
                         f"{len(items)} listed")
    return InDistribution(kept, kind, len(items), unusable)


__all__ = ["ADVERSARIAL_TASKS", "CConfig", "CRelease", "InDistribution", "SOURCES", "RecordLocator", "RowLocator",
           "read_located", "adversarial_files",
           "adversarial_tree", "c_configs", "c_examples", "c_release", "check_config", "in_distribution", "labelled_paths", "manifest_files", "npy_header", "parse_config", "read_npy", "read_npy_rows",
           "release_document", "release_tree", "tfds_configs", "tree_configs", "tree_labels"]
