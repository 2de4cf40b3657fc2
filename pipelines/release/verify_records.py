"""Check what the loaders read against the manifests: TFDS records, ImageNet-P videos, WebDataset shards.

``SHA256SUMS`` proves that a file is the one listed; it cannot prove that the listed file is right
(a shard changed together with its line passes it). These checks read the data as the loaders do:

- every TFDS shard is read record by record, as TFRecord frames it (``uint64 length | masked
  crc32c(length) | data | masked crc32c(data)``): both CRCs are checked, the records must be the
  manifest rows that name the shard (in key order, one record each) with their ``label``, and the
  image each holds must have the row's SHA-256 (``sha256``: the tree's file; for the ``.npy``
  editions ``array_sha256``: its decoded pixels). A video record (ImageNet-P) holds the row's
  ``frames`` frames: with ``--tfds-frames lossless`` their pixels have the row's
  ``frames_sha256``, otherwise they are the frames OpenCV decodes from the row's MP4;
- every ImageNet-P MP4 decodes (``cv2.VideoCapture``, as the reference evaluator) to the row's
  ``frames`` frames;
- when the release has a ``webdataset/`` folder, every image member of its tars must have the
  SHA-256 of the manifest row of its sample key (the member's path up to the first dot of its
  name, the row's key without its extension), or of some manifest row when the key names none;
  a ``.cls`` member must equal the row's label.

Each function returns a list of problems, one line each, naming the file and the record.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import tarfile
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Mapping, Optional

import numpy as np
from PIL import Image

from schemas.release import WEBDATASET_DIR

from pipelines.formats import storage
from pipelines.formats.tfrecord import TFRecordError, decode_example, iter_records

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
"""Members of a WebDataset sample that hold its image."""


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


def image_digest(release: dict) -> tuple[Callable[[bytes], str], str]:
    """How the image bytes a loader reads are checked against a manifest row."""
    return IMAGE_DIGESTS.get(release.get("encoding"), TREE_BYTES)


def part_rows(root: str, part: str) -> Iterator[dict]:
    """The rows of one manifest part (``manifest/<config>.jsonl``), in key order."""
    for line in storage.read_bytes(storage.join(root, part)).decode("utf-8").splitlines():
        yield json.loads(line)


def part_config(part: str) -> str:
    """The config of a manifest part: ``manifest/fog_3.jsonl`` -> ``fog_3``."""
    return posixpath.basename(part)[:-len(".jsonl")]


def manifest_rows(root: str, release: dict) -> Iterator[dict]:
    """Every manifest row of the release, part after part (each part sorted by key)."""
    for part in release["manifest"]["parts"]:
        yield from part_rows(root, part)


def rows_by_shard(rows) -> dict[str, list]:
    """{TFDS shard: its manifest rows in key order}, the order of the shard's records."""
    shards: dict[str, list] = {}
    for row in rows:
        if row.get("shard") is not None:
            shards.setdefault(row["shard"], []).append(row)
    return {shard: sorted(found, key=lambda r: r["key"]) for shard, found in shards.items()}


def shard_examples(root: str, shard: str) -> Iterator[dict]:
    """The decoded ``tf.train.Example`` of every record of a shard, in order (CRCs checked)."""
    with open_file(storage.join(root, shard)) as stream:
        for _, data in iter_records(stream):
            yield decode_example(data)


def _frames_digest(pngs: list) -> str:
    from pipelines.formats.video import decode_frames_lossless

    return sha256(decode_frames_lossless(pngs).tobytes())


def _record_problems(example: dict, row: dict, release: dict, decoded: Mapping[str, str]) -> list[str]:
    """What is wrong with one TFDS record, read as ``row`` of the manifest."""
    problems = []
    label = example.get("label", [None])[0]
    if "label" in row and label != row["label"]:
        problems.append(f"label {label}, the manifest {row['label']}")
    if "image" in example:
        digest, field = image_digest(release)
        if digest(example["image"][0]) != row[field]:
            problems.append(f"its image differs from the manifest's {field}")
    if "video" in example:
        frames = example["video"]
        if len(frames) != row.get("frames"):
            problems.append(f"{len(frames)} video frames, the manifest {row.get('frames')}")
        elif release.get("config", {}).get("tfds_frames") == "lossless":
            if _frames_digest(frames) != row["frames_sha256"]:
                problems.append("its frames differ from the manifest's frames_sha256")
        elif row["path"] in decoded and _frames_digest(frames) != decoded[row["path"]]:
            problems.append(f"its frames differ from those OpenCV decodes from {row['path']}")
    return problems


def check_shard(root: str, shard: str, rows: list, release: dict, decoded: Mapping[str, str]) -> list[str]:
    """Read one TFDS shard record by record (CRCs checked) against its manifest rows."""
    problems, count = [], 0
    try:
        with open_file(storage.join(root, shard)) as stream:
            for count, (offset, data) in enumerate(iter_records(stream), 1):
                if count > len(rows):
                    continue
                row = rows[count - 1]
                where = f"{shard} record {count} ({row['key']})"
                try:
                    example = decode_example(data)
                except TFRecordError as err:
                    problems.append(f"{where}: not a tf.train.Example: {err}")
                    continue
                problems += [f"{where}: {p}" for p in _record_problems(example, row, release, decoded)]
    except TFRecordError as err:
        return problems + [f"{shard}: corrupted record ({err}), as TFDS would fail on it (DataLossError)"]
    except OSError as err:
        return problems + [f"{shard}: cannot read: {err}"]
    if count != len(rows):
        problems.append(f"{shard}: {count} records, the manifest {len(rows)}")
    return problems


def check_video(root: str, row: dict) -> tuple[list[str], Optional[str]]:
    """Decode one MP4 with OpenCV: ``(problems, SHA-256 of the decoded frames)``."""
    from pipelines.formats.video import decode_video

    path = storage.join(root, row["path"])
    try:
        frames = decode_video(path if storage.is_local(path) else storage.read_bytes(path))
    except (ValueError, OSError) as err:
        return [f"{row['path']}: does not decode ({err})"], None
    if len(frames) != row.get("frames"):
        return [f"{row['path']}: OpenCV decodes {len(frames)} frames, the manifest {row.get('frames')}"], None
    return [], sha256(frames.tobytes())


def _sample_key(path: str) -> str:
    """WebDataset's sample key of a member or a manifest key: the path up to the first dot of its name."""
    folder, name = posixpath.split(path)
    return posixpath.join(folder, name.split(".", 1)[0])


def check_webdataset_tar(root: str, tar_path: str, by_key: Mapping[str, dict], digests: frozenset,
                         release: dict) -> list[str]:
    """Every image member of one WebDataset tar against the manifest row of its sample key."""
    digest, field = image_digest(release)
    problems = []
    try:
        with open_file(storage.join(root, tar_path)) as stream, tarfile.open(fileobj=stream, mode="r|*") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                data = archive.extractfile(member).read()
                row = by_key.get(_sample_key(member.name))
                suffix = posixpath.splitext(member.name)[1].lower()
                where = f"{tar_path} member {member.name}"
                if suffix in IMAGE_SUFFIXES:
                    value = digest(data)
                    if (value != row[field]) if row is not None else (value not in digests):
                        problems.append(f"{where}: its image differs from the manifest's {field}")
                elif suffix == ".cls" and row is not None and data.strip() != str(row.get("label")).encode():
                    problems.append(f"{where}: label {data.strip().decode(errors='replace')}, the manifest "
                                    f"{row.get('label')}")
    except (tarfile.TarError, OSError) as err:
        problems.append(f"{tar_path}: not a readable tar ({err})")
    return problems


def webdataset_tars(root: str, listed: Mapping[str, str]) -> list[str]:
    """The listed ``.tar`` files below ``webdataset/``."""
    return sorted(p for p in listed if p.startswith(f"{WEBDATASET_DIR}/") and p.endswith(".tar"))


def check_loaded_data(root: str, release: dict, listed: Mapping[str, str], threads: Optional[int] = None) -> list[str]:
    """Every check of the module doc, for the files ``SHA256SUMS`` lists (the others are reported
    as missing by the checksum pass). Returns the problems, sorted by file."""
    rows = list(manifest_rows(root, release))

    def present(path: str) -> bool:
        return path in listed and storage.exists(storage.join(root, path))

    shards = rows_by_shard(rows)
    videos = [r for r in rows if r["path"].endswith(".mp4") and present(r["path"])]
    problems, decoded = [], {}
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count()) as pool:
        for row, (found, digest) in zip(videos, pool.map(lambda r: check_video(root, r), videos)):
            problems += found
            if digest is not None:
                decoded[row["path"]] = digest
        existing = sorted(s for s in shards if present(s))
        for found in pool.map(lambda s: check_shard(root, s, shards[s], release, decoded), existing):
            problems += found
        tars = [t for t in webdataset_tars(root, listed) if present(t)]
        if tars:
            by_key = {_sample_key(r["key"]): r for r in rows}
            digests = frozenset(r[image_digest(release)[1]] for r in rows if image_digest(release)[1] in r)
            for found in pool.map(lambda t: check_webdataset_tar(root, t, by_key, digests, release), tars):
                problems += found
    return problems
