"""Check what the loaders read against the manifests: TFDS records and ImageNet-P videos.

``SHA256SUMS`` proves that a file is the one listed; it cannot prove that the listed file is right
(a shard changed together with its line passes it). These checks read the data as the loaders do:

- every TFDS shard is read record by record, as TFRecord frames it (``uint64 length | masked
  crc32c(length) | data | masked crc32c(data)``): both CRCs are checked, the records must be the
  manifest rows that name the shard (in key order, one record each) with exactly the features its
  ``features.json`` declares, their ``label``, ``file_name`` (the input's file name; VCR's: the
  row's key) and ``delta_v`` (VCR), and the image each holds must have the row's SHA-256 (``sha256``: the tree's file; for the ``.npy``
  editions ``array_sha256``: its decoded pixels). A video record (ImageNet-P) holds the row's
  ``frames`` frames: with ``--tfds-frames lossless`` their pixels have the row's
  ``frames_sha256``, otherwise they are, pixel for pixel, the frames OpenCV decodes from the row's MP4;
- every ImageNet-P MP4 decodes (``cv2.VideoCapture``, as the reference evaluator) to the row's
  ``frames`` frames.

Each manifest part is read once, its rows in key order, each row that names a shard with that
shard's next record (a shard's records are its rows in key order): only the open shards and the
rows in flight are held. Each row is one task of a thread pool, and each sequence is decoded once
there: its MP4 (OpenCV) and its record's PNG frames, compared pixel for pixel; an MP4 whose
record is not read (no shard, a corrupted or short one) is decoded all the same.

The WebDataset shards are read once, by :func:`pipelines.formats.webdataset.check_release_shards`
(every sample, in order, against its config's manifest).

Each function returns a list of problems, one line each, naming the file and the record.
"""
from __future__ import annotations

import collections
import hashlib
import io
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Mapping, Optional

import numpy as np
from PIL import Image

from schemas.editions import release_identity
from schemas.release import VCR_BENCHMARK
from schemas.records import ManifestRecord
from schemas.release import PSettings, Release
from schemas.tfds import feature_names

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable
from pipelines.formats.manifests import read_manifest_part
from pipelines.formats.tfrecord import TFRecordError, decode_example, iter_records

__all__ = ["open_file", "sha256", "pixels_sha256", "IMAGE_DIGESTS", "TREE_BYTES", "image_digest",
           "part_config", "manifest_rows", "rows_by_shard", "shard_examples", "decode_checked",
           "check_loaded_data", "bounded_map", "IN_FLIGHT_PER_THREAD", "FEATURES_FILE", "CHECKED_FEATURES", "declared_features", "expected_file_name"]

FEATURES_FILE = "features.json"
"""The TFDS file beside a config's shards that declares its features."""

CHECKED_FEATURES = frozenset({"image", "video", "label", "file_name", "delta_v"})
"""The features a record is checked on against its manifest row (every feature a release writes)."""


def open_file(path: str):
    """A release file for reading: a local one without following a link (``O_NOFOLLOW``)."""
    if storage.is_local(path):
        return os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb")
    return storage.open_stream(path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pixels_sha256(encoded: bytes) -> str:
    """SHA-256 of the uint8 pixels of an encoded image (the manifests' ``array_sha256``)."""
    with Image.open(io.BytesIO(encoded)) as image:
        return sha256(np.asarray(image).tobytes())


#: release.json ``encoding`` -> (digest of a stored image's bytes, the manifest field it must equal);
#: every other release stores the tree's own bytes.
IMAGE_DIGESTS: Mapping[str, tuple[Callable[[bytes], str], str]] = {"npy": (pixels_sha256, "array_sha256")}
TREE_BYTES = (sha256, "sha256")


def image_digest(release: Release) -> tuple[Callable[[bytes], str], str]:
    """How the image bytes a loader reads are checked against a manifest row."""
    return IMAGE_DIGESTS.get(release.encoding, TREE_BYTES)


def part_config(part: str) -> str:
    """The config of a manifest part: ``manifest/fog_3.jsonl`` -> ``fog_3``."""
    return posixpath.basename(part)[:-len(".jsonl")]


def manifest_rows(root: str, release: Release) -> Iterator[ManifestRecord]:
    """Every manifest row of the release, part after part (each part sorted by key)."""
    for part in release.manifest_parts:
        yield from read_manifest_part(root, part)


def rows_by_shard(rows) -> dict[str, list]:
    """{TFDS shard: its manifest rows in key order}, the order of the shard's records."""
    shards: dict[str, list] = {}
    for row in rows:
        if row.shard is not None:
            shards.setdefault(row.shard, []).append(row)
    return {shard: sorted(found, key=lambda r: r.key) for shard, found in shards.items()}


def shard_examples(root: str, shard: str) -> Iterator[dict]:
    """The decoded ``tf.train.Example`` of every record of a shard, in order (CRCs checked)."""
    with open_file(storage.join(root, shard)) as stream:
        for _, data in iter_records(stream):
            yield decode_example(data)


def declared_features(root: str, shard: str) -> Optional[frozenset]:
    """The feature names the ``features.json`` beside a shard declares (None when it has none)."""
    path = storage.join(root, posixpath.join(posixpath.dirname(shard), FEATURES_FILE))
    if not storage.exists(path):
        return None
    return feature_names(storage.read_bytes(path))


def expected_file_name(row: ManifestRecord, release: Release) -> str:
    """The ``file_name`` feature of a row's record: VCR's output key, else the input's file name."""
    if tuple(release_identity(release))[1] == VCR_BENCHMARK:
        return row.key
    return posixpath.basename(row.value("image_key") or row.key)


def _feature_problems(example: dict, row: ManifestRecord, release: Release, declared: Optional[frozenset]) -> list[str]:
    """The features of a record against ``features.json`` and the manifest row: the set of names,
    ``file_name`` and ``delta_v`` (label, image and video: :func:`_record_problems`)."""
    problems = []
    names = frozenset(example)
    if declared is not None and names != declared:
        for name in sorted(declared - names):
            problems.append(f"lacks the feature {name!r} that {FEATURES_FILE} declares")
        for name in sorted(names - declared):
            problems.append(f"holds the feature {name!r} that {FEATURES_FILE} does not declare")
    unknown = sorted(names - CHECKED_FEATURES)
    problems += [f"feature {name!r} has no check against the manifest" for name in unknown]
    if "file_name" in example:
        found = example["file_name"][0].decode("utf-8", "backslashreplace")
        expected = expected_file_name(row, release)
        if found != expected:
            problems.append(f"file_name {found!r}, the manifest {expected!r}")
    if "delta_v" in example:
        expected = row.value("delta_v")
        if expected is None or np.float32(example["delta_v"][0]) != np.float32(expected):
            problems.append(f"delta_v {example['delta_v'][0]!r}, the manifest {expected!r}")
    return problems


def _record_problems(example: dict, row: ManifestRecord, release: Release, video: Optional[np.ndarray],
                     declared: Optional[frozenset] = None) -> list[str]:
    """What is wrong with one TFDS record, read as ``row`` of the manifest: every feature. ``video``:
    the frames OpenCV decodes from the row's MP4 (None when it has none, or it is missing or does
    not decode: its own check reports that)."""
    problems = _feature_problems(example, row, release, declared)
    label = example.get("label", [None])[0]
    if row.label is not None and label != row.label:
        problems.append(f"label {label}, the manifest {row.label}")
    if "image" in example:
        digest, field = image_digest(release)
        if digest(example["image"][0]) != row.value(field):
            problems.append(f"its image differs from the manifest's {field}")
    if "video" in example:
        problems += _video_feature_problems(example["video"], row, release, video)
    return problems


def _video_feature_problems(pngs: list, row: ManifestRecord, release: Release, video: Optional[np.ndarray]) -> list[str]:
    """The ``video`` feature of a record (one PNG per frame), decoded once: its frame count, then
    its pixels against the manifest's ``frames_sha256`` (``--tfds-frames lossless``) or against
    ``video``, the frames OpenCV decodes from the row's MP4 (compared pixel for pixel)."""
    from pipelines.formats.video import decode_frames_lossless

    if len(pngs) != row.value("frames"):
        return [f"{len(pngs)} video frames, the manifest {row.value('frames')}"]
    lossless = isinstance(release.config, PSettings) and release.config.tfds_frames == "lossless"
    if not lossless and video is None:
        return []
    try:
        frames = decode_frames_lossless(pngs)
    except Exception as err:  # a corrupted PNG: whatever Pillow's decoder raises (ValueError, OSError, SyntaxError)
        return [f"its frames do not decode ({type(err).__name__}: {err})"]
    if lossless:
        return [] if sha256(frames.tobytes()) == row.value("frames_sha256") else [
            "its frames differ from the manifest's frames_sha256"]
    return [] if np.array_equal(frames, video) else [f"its frames differ from those OpenCV decodes from {row.path}"]


class _ShardReader:
    """The records of one TFDS shard, read as its manifest rows come by (:func:`_check_part`): its
    declared features, the records taken so far, and the problems that end its reading (an
    unreadable ``features.json``, a corrupted record, a read error)."""

    def __init__(self, root: str, shard: str):
        self.shard, self.count, self.ended = shard, 0, []
        self._stream, self._records = None, iter(())
        try:
            self.declared = declared_features(root, shard)
        except (OSError, ValueError, AttributeError) as err:
            self.ended = [f"{posixpath.dirname(shard)}/{FEATURES_FILE}: unreadable ({type(err).__name__}: {err})"]
            self.declared = None
            return
        try:
            self._stream = open_file(storage.join(root, shard))
        except OSError as err:
            self.ended = [f"{shard}: cannot read: {err}"]
            return
        self._records = iter_records(self._stream)

    def next(self) -> Optional[bytes]:
        """The next record's data; None when the shard has no more, or its reading has ended."""
        if self.ended:
            return None
        try:
            _, data = next(self._records)
        except StopIteration:
            return None
        except TFRecordError as err:
            self.ended = [f"{self.shard}: corrupted record ({err}), as TFDS would fail on it (DataLossError)"]
            return None
        except OSError as err:
            self.ended = [f"{self.shard}: cannot read: {err}"]
            return None
        self.count += 1
        return data

    def close(self, rows: int) -> list[str]:
        """Read what is left, close the shard, and return the problems that end it (``rows``: the
        manifest rows that name it)."""
        while self.next() is not None:
            pass
        if self._stream is not None:
            self._stream.close()
        if self.ended:
            return self.ended
        return [] if self.count == rows else [f"{self.shard}: {self.count} records, the manifest {rows}"]


def _record_check(row: ManifestRecord, data: bytes, where: str, release: Release, declared: Optional[frozenset],
                  video: Optional[np.ndarray]) -> list[str]:
    """The problems of one record (its bytes ``data``) read as ``row``, each prefixed ``where``."""
    try:
        example = decode_example(data)
    except TFRecordError as err:
        return [f"{where}: not a tf.train.Example: {err}"]
    return [f"{where}: {p}" for p in _record_problems(example, row, release, video, declared)]


def decode_checked(root: str, row: ManifestRecord) -> tuple[list[str], Optional[np.ndarray]]:
    """Decode one MP4 with OpenCV: ``(problems, its frames)``; the frames are None when it does
    not decode to the manifest's frame count."""
    from pipelines.formats.video import decode_video

    path = storage.join(root, row.path)
    try:
        frames = decode_video(path if storage.is_local(path) else storage.read_bytes(path))
    except (ValueError, OSError) as err:
        return [f"{row.path}: does not decode ({err})"], None
    if len(frames) != row.value("frames"):
        return [f"{row.path}: OpenCV decodes {len(frames)} frames, the manifest {row.value('frames')}"], None
    return [], frames


def _check_row(root: str, row: ManifestRecord, record: Optional[tuple], release: Release,
               video: bool) -> tuple[list[str], list[str]]:
    """``(video problems, record problems)`` of one manifest row: its MP4 decoded when ``video``,
    then its TFDS record when ``record`` is ``(data, where, declared features)``, its frames
    compared with the MP4's."""
    video_problems, frames = decode_checked(root, row) if video else ([], None)
    if record is None:
        return video_problems, []
    data, where, declared = record
    return video_problems, _record_check(row, data, where, release, declared, frames)


def _check_part(root: str, part: str, release: Release, present: Callable[[str], bool], pool: ThreadPoolExecutor,
                in_flight: int) -> tuple[list[str], dict[str, list[str]]]:
    """``(video problems in manifest order, {shard: its problems in record order})`` of one manifest
    part, in one pass: the rows stream by in key order, and each row that names a shard takes that
    shard's next record (a shard's records are its rows in key order), so only the open shards and
    ``in_flight`` rows are held, whatever the size of the config."""
    readers: dict[str, Optional[_ShardReader]] = {}
    rows_of: dict[str, int] = {}
    video_problems: list[str] = []
    shard_problems: dict[str, list[str]] = {}

    def work() -> Iterator[tuple[ManifestRecord, Optional[tuple], bool]]:
        for row in read_manifest_part(root, part):
            record = None
            if row.shard is not None:
                if row.shard not in readers:
                    readers[row.shard] = _ShardReader(root, row.shard) if present(row.shard) else None
                    rows_of[row.shard] = 0
                    shard_problems[row.shard] = []
                rows_of[row.shard] += 1
                reader = readers[row.shard]
                data = reader.next() if reader is not None else None
                if data is not None:
                    record = (data, f"{row.shard} record {reader.count} ({row.key})", reader.declared)
            yield row, record, row.path.endswith(".mp4") and present(row.path)

    def check(item: tuple) -> tuple[Optional[str], list[str], list[str]]:
        row, record, video = item
        return (row.shard if record is not None else None, *_check_row(root, row, record, release, video))

    try:
        for shard, found_video, found_record in bounded_map(pool, check, work(), in_flight):
            video_problems += found_video
            if shard is not None:
                shard_problems[shard] += found_record
    finally:
        for shard, reader in readers.items():
            if reader is not None:
                shard_problems[shard] += reader.close(rows_of[shard])
    return video_problems, {shard: found for shard, found in shard_problems.items() if readers[shard] is not None}


def check_loaded_data(root: str, release: Release, listed: ChecksumTable, threads: Optional[int] = None) -> list[str]:
    """Every check of the module doc, for the files ``SHA256SUMS`` lists (``listed``: its table,
    looked up path by path; the others are reported as missing by the checksum pass). Returns the
    problems: the videos' in manifest order, then the shards' sorted by shard.

    Each manifest part is read once, its rows streaming by with the records of its shards
    (:func:`_check_part`): memory does not grow with the number of rows of a config."""

    def present(path: str) -> bool:
        return path in listed and storage.exists(storage.join(root, path))

    workers = threads or os.cpu_count() or 1
    video_problems, shard_problems = [], {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in release.manifest_parts:
            found_videos, found_shards = _check_part(root, part, release, present, pool, IN_FLIGHT_PER_THREAD * workers)
            video_problems += found_videos
            shard_problems.update(found_shards)
    return video_problems + [problem for _, found in sorted(shard_problems.items()) for problem in found]


IN_FLIGHT_PER_THREAD = 64
"""Items a thread of a :func:`bounded_map` has submitted and not yet handed back, at most."""


def bounded_map(pool: ThreadPoolExecutor, function: Callable, items: Iterable, in_flight: int) -> Iterator:
    """``pool.map(function, items)`` with at most ``in_flight`` calls submitted and not yet taken:
    results in order, and memory that does not grow with the number of items (``Executor.map``
    submits every item at once: a future each, millions for a whole release)."""
    pending: collections.deque = collections.deque()
    for item in items:
        pending.append(pool.submit(function, item))
        if len(pending) >= in_flight:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
