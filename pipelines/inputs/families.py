"""Every source family an edition reads, listed by one function (:func:`open_input`).

- ImageNet val (``imagenet``: a folder, a tar or a prepared TFDS ``imagenet2012``; the listing is
  :func:`pipelines.inputs.listing.index_source`);
- Tiny ImageNet: the ``tiny-imagenet-200`` folder (or its ``val`` folder):
  ``val/images/<file>.JPEG`` labelled by ``val/val_annotations.txt`` (``<file>\\t<wnid>\\t...``);
  labels index the sorted ``wnids.txt`` (the sorted annotation wnids when it is absent).
- CIFAR: ``cifar-10-batches-py`` (or its ``test_batch``) and ``cifar-100-python`` (or its
  ``test``), the official pickles; labels are ``labels`` (CIFAR-10) or ``fine_labels``
  (CIFAR-100), in file order. The pickles are read with an unpickler that only builds dicts,
  lists, bytes and NumPy arrays. The driver stores each test image as a PNG in one stack file
  under ``DIR/.parts/`` (the workers read byte ranges of it, as of a tar), keyed ``NNNNN.png`` by
  its row so that key order is file order.

Without ``--input`` each family lists its bundled sample, written into ``DIR/.sample``.
:func:`open_input` reads the input once (the CIFAR pickles are unpickled there, Tiny ImageNet's
annotations read there) and learns the source family and class names the build needs before it
starts; :meth:`Input.list` lists it into the release folder once the build holds the folder.
"""
from __future__ import annotations

import io
import os
import pickle
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
from PIL import Image

from schemas.edition import Edition
from schemas.editions.cifar import CIFAR10_CLASSES
from schemas.records import Failure, Locator, SourceEntry
from schemas.release import PARTS_DIR, SAMPLE_DIR, is_safe_name

from pipelines.formats import storage
from pipelines.install.sample import SAMPLE_PHOTOGRAPHS, sample_arrays, write_sample
from pipelines.inputs.listing import SourceIndex, drop_duplicates, index_source, walk_folder

TINY_ROOT = "tiny-imagenet-200"
CIFAR10_ROOT, CIFAR10_TEST, CIFAR10_META = "cifar-10-batches-py", "test_batch", "batches.meta"
CIFAR100_ROOT, CIFAR100_TEST, CIFAR100_META = "cifar-100-python", "test", "meta"
CIFAR_SIDE = 32


#: Nominal CIFAR-10 classes of the sample photographs (order of :data:`pipelines.install.sample.SAMPLE_PHOTOGRAPHS`):
#: cat; espresso, camera and clock have no CIFAR class (ship, truck, truck); rocket and astronaut as
#: airplane; the two motorcycle views as automobile.
SAMPLE_CIFAR10_LABELS = (3, 8, 0, 0, 1, 1, 9, 9)

TINY_SAMPLE_JPEG_QUALITY = 95


@dataclass(frozen=True)
class ListedInput:
    """What the driver learns from an edition's input before the pipeline runs.

    Attributes
    ----------
    index : SourceIndex
        Entries (key order = the order of the released rows) and rejected files.
    family : str
        Source family: ``'imagenet'``, ``'tinyimagenet'``, ``'cifar10'`` or ``'cifar100'``.
    class_names : tuple of str, optional
        Class names in label order when the family defines them (Tiny ImageNet's wnids).
    """

    index: SourceIndex
    family: str
    class_names: Optional[tuple] = None


# --- CIFAR ------------------------------------------------------------------------------------

class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles only what the CIFAR pickles hold: containers, bytes and NumPy arrays."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a CIFAR pickle")
        return super().find_class(module, name)


def _load_pickle(path: str) -> dict:
    try:
        document = _ArrayUnpickler(io.BytesIO(storage.read_bytes(path)), encoding="bytes").load()
    except Exception as err:  # any malformed pickle: one clear line
        raise ValueError(f"{path}: not a CIFAR python pickle ({type(err).__name__}: {err})") from err
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a CIFAR python pickle (expected a dict)")
    return {k.decode("latin-1") if isinstance(k, bytes) else k: v for k, v in document.items()}


def cifar_test_file(path: str) -> tuple[str, str]:
    """``(test pickle, family)`` of a CIFAR input: the folder or the test file itself.

    Raises
    ------
    ValueError
        If neither ``test_batch`` (CIFAR-10) nor ``test`` (CIFAR-100) is found.
    """
    candidates = [(storage.join(path, CIFAR10_TEST), "cifar10"), (storage.join(path, CIFAR100_TEST), "cifar100"),
                  (storage.join(path, f"{CIFAR10_ROOT}/{CIFAR10_TEST}"), "cifar10"),
                  (storage.join(path, f"{CIFAR100_ROOT}/{CIFAR100_TEST}"), "cifar100")]
    if storage.is_local(path) and os.path.isfile(path):
        return path, "cifar100" if os.path.basename(path) == CIFAR100_TEST else "cifar10"
    for candidate, family in candidates:
        if storage.exists(candidate):
            return candidate, family
    raise ValueError(f"input {path!r}: expected cifar-10-batches-py/ (with {CIFAR10_TEST}) or "
                     f"cifar-100-python/ (with {CIFAR100_TEST}), the CIFAR python version")


def read_cifar(path: str) -> tuple[np.ndarray, list, tuple, str]:
    """The test set of a CIFAR pickle: ``(images uint8 (N, 32, 32, 3), labels, class names, family)``.

    Class names come from the ``batches.meta`` / ``meta`` pickle beside the test file (indices
    as text when it is absent).
    """
    test, family = cifar_test_file(path)
    document = _load_pickle(test)
    label_key = "labels" if "labels" in document else "fine_labels"
    if "data" not in document or label_key not in document:
        raise ValueError(f"{test}: a CIFAR test pickle has 'data' and 'labels' or 'fine_labels'")
    family = "cifar10" if label_key == "labels" else "cifar100"
    data = np.asarray(document["data"], dtype=np.uint8)
    labels = [int(v) for v in document[label_key]]
    if data.ndim != 2 or data.shape[1] != 3 * CIFAR_SIDE * CIFAR_SIDE or len(labels) != data.shape[0]:
        raise ValueError(f"{test}: 'data' must be (N, 3072) uint8 with one label per row, got {data.shape} "
                         f"and {len(labels)} labels")
    images = data.reshape(-1, 3, CIFAR_SIDE, CIFAR_SIDE).transpose(0, 2, 3, 1)
    meta_path = storage.join(storage.parent(test), CIFAR10_META if family == "cifar10" else CIFAR100_META)
    names_key = "label_names" if family == "cifar10" else "fine_label_names"
    names = tuple(str(i) for i in range(max(labels, default=-1) + 1))
    if storage.exists(meta_path):
        meta = _load_pickle(meta_path)
        if names_key in meta:
            names = tuple(n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in meta[names_key])
    return images, labels, names, family


def index_cifar(path: str, output_dir: str) -> ListedInput:
    """List a CIFAR test set: each image becomes a PNG in ``DIR/.parts/cifar/test.pngs``."""
    images, labels, names, family = read_cifar(path)
    return ListedInput(_index_cifar_arrays(images, labels, names, family, output_dir), family, names)


def _index_cifar_arrays(images: np.ndarray, labels: list, names: tuple, family: str, output_dir: str) -> SourceIndex:
    """The listing of a CIFAR test set read by :func:`read_cifar`, its PNG stack written."""
    from transforms import encode_png

    blobs = [encode_png(image) for image in images]
    relative = f"{PARTS_DIR}/cifar/test.pngs"
    storage.write_atomic(output_dir, relative, b"".join(blobs))
    stack = storage.join(output_dir, relative)
    entries, failures, offset = [], [], 0
    source_name = CIFAR10_TEST if family == "cifar10" else CIFAR100_TEST
    for row, (blob, label) in enumerate(zip(blobs, labels)):
        if not 0 <= label < len(names):
            failures.append(Failure(f"{row:05d}.png", f"{source_name}#{row}", "list",
                                    f"label {label} is outside 0..{len(names) - 1}"))
        else:
            entries.append(SourceEntry(key=f"{row:05d}.png", wnid=names[label], label=label,
                                       locator=Locator(stack, offset, len(blob)), source=f"{source_name}#{row}"))
        offset += len(blob)
    return SourceIndex("cifar", tuple(entries), tuple(failures))


def write_cifar10(folder: str, images: np.ndarray, labels: Sequence[int], file_names: Sequence[str],
                  batch_label: str) -> str:
    """Write ``folder/cifar-10-batches-py/{test_batch,batches.meta}`` in the official pickle format
    (protocol 2, byte keys) and return the CIFAR folder.

    Parameters
    ----------
    folder : str
        Where the ``cifar-10-batches-py`` folder is made.
    images : ndarray
        uint8 (N, 32, 32, 3) RGB; stored as the rows of ``data``, (N, 3072) channel-major.
    labels : sequence of int
        One class index in 0..9 per image (:data:`schemas.editions.cifar.CIFAR10_CLASSES`).
    file_names, batch_label : sequence of str, str
        The ``filenames`` and ``batch_label`` entries.
    """
    root = os.path.join(folder, CIFAR10_ROOT)
    os.makedirs(root, exist_ok=True)
    data = np.ascontiguousarray(np.asarray(images, dtype=np.uint8).transpose(0, 3, 1, 2)).reshape(len(images), -1)
    batch = {b"batch_label": batch_label.encode(), b"labels": [int(label) for label in labels], b"data": data,
             b"filenames": [name.encode() for name in file_names]}
    with open(os.path.join(root, CIFAR10_TEST), "wb") as stream:
        pickle.dump(batch, stream, protocol=2)
    with open(os.path.join(root, CIFAR10_META), "wb") as stream:
        pickle.dump({b"label_names": [n.encode() for n in CIFAR10_CLASSES], b"num_vis": 3072,
                     b"num_cases_per_batch": len(images)}, stream, protocol=2)
    return root


def write_cifar_sample(folder: str) -> str:
    """Write ``folder/cifar-10-batches-py/{test_batch,batches.meta}`` from the sample photographs
    (centred square, BOX 32x32) in the official pickle format (:func:`write_cifar10`); return the
    CIFAR folder."""
    from transforms import preprocess

    images = np.stack([preprocess(image, edition="cifar") for _, image in sample_arrays()])
    names = [f"{function}_{index or 0}.png" for function, index in SAMPLE_PHOTOGRAPHS]
    return write_cifar10(folder, images, SAMPLE_CIFAR10_LABELS, names, "testing batch 1 of 1 (imagenet-cp sample)")


# --- Tiny ImageNet ----------------------------------------------------------------------------

def tiny_root(path: str) -> str:
    """The ``tiny-imagenet-200`` folder of an input (the folder itself, its ``val``, or its parent)."""
    for candidate in (path, storage.parent(path), storage.join(path, TINY_ROOT)):
        if os.path.isfile(os.path.join(candidate, "val", "val_annotations.txt")):
            return candidate
    raise ValueError(f"input {path!r}: expected the {TINY_ROOT} folder (val/images + val/val_annotations.txt)")


def index_tinyimagenet(path: str) -> ListedInput:
    """List Tiny ImageNet's validation images: ``<wnid>/<file>`` keys from ``val_annotations.txt``."""
    if not storage.is_local(path):
        raise ValueError(f"Tiny-ImageNet inputs must be local folders; got {path!r}")
    root = tiny_root(path)
    annotations, names = _tiny_annotations(root)
    return ListedInput(_index_tiny(root, annotations, names), "tinyimagenet", names)


def _index_tiny(root: str, annotations: dict, names: tuple) -> SourceIndex:
    """The listing of ``root/val/images`` labelled by ``annotations`` (:func:`_tiny_annotations`)."""
    labels = {w: i for i, w in enumerate(names)}
    entries, failures = [], []
    for item in walk_folder(os.path.join(root, "val", "images")):
        if isinstance(item, Failure):
            failures.append(item)
            continue
        name, locator = item
        source = f"val/images/{name}"
        wnid = annotations.get(name)
        if "/" in name or not is_safe_name(name):
            failures.append(Failure(source, source, "list", "unexpected file: expected val/images/<file>"))
        elif wnid is None:
            failures.append(Failure(source, source, "list", "not listed in val/val_annotations.txt"))
        elif wnid not in labels:
            failures.append(Failure(source, source, "list", f"class {wnid!r} is not in wnids.txt"))
        else:
            entries.append(SourceEntry(key=f"{wnid}/{name}", wnid=wnid, label=labels[wnid], locator=locator,
                                       source=source))
    entries, duplicates = drop_duplicates(entries)
    return SourceIndex("tinyimagenet", tuple(entries), tuple(failures + duplicates))


def write_tinyimagenet_sample(folder: str) -> str:
    """Write ``folder/tiny-imagenet-200`` (wnids.txt, val/images, val/val_annotations.txt) from the
    sample photographs (centred square, bilinear 64x64, JPEG q95); return that folder."""
    from transforms import preprocess

    root = os.path.join(folder, TINY_ROOT)
    os.makedirs(os.path.join(root, "val", "images"), exist_ok=True)
    lines = []
    for number, (wnid, image) in enumerate(sample_arrays()):
        name = f"val_{number}.JPEG"
        Image.fromarray(preprocess(image, edition="tinyimagenet")).save(
            os.path.join(root, "val", "images", name), format="JPEG", quality=TINY_SAMPLE_JPEG_QUALITY)
        lines.append(f"{name}\t{wnid}\t0\t0\t63\t63\n")
    with open(os.path.join(root, "val", "val_annotations.txt"), "w", encoding="utf-8") as stream:
        stream.writelines(lines)
    with open(os.path.join(root, "wnids.txt"), "w", encoding="utf-8") as stream:
        stream.writelines(f"{w}\n" for w in sorted(set(SAMPLE_PHOTOGRAPHS.values())))
    return root


# --- any edition ------------------------------------------------------------------------------

def sample_folder(output_dir: str) -> str:
    """Where a build without ``--input`` writes its bundled sample."""
    return storage.join(output_dir, SAMPLE_DIR)


@dataclass(frozen=True)
class Input:
    """An input read once, before the build: its family and class names, and how to list it.

    Attributes
    ----------
    family : str
        Source family: ``'imagenet'``, ``'tinyimagenet'``, ``'cifar10'`` or ``'cifar100'``.
    class_names : tuple of str, optional
        Class names in label order when the family defines them (Tiny ImageNet's wnids, CIFAR's names).
    path : str, optional
        The ``--input``; None for the bundled sample.
    """

    family: str
    class_names: Optional[tuple]
    path: Optional[str]
    _index: Callable[[str], SourceIndex]

    def list(self, output_dir: str) -> SourceIndex:
        """The listing (entries in key order, rejected files); ``output_dir`` receives the sample and
        the CIFAR image stack in its scratch folders. The sample's listing has kind ``'sample'``."""
        index = self._index(output_dir)
        if self.path is None:
            index = SourceIndex("sample", index.entries, index.failures)
        return index


def _open_imagenet(path: Optional[str]) -> Input:
    if path is None:
        return Input("imagenet", None, None,
                     lambda output_dir: index_source(write_sample(storage.join(sample_folder(output_dir), "val")),
                                                     "sample"))
    return Input("imagenet", None, path, lambda output_dir: index_source(path))


def _tiny_annotations(root: str) -> tuple[dict, tuple]:
    """``({file: wnid}, class names)`` of a ``tiny-imagenet-200`` folder."""
    annotations = {}
    with open(os.path.join(root, "val", "val_annotations.txt"), encoding="utf-8") as stream:
        for line in stream:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2 and fields[0]:
                annotations[fields[0]] = fields[1]
    wnids_file = os.path.join(root, "wnids.txt")
    if os.path.isfile(wnids_file):
        with open(wnids_file, encoding="utf-8") as stream:
            names = tuple(sorted({w.strip() for w in stream if w.strip()}))
    else:
        names = tuple(sorted(set(annotations.values())))
    return annotations, names


def _open_tinyimagenet(path: Optional[str]) -> Input:
    if path is None:
        return Input("tinyimagenet", tuple(sorted(set(SAMPLE_PHOTOGRAPHS.values()))), None,
                     lambda output_dir: index_tinyimagenet(write_tinyimagenet_sample(sample_folder(output_dir))).index)
    if not storage.is_local(path):
        raise ValueError(f"Tiny-ImageNet inputs must be local folders; got {path!r}")
    root = tiny_root(path)
    annotations, names = _tiny_annotations(root)
    return Input("tinyimagenet", names, path, lambda output_dir: _index_tiny(root, annotations, names))


def _open_cifar(path: Optional[str]) -> Input:
    if path is None:
        return Input("cifar10", CIFAR10_CLASSES, None,
                     lambda output_dir: index_cifar(write_cifar_sample(sample_folder(output_dir)), output_dir).index)
    images, labels, names, family = read_cifar(path)
    return Input(family, names, path, lambda output_dir: _index_cifar_arrays(images, labels, names, family,
                                                                           output_dir))


#: Source family -> how an input of it is opened (the families one reader serves share it).
OPENERS: Mapping[str, Callable[[Optional[str]], Input]] = {
    "imagenet": _open_imagenet, "tinyimagenet": _open_tinyimagenet, "cifar10": _open_cifar, "cifar100": _open_cifar}


def open_input(edition: Edition, path: Optional[str]) -> Input:
    """Read the input of ``edition`` once: its source family, class names and lister.

    Parameters
    ----------
    edition : Edition
        The edition built; its first source family chooses the reader (:data:`OPENERS`), and the
        input must be one of its ``sources``.
    path : str, optional
        The ``--input``; None: the edition's bundled sample.

    Raises
    ------
    ValueError
        If the input is not of the edition's kind (one line).
    """
    opened = OPENERS[edition.sources[0]](path)
    if opened.family not in edition.sources:
        raise ValueError(f"input {path!r} is {opened.family}, expected one of {', '.join(edition.sources)}")
    return opened


def list_input(edition: Edition, path: Optional[str], output_dir: str) -> ListedInput:
    """:func:`open_input`, then its listing into ``output_dir``: family, class names and entries."""
    opened = open_input(edition, path)
    return ListedInput(opened.list(output_dir), opened.family, opened.class_names)


__all__ = ["Input", "ListedInput", "OPENERS", "open_input", "list_input", "index_cifar", "index_tinyimagenet",
           "read_cifar", "write_cifar10", "write_cifar_sample", "write_tinyimagenet_sample", "cifar_test_file", "tiny_root",
           "sample_folder"]
