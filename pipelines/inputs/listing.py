"""ImageNet val inputs: list one ``--input`` into :class:`SourceEntry` records and read their bytes.

An input is one of

- a folder: ``<wnid>/<file>`` (the ImageNet validation layout), flat ``<file>`` named
  ``ILSVRC2012_val_NNNNNNNN.JPEG`` (labelled with TFDS's validation ground truth), or a mix;
- an uncompressed tar such as the original ``ILSVRC2012_img_val.tar`` (members laid out as a folder);
- a prepared TFDS ``imagenet2012`` (its ``validation`` split), given as the version folder holding
  ``dataset_info.json`` or as a TFDS data_dir.

The driver lists the input (:func:`index_source`): cheap for a folder or a tar (headers only); a
TFDS split is read once to learn each example's file name and label. Every file found ends either
as an entry or as a :class:`Failure` with a reason. Workers then read each entry's bytes
(:func:`read_entry`, run by :class:`pipelines.beam.sources.ReadImageNet`) from wherever the input lives.
The other source families (Tiny ImageNet, CIFAR) are in :mod:`pipelines.inputs.families`.
"""
from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import tarfile
import warnings
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from PIL import Image, UnidentifiedImageError

from schemas.imagenet_val import (IMAGE_EXTENSIONS, OFFICIAL_VAL_TAR, OFFICIAL_VAL_TAR_BYTES,
                                  OFFICIAL_VAL_TAR_SHA256, VALIDATION_IMAGES, validation_wnid)
from schemas.records import Failure, Locator, SourceEntry, SourceImage, escape_name
from schemas.release import PARTS_DIR, is_safe_name
from schemas.wnids import imagenet_wnids, wnid_to_label
from transforms.preprocess import HIGH_DEPTH_MODES, BadInput, check_pixels

from pipelines.formats import storage
from pipelines.formats.lists import write_entry_list
from pipelines.formats.tfrecord import TFRecordError, decode_example, iter_records

__all__ = ["SOURCE_KINDS", "TFDS_IMAGENET", "TFDS_SPLIT", "MAX_INPUT_BYTES", "SourceIndex", "NoUsableImages",
           "require_entries", "classify", "drop_duplicates", "os_reason", "walk_folder", "TAR_BLOCK", "walk_tar",
           "tfds_version_dir", "walk_tfds", "detect_kind", "index_source", "select_entries", "read_entry",
           "inspect_image", "source_note", "ENTRIES_PER_LIST", "MIN_ENTRY_LISTS", "write_entry_lists"]

SOURCE_KINDS = ("sample", "folder", "tar", "tfds")
TFDS_IMAGENET = "imagenet2012"
TFDS_SPLIT = "validation"

MAX_INPUT_BYTES = 512 << 20
"""Largest input file read (512 MiB, more than an uncompressed RGB image at Pillow's pixel limit);
a larger one is rejected when listed, before its bytes are read."""


@dataclass(frozen=True)
class SourceIndex:
    """What the driver found in an input: usable entries (sorted by key) and rejected files."""

    kind: str
    entries: tuple
    failures: tuple


class NoUsableImages(ValueError):
    """An input in which no file can be built; ``failures`` says why for each file found."""

    def __init__(self, path: str, failures: Sequence[Failure]):
        self.failures = tuple(failures)
        count = len(self.failures)
        super().__init__(f"no usable image in {path}: {count} file{'' if count == 1 else 's'} found, none can be built")


def require_entries(index: "SourceIndex", path: str) -> "SourceIndex":
    """``index`` itself, or :class:`NoUsableImages` when it has no entry."""
    if not index.entries:
        raise NoUsableImages(path, index.failures)
    return index


# --- classification ---------------------------------------------------------------------------

def _too_large(size: Optional[int]) -> bool:
    return size is not None and size > MAX_INPUT_BYTES


def classify(relative: str, locator: Locator, source: Optional[str] = None):
    """Turn a file's path relative to the input root into a :class:`SourceEntry`, or a
    :class:`Failure` saying why it cannot be one.

    ``<wnid>/<file>`` takes its class from the folder; ``<file>`` from the validation ground truth.
    ``source`` is where it is inside the input (default: ``relative``).
    """
    parts = relative.split("/")
    name = parts[-1]
    source = source or relative

    def failure(reason):
        return Failure(relative, source, "list", reason)

    if escape_name(relative) != relative:
        return failure("file or folder name is not UTF-8 (recorded with \\xNN escapes); rename it")
    if not all(is_safe_name(p) for p in parts):
        return failure("unsupported name: hidden, or with a control character or backslash")
    if os.path.splitext(name)[1].lower() not in IMAGE_EXTENSIONS:
        return failure(f"not an image file: the extension must be one of {', '.join(IMAGE_EXTENSIONS)}")
    if _too_large(locator.length):
        return failure(f"file of {locator.length:,} bytes: above the limit of {MAX_INPUT_BYTES:,} bytes per image")
    if len(parts) == 1:
        wnid = validation_wnid(name)
        if wnid is None:
            return failure("no ground truth: a file outside a class folder must be named "
                           "ILSVRC2012_val_NNNNNNNN.JPEG (NNNNNNNN in 1..50000)")
    elif len(parts) == 2:
        wnid = parts[0]
        if wnid not in wnid_to_label():
            return failure(f"class folder {wnid!r} is not one of the 1000 ImageNet wnids")
    else:
        return failure("nested too deep: expected <wnid>/<file> or <file>")
    return SourceEntry(key=f"{wnid}/{name}", wnid=wnid, label=wnid_to_label()[wnid], locator=locator,
                       source=source)


def drop_duplicates(entries: Iterable[SourceEntry]) -> tuple[list, list]:
    """Keep the first entry of each file name (compared case-insensitively, in key order).

    ImageNet file names are unique; a name seen twice (in two class folders, twice in a tar, or
    differing only in case, which would collide on a case-insensitive file system) is a duplicate.
    """
    kept, failures, first = [], [], {}
    for entry in sorted(entries, key=lambda e: (e.key, e.source)):
        seen = first.setdefault(entry.file_name.casefold(), entry)
        if seen is entry:
            kept.append(entry)
        else:
            failures.append(Failure(entry.key, entry.source, "list",
                                    f"duplicate file name: {seen.key} (from {seen.source}) is used"))
    return kept, failures


def _index(kind: str, found: Iterable) -> SourceIndex:
    """Classify ``(relative path, Locator[, source])`` items and failures into a :class:`SourceIndex`."""
    entries, failures = [], []
    for item in found:
        result = item if isinstance(item, Failure) else classify(*item)
        (failures if isinstance(result, Failure) else entries).append(result)
    entries, duplicates = drop_duplicates(entries)
    return SourceIndex(kind, tuple(entries), tuple(failures + duplicates))


# --- listing ----------------------------------------------------------------------------------

def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def os_reason(err: OSError) -> str:
    """``'permission denied'``-style text of an OSError, without its path or repr."""
    return (err.strerror or type(err).__name__).lower()


def walk_folder(root: str) -> Iterable:
    """Yield ``(relative path, Locator)`` for each regular file below a local folder, and a
    :class:`Failure` for each entry that is not a regular file, whose real path (after following
    symlinks) escapes the root, that is a symlink loop or a folder that cannot be listed. Sorted,
    so the listing is deterministic. Names that are not UTF-8 are recorded escaped
    (:func:`schemas.records.escape_name`).

    Raises
    ------
    ValueError
        If ``root`` itself cannot be listed.
    """
    real_root = os.path.realpath(root)
    visited = set()
    pending = [(root, "")]
    while pending:
        folder, relative = pending.pop()
        visited.add(os.path.realpath(folder))
        try:
            with os.scandir(folder) as scan:
                children = sorted(scan, key=lambda e: e.name, reverse=True)
        except OSError as err:
            if not relative:
                raise ValueError(f"cannot list the input folder {root}: {os_reason(err)}") from err
            yield Failure(relative, relative, "list", f"cannot list this folder: {os_reason(err)}")
            continue
        for child in children:
            rel = f"{relative}/{child.name}" if relative else child.name
            try:
                real = os.path.realpath(child.path)
                is_dir, is_file = child.is_dir(), child.is_file()
            except OSError as err:
                reason = ("symlink loop" if err.errno == errno.ELOOP else f"cannot read: {os_reason(err)}")
                yield Failure(rel, rel, "list", reason)
                continue
            if not _within(real, real_root):
                yield Failure(rel, rel, "list", "path escapes the input root (symlink to outside it)")
            elif is_dir:
                if real in visited:
                    yield Failure(rel, rel, "list", "symlink loop: folder already visited")
                else:
                    pending.append((child.path, rel))
            elif is_file:
                try:
                    size = child.stat().st_size
                except OSError as err:
                    yield Failure(rel, rel, "list", f"cannot read: {os_reason(err)}")
                    continue
                if _too_large(size):
                    yield Failure(rel, rel, "list", f"file of {size:,} bytes: above the limit of "
                                  f"{MAX_INPUT_BYTES:,} bytes per image")
                else:
                    yield rel, Locator(child.path)
            else:
                yield Failure(rel, rel, "list", "not a regular file (broken symlink, socket, device ...)")


TAR_BLOCK = 512
"""Bytes per tar block; an archive ends with two zero blocks (POSIX)."""


def _check_end_of_archive(stream, end: int, path: str) -> None:
    """Raise ValueError unless two zero blocks follow the last member (which ends at ``end``)."""
    stream.seek(end)
    marker = stream.read(2 * TAR_BLOCK)
    if len(marker) < 2 * TAR_BLOCK or marker.count(0) != len(marker):
        raise ValueError(f"{path}: truncated tar: no end-of-archive marker after the last member "
                         f"(which ends at byte {end}); the file is incomplete or damaged, download it again")


def _check_official_tar(path: str, stream, members: int) -> None:
    """Raise ValueError when ``ILSVRC2012_img_val.tar`` differs from the official archive."""
    advice = ("an incomplete download or another archive under the official name: download it again, "
              "or rename the file to build from it anyway")
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    if size != OFFICIAL_VAL_TAR_BYTES:
        raise ValueError(f"{path}: {size:,} bytes, but the official {OFFICIAL_VAL_TAR} has "
                         f"{OFFICIAL_VAL_TAR_BYTES:,} ({advice})")
    if members != VALIDATION_IMAGES:
        raise ValueError(f"{path}: {members:,} files, but the official {OFFICIAL_VAL_TAR} has "
                         f"{VALIDATION_IMAGES:,} ({advice})")
    stream.seek(0)
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    if digest.hexdigest() != OFFICIAL_VAL_TAR_SHA256:
        raise ValueError(f"{path}: SHA-256 {digest.hexdigest()}, but the official {OFFICIAL_VAL_TAR} has "
                         f"{OFFICIAL_VAL_TAR_SHA256} ({advice})")


def walk_tar(path: str) -> Iterable:
    """Yield ``(relative path, Locator)`` for each regular member of an uncompressed tar and a
    :class:`Failure` for links, devices and names that would escape the extraction root.

    The archive is read to its end-of-archive marker; a file named ``ILSVRC2012_img_val.tar`` must
    be the official archive (size, 50,000 members and SHA-256 checked).

    Raises
    ------
    ValueError
        If ``path`` is not an uncompressed tar, is truncated (cut inside a member or at a member
        header), or is named like the official archive but differs from it.
    """
    with storage.open_stream(path) as stream:
        try:
            archive = tarfile.open(fileobj=stream, mode="r:")
        except tarfile.TarError as err:
            raise ValueError(f"{path}: not an uncompressed tar ({err}); the official "
                             "ILSVRC2012_img_val.tar is one") from err
        end, members = 0, 0
        with archive:
            while True:
                try:
                    member = archive.next()
                except tarfile.TarError as err:
                    raise ValueError(f"{path}: truncated or damaged tar after byte {end} ({err}); "
                                     "the file is incomplete or damaged, download it again") from err
                if member is None:
                    break
                end = member.offset_data + -(-member.size // TAR_BLOCK) * TAR_BLOCK
                name = member.name[2:] if member.name.startswith("./") else member.name
                if member.isdir():
                    continue
                members += 1
                if name.startswith("/") or ".." in name.split("/"):
                    yield Failure(name, member.name, "list", "path escapes the input root (absolute or '..')")
                elif not member.isfile():
                    yield Failure(name, member.name, "list", "not a regular file (link or device member)")
                else:
                    yield name, Locator(path, member.offset_data, member.size, "tar"), member.name
            _check_end_of_archive(stream, end, path)
            if storage.basename(path) == OFFICIAL_VAL_TAR:
                _check_official_tar(path, stream, members)


def tfds_version_dir(path: str) -> Optional[str]:
    """The folder holding ``dataset_info.json`` of a prepared ``imagenet2012``: ``path`` itself,
    or the highest version under ``path/imagenet2012/``; None when there is none."""
    if storage.exists(storage.join(path, "dataset_info.json")):
        return path
    folders = [storage.parent(p) for p in storage.match(storage.join(path, f"{TFDS_IMAGENET}/*/dataset_info.json"))]

    def version(folder):
        return tuple(int(x) if x.isdigit() else -1 for x in storage.basename(folder).split("."))
    return max(folders, key=version) if folders else None


def walk_tfds(version_dir: str) -> Iterable:
    """Yield ``('<wnid>/<file_name>', Locator, '<shard>#<index>')`` for each example of the validation split of a
    prepared TFDS ``imagenet2012``, reading every shard once, and a :class:`Failure` for examples
    whose label or file name cannot be used.

    Raises
    ------
    ValueError
        If the folder has no validation split in TFRecord format.
    """
    info_path = storage.join(version_dir, "dataset_info.json")
    try:
        info = json.loads(storage.read_bytes(info_path))
        splits = {s["name"]: s for s in info.get("splits", [])}
        info["name"] + ""
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{info_path}: not a TFDS dataset_info.json ({type(err).__name__}: {err})") from err
    if TFDS_SPLIT not in splits or info.get("fileFormat", "tfrecord") != "tfrecord":
        raise ValueError(f"{version_dir}: no '{TFDS_SPLIT}' split in TFRecord format "
                         f"(splits: {', '.join(splits) or 'none'})")
    try:
        lengths = [int(n) for n in splits[TFDS_SPLIT].get("shardLengths", [])]
    except (TypeError, ValueError) as err:
        raise ValueError(f"{info_path}: shardLengths of '{TFDS_SPLIT}' are not integers") from err
    count = len(lengths)
    wnids = imagenet_wnids()
    for index, expected in enumerate(lengths):
        shard_name = f"{info['name']}-{TFDS_SPLIT}.tfrecord-{index:05d}-of-{count:05d}"
        shard = storage.join(version_dir, shard_name)
        number = 0
        try:
            with storage.open_stream(shard) as stream:
                for number, (offset, data) in enumerate(iter_records(stream), 1):
                    yield from _tfds_example(shard, shard_name, number - 1, offset, data, wnids)
        except TFRecordError as err:
            raise ValueError(f"{shard}: corrupt TFRecord shard after {number} records ({err}); "
                             "prepare the TFDS dataset again") from err
        except OSError as err:
            raise ValueError(f"{shard}: cannot read this TFDS shard: {os_reason(err)}") from err
        if number != expected:
            raise ValueError(f"{shard}: {number} records, but dataset_info.json lists {expected} "
                             "(an incomplete or replaced shard); prepare the TFDS dataset again")


def _tfds_example(shard: str, shard_name: str, number: int, offset: int, data: bytes, wnids) -> Iterable:
    """The listing of one TFDS example: ``(key, Locator, source)`` or a Failure."""
    source = f"{shard_name}#{number}"
    try:
        example = decode_example(data)
        label, name = example["label"][0], example["file_name"][0].decode("utf-8")
    except (TFRecordError, KeyError, IndexError, UnicodeDecodeError) as err:
        yield Failure(source, source, "list", f"unreadable example: {type(err).__name__}: {err}")
        return
    if not 0 <= label < len(wnids):
        yield Failure(name, source, "list", f"label {label} is outside 0..999")
    else:
        yield f"{wnids[label]}/{name}", Locator(shard, offset, len(data), "tfrecord"), source


def detect_kind(path: str) -> str:
    """``'tfds'``, ``'tar'`` or ``'folder'`` for an input path.

    Raises
    ------
    ValueError
        If ``path`` does not exist or is not one of the supported inputs.
    """
    if not storage.exists(path):
        raise ValueError(f"input {path!r} does not exist")
    if tfds_version_dir(path):
        return "tfds"
    if not storage.is_local(path) or os.path.isfile(path):
        if path.lower().endswith(".tar"):
            return "tar"
        raise ValueError(f"input {path!r}: expected a folder, a .tar file or a prepared TFDS imagenet2012")
    return "folder"


def index_source(path: str, kind: Optional[str] = None) -> SourceIndex:
    """List an input into a :class:`SourceIndex` (entries sorted by key, failures in listing order).

    Parameters
    ----------
    path : str
        The input (folder, tar or TFDS folder).
    kind : str, optional
        One of :data:`SOURCE_KINDS`; detected from ``path`` when None. ``'sample'`` is a folder.
    """
    kind = kind or detect_kind(path)
    if kind not in SOURCE_KINDS:
        raise ValueError(f"unknown source kind {kind!r}; valid kinds: {', '.join(SOURCE_KINDS)}")
    if kind in ("folder", "sample"):
        if not storage.is_local(path):
            raise ValueError(f"folder inputs must be local (or mounted); got {path!r}: use a tar or a TFDS folder")
        found = walk_folder(path)
    elif kind == "tar":
        found = walk_tar(path)
    else:
        version_dir = tfds_version_dir(path)
        if version_dir is None:
            raise ValueError(f"{path!r} holds no prepared TFDS {TFDS_IMAGENET} (no dataset_info.json)")
        found = walk_tfds(version_dir)
    return _index(kind, found)


def select_entries(index: SourceIndex, image_ids: Optional[Sequence[str]] = None,
                   limit: Optional[int] = None) -> SourceIndex:
    """Keep the entries named in ``image_ids`` (``<wnid>/<file>`` or ``<file>``), then the first
    ``limit`` in key order. Each requested id missing from the input becomes a failure."""
    entries, failures = list(index.entries), list(index.failures)
    if image_ids is not None:
        wanted = [i.strip() for i in image_ids if i.strip()]
        by_id = {e.key: e for e in entries} | {e.file_name: e for e in entries}
        failures += [Failure(i, "", "list", "listed in --image-ids but not in the input")
                     for i in wanted if i not in by_id]
        chosen = {by_id[i].key for i in wanted if i in by_id}
        entries = [e for e in entries if e.key in chosen]
    if limit is not None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        entries = entries[:limit]
    return SourceIndex(index.kind, tuple(entries), tuple(failures))


# --- reading ----------------------------------------------------------------------------------

def read_entry(entry: SourceEntry) -> bytes:
    """The encoded image of an entry, from a file, a tar member or a TFDS example.

    Raises
    ------
    OSError
        If the bytes cannot be read (the message says why).
    BadInput
        If a TFDS example is malformed or holds no image.
    """
    loc = entry.locator
    data = storage.read_bytes(loc.path, loc.offset, loc.length)
    if loc.container == "tfrecord":
        try:
            images = decode_example(data).get("image")
        except TFRecordError as err:
            raise BadInput(str(err)) from err
        if not images:
            raise BadInput("TFDS example has no 'image' feature")
        data = images[0]
    return data


def inspect_image(data: bytes) -> dict:
    """Format, mode and size of an encoded image, from its header (nothing decoded).

    Raises
    ------
    transforms.BadInput
        If Pillow cannot identify the data, or the image or its ``Resize(256)`` would exceed
        :data:`transforms.preprocess.MAX_PIXELS` pixels (Pillow's decompression-bomb limit; above
        twice it, Pillow refuses the header with its own message): the build records the image in
        ``failures.jsonl``.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # check_pixels says it below
            with Image.open(io.BytesIO(data)) as image:
                info = {"format": image.format, "mode": image.mode, "width": image.width, "height": image.height}
    except UnidentifiedImageError as err:  # its message holds a memory address: not reproducible
        raise BadInput("cannot decode image: not in any format Pillow reads") from err
    except (OSError, SyntaxError, Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise BadInput(f"cannot decode image: {err}") from err
    except Exception as err:  # any other decoder exception (NotImplementedError for some DDS ...)
        raise BadInput(f"cannot decode image: {type(err).__name__}: {err}") from err
    check_pixels(info["width"], info["height"])
    return info


def source_note(info: dict, file_name: str) -> str:
    """A note on an image that is built but is not a plain RGB JPEG ('' for a plain one)."""
    notes = []
    extension = os.path.splitext(file_name)[1].lower()
    if info["format"] != "JPEG" and extension in (".jpg", ".jpeg"):
        notes.append(f"{info['format']} data behind a {extension} name")
    if info["mode"] in HIGH_DEPTH_MODES:
        notes.append(f"{info['mode']} image scaled to 8 bits and converted to RGB")
    elif info["mode"] != "RGB":
        notes.append(f"{info['mode']} image converted to RGB")
    return "; ".join(notes)


ENTRIES_PER_LIST = 100
"""Most entries in one list file handed to the workers. The pipeline graph carries only the file
names, and the workers share the files, not the entries: the driver of a local runner holds what
it hands out, so it holds a few hundred names, not an element per image."""

MIN_ENTRY_LISTS = 64
"""Fewest list files (fewer only with fewer entries): enough for every worker of a machine or a
small cluster to get a share of a small build."""


def write_entry_lists(output_dir: str, entries: Sequence[SourceEntry], per_list: Optional[int] = None) -> list:
    """Write the entries as JSON-line files under ``DIR/.parts/entries/`` and return their paths.

    ``per_list`` entries in each (default: as many as make :data:`MIN_ENTRY_LISTS` files, at most
    :data:`ENTRIES_PER_LIST`)."""
    if per_list is None:
        per_list = min(ENTRIES_PER_LIST, max(1, math.ceil(len(entries) / MIN_ENTRY_LISTS)))
    return [write_entry_list(output_dir, f"{PARTS_DIR}/entries/{start // per_list:06d}.jsonl",
                             entries[start:start + per_list]) for start in range(0, len(entries), per_list)]
