"""The layout of a release directory and the formats of its manifests.

A release directory ``DIR`` holds::

    DIR/<tree>/...                       the official folder tree (``ImageNet-C/<c>/<s>/<wnid>/<file>``,
                                         and ours ``ImageNet-C/clean/<wnid>/<file>``), every
                                         class folder present (empty ones for absent classes)
    DIR/tfds/<dataset>/<config>/<version>/  TFDS shards + dataset_info.json, features.json, label.labels.txt
    DIR/manifest/<config>.jsonl          one record per output, sorted by key
    DIR/sources.jsonl                    one record per input image used, sorted by key
    DIR/failures.jsonl                   one record per rejected input or output, sorted by key
    DIR/release.json                     config, input checksum, counts, library versions, manifest digest
    DIR/SHA256SUMS                       ``sha256sum -c`` list of every file above
    DIR/webdataset/<config>/<config>-NNNNNN.tar  WebDataset shards of the tree (``--formats webdataset``)
    DIR/packages/                        category tars + their SHA256SUMS (``imagenet-cp package``)

Every JSON document is written with sorted keys and ``\\n`` line ends, so that equal content gives
equal bytes.
"""
from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from schemas.adversarial import A_TREE, O_TREE
from schemas.vcr import CLEAN, VCR_TREE

RELEASE_FORMAT = "imagenet-cp-release/1"
"""Value of ``release.json``'s ``format`` field; bumped when the layout changes."""

RELEASE_JSON = "release.json"
CHECKSUMS = "SHA256SUMS"
SOURCES = "sources.jsonl"
FAILURES = "failures.jsonl"
MANIFEST_DIR = "manifest"
TFDS_DIR = "tfds"
PACKAGES_DIR = "packages"
WEBDATASET_DIR = "webdataset"
"""WebDataset shards of the tree, ``webdataset/<config>/<config>-000000.tar`` (``--formats webdataset``)."""

TMP_DIR = ".tmp"
"""Files being written, before their atomic rename into place."""
PARTS_DIR = ".parts"
"""Pipeline results the driver assembles into ``release.json`` and ``SHA256SUMS``."""
PROGRESS_DIR = ".progress"
"""Progress counters of the running workers."""
SAMPLE_DIR = ".sample"
"""The bundled sample, written here when a build has no ``--input``."""
SPILL_DIR = ".spill"
"""Large values (serialized TFRecord examples) workers park here so that shuffles carry references."""
SCRATCH_DIRS = (TMP_DIR, PARTS_DIR, PROGRESS_DIR, SAMPLE_DIR, SPILL_DIR)
"""Build scratch folders inside ``DIR``; a finished build removes them."""

C_TREE = "ImageNet-C"
"""Folder of the ImageNet-C JPEG tree: ``ImageNet-C/<corruption>/<severity>/<wnid>/<file>``, the name
RobustBench's ``load_imagenetc(data_dir=...)`` and the official evaluators read."""
CLEAN = "clean"
"""Folder (``ImageNet-C/clean/<wnid>/<file>``), TFDS config and manifest part of a release's clean
images: each source image exactly as the corruptions receive it (after the edition's
preprocessing), encoded as the edition encodes its outputs; category tar ``clean.tar``."""
P_TREE = "ImageNet-P"
"""Folder of the ImageNet-P video tree: ``ImageNet-P/<name>[_<d>]/<wnid>/<stem>.mp4``."""

C_BENCHMARK, P_BENCHMARK, VCR_BENCHMARK, A_BENCHMARK, O_BENCHMARK = "c", "p", "vcr", "a", "o"
BENCHMARKS = (C_BENCHMARK, P_BENCHMARK, VCR_BENCHMARK, A_BENCHMARK, O_BENCHMARK)
"""Values of ``release.json``'s ``benchmark`` field: ImageNet-C, ImageNet-P, VCR, ImageNet-A, ImageNet-O.
Its ``edition`` field is the catalogue name of the edition (:data:`schemas.editions.EDITIONS`);
:func:`schemas.editions.release_identity` reads both from any release, old ones included."""

LEGACY_EDITIONS: Mapping[str, tuple] = MappingProxyType({
    "imagenet-c": ("imagenet", C_BENCHMARK), "imagenet-p": ("imagenet", P_BENCHMARK),  # the 224 trees' old names
    VCR_TREE: ("imagenet", VCR_BENCHMARK),
    A_TREE: ("imagenet", A_BENCHMARK), O_TREE: ("imagenet", O_BENCHMARK)})
"""``release.json``'s ``edition`` of releases made before the ``benchmark`` field -> (edition, benchmark)."""

MANIFEST_FIELDS = ("key", "path", "sha256", "bytes", "shard")
"""Fields every manifest record has; each edition adds its own (wnid, label, seed, ...)."""


def dumps(document: Any) -> str:
    """Canonical JSON text of a document: sorted keys, two-space indent, trailing newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def json_line(record: Mapping[str, Any]) -> str:
    """Canonical one-line JSON of a record (sorted keys, compact), with its newline."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def manifest_path(group: str) -> str:
    """Relative path of the manifest part of a TFDS config, e.g. ``manifest/fog_3.jsonl``."""
    return f"{MANIFEST_DIR}/{group}.jsonl"


def checksum_line(sha256: str, path: str) -> str:
    """One ``sha256sum``-compatible line (text mode: two spaces)."""
    return f"{sha256}  {path}\n"


def parse_checksum_lines(lines: Iterable[str]) -> dict[str, str]:
    """Parse ``sha256sum`` output into {relative path: hex digest}.

    Raises
    ------
    ValueError
        On a malformed line (the message quotes it).
    """
    entries = {}
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or not path:
            raise ValueError(f"malformed {CHECKSUMS} line {line!r}: expected '<64 hex digits>  <path>'")
        entries[path] = digest
    return entries


def is_safe_name(name: str) -> bool:
    """True when a file or folder name can appear in the release and in ``SHA256SUMS``.

    Rejects empty names, ``.``/``..``, and names with ``/``, ``\\``, control characters or a
    leading dot (hidden files).
    """
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name and all(
        ch.isprintable() for ch in name)
