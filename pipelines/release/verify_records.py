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
  ``frames_sha256``, otherwise they are the frames OpenCV decodes from the row's MP4;
- every ImageNet-P MP4 decodes (``cv2.VideoCapture``, as the reference evaluator) to the row's
  ``frames`` frames.

The WebDataset shards are read once, by :func:`pipelines.formats.webdataset.check_release_shards`
(every sample, in order, against its config's manifest).

Each function returns a list of problems, one line each, naming the file and the record.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Mapping, Optional

import numpy as np
from PIL import Image

from schemas.editions import release_identity
from schemas.release import VCR_BENCHMARK
from schemas.records import ManifestRecord
from schemas.release import Release

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable
from pipelines.formats.parts import iter_lines
from pipelines.formats.tfrecord import TFRecordError, decode_example, iter_records

__all__ = ["open_file", "sha256", "pixels_sha256", "IMAGE_DIGESTS", "TREE_BYTES", "image_digest", "part_rows",
           "part_config", "manifest_rows", "rows_by_shard", "shard_examples", "check_shard", "check_video",
           "check_loaded_data", "FEATURES_FILE", "CHECKED_FEATURES", "declared_features", "expected_file_name"]

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


def part_rows(root: str, part: str) -> Iterator[ManifestRecord]:
    """The rows of one manifest part (``manifest/<config>.jsonl``), in key order, read chunk by chunk
    (a config of a whole release has 50,000)."""
    for line in iter_lines(storage.join(root, part)):
        yield ManifestRecord.from_json(json.loads(line))


def part_config(part: str) -> str:
    """The config of a manifest part: ``manifest/fog_3.jsonl`` -> ``fog_3``."""
    return posixpath.basename(part)[:-len(".jsonl")]


def manifest_rows(root: str, release: Release) -> Iterator[ManifestRecord]:
    """Every manifest row of the release, part after part (each part sorted by key)."""
    for part in release.manifest_parts:
        yield from part_rows(root, part)


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


def _frames_digest(pngs: list) -> str:
    from pipelines.formats.video import decode_frames_lossless

    return sha256(decode_frames_lossless(pngs).tobytes())


def declared_features(root: str, shard: str) -> Optional[frozenset]:
    """The feature names the ``features.json`` beside a shard declares (None when it has none)."""
    path = storage.join(root, posixpath.join(posixpath.dirname(shard), FEATURES_FILE))
    if not storage.exists(path):
        return None
    document = json.loads(storage.read_bytes(path))
    return frozenset(document.get("featuresDict", {}).get("features", {}))


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


def _record_problems(example: dict, row: ManifestRecord, release: Release, decoded: Mapping[str, str],
                     declared: Optional[frozenset] = None) -> list[str]:
    """What is wrong with one TFDS record, read as ``row`` of the manifest: every feature."""
    problems = _feature_problems(example, row, release, declared)
    label = example.get("label", [None])[0]
    if row.label is not None and label != row.label:
        problems.append(f"label {label}, the manifest {row.label}")
    if "image" in example:
        digest, field = image_digest(release)
        if digest(example["image"][0]) != row.value(field):
            problems.append(f"its image differs from the manifest's {field}")
    if "video" in example:
        frames = example["video"]
        if len(frames) != row.value("frames"):
            problems.append(f"{len(frames)} video frames, the manifest {row.value('frames')}")
        elif release.setting("tfds_frames") == "lossless":
            if _frames_digest(frames) != row.value("frames_sha256"):
                problems.append("its frames differ from the manifest's frames_sha256")
        elif row.path in decoded and _frames_digest(frames) != decoded[row.path]:
            problems.append(f"its frames differ from those OpenCV decodes from {row.path}")
    return problems


def check_shard(root: str, shard: str, rows: list, release: Release, decoded: Mapping[str, str]) -> list[str]:
    """Read one TFDS shard record by record (CRCs checked) against its manifest rows."""
    problems, count = [], 0
    try:
        declared = declared_features(root, shard)
    except (OSError, ValueError, AttributeError) as err:
        return [f"{posixpath.dirname(shard)}/{FEATURES_FILE}: unreadable ({type(err).__name__}: {err})"]
    try:
        with open_file(storage.join(root, shard)) as stream:
            for count, (offset, data) in enumerate(iter_records(stream), 1):
                if count > len(rows):
                    continue
                row = rows[count - 1]
                where = f"{shard} record {count} ({row.key})"
                try:
                    example = decode_example(data)
                except TFRecordError as err:
                    problems.append(f"{where}: not a tf.train.Example: {err}")
                    continue
                problems += [f"{where}: {p}" for p in _record_problems(example, row, release, decoded, declared)]
    except TFRecordError as err:
        return problems + [f"{shard}: corrupted record ({err}), as TFDS would fail on it (DataLossError)"]
    except OSError as err:
        return problems + [f"{shard}: cannot read: {err}"]
    if count != len(rows):
        problems.append(f"{shard}: {count} records, the manifest {len(rows)}")
    return problems


def check_video(root: str, row: ManifestRecord) -> tuple[list[str], Optional[str]]:
    """Decode one MP4 with OpenCV: ``(problems, SHA-256 of the decoded frames)``."""
    from pipelines.formats.video import decode_video

    path = storage.join(root, row.path)
    try:
        frames = decode_video(path if storage.is_local(path) else storage.read_bytes(path))
    except (ValueError, OSError) as err:
        return [f"{row.path}: does not decode ({err})"], None
    if len(frames) != row.value("frames"):
        return [f"{row.path}: OpenCV decodes {len(frames)} frames, the manifest {row.value('frames')}"], None
    return [], sha256(frames.tobytes())


def check_loaded_data(root: str, release: Release, listed: ChecksumTable, threads: Optional[int] = None) -> list[str]:
    """Every check of the module doc, for the files ``SHA256SUMS`` lists (``listed``: its table,
    looked up path by path; the others are reported as missing by the checksum pass). Returns the
    problems: the videos' in manifest order, then the shards' sorted by shard.

    One manifest part (one config, whose shards and videos are its own) is in memory at a time, so
    that memory follows the largest config, not the release."""

    def present(path: str) -> bool:
        return path in listed and storage.exists(storage.join(root, path))

    video_problems, shard_problems = [], []
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count()) as pool:
        for part in release.manifest_parts:
            rows = list(part_rows(root, part))
            shards, decoded = rows_by_shard(rows), {}
            videos = [r for r in rows if r.path.endswith(".mp4") and present(r.path)]
            for row, (found, digest) in zip(videos, pool.map(lambda r: check_video(root, r), videos)):
                video_problems += found
                if digest is not None:
                    decoded[row.path] = digest
            existing = sorted(s for s in shards if present(s))
            found = pool.map(lambda s: check_shard(root, s, shards[s], release, decoded), existing)
            shard_problems += zip(existing, found)
    return video_problems + [problem for _, found in sorted(shard_problems) for problem in found]
