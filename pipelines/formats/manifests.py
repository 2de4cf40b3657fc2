"""Manifest parts on storage (``manifest/<config>.jsonl``): the one reader of their lines.

A line is one :class:`schemas.records.ManifestRecord` (``json_line(record.to_json())``, written by
the release writer); every module that reads a manifest goes through :func:`read_manifest_part` or
:func:`read_manifests`, so that none parses its lines itself.
"""
from __future__ import annotations

import json
from typing import Iterator

from schemas.records import ManifestRecord
from schemas.release import MANIFEST_DIR

from pipelines.formats import storage
from pipelines.formats.parts import iter_lines

__all__ = ["parse_manifest_line", "read_manifest_part", "read_manifests"]


def parse_manifest_line(line: str) -> ManifestRecord:
    """The record of one manifest line.

    Raises
    ------
    ValueError
        When the line is not JSON.
    KeyError
        When it lacks ``key``, ``path``, ``sha256`` or ``bytes``.
    """
    return ManifestRecord.from_json(json.loads(line))


def read_manifest_part(release_dir: str, part: str) -> Iterator[ManifestRecord]:
    """The records of one manifest part (``manifest/<config>.jsonl``, relative to ``release_dir``),
    in key order, read chunk by chunk (a config of a whole release has 50,000)."""
    for line in iter_lines(storage.join(release_dir, part)):
        yield parse_manifest_line(line)


def read_manifests(release_dir: str) -> list[ManifestRecord]:
    """Every record of every manifest part of a release (any file system), sorted by key."""
    records = []
    for path in storage.match(storage.join(release_dir, f"{MANIFEST_DIR}/*.jsonl")):
        records.extend(read_manifest_part(release_dir, f"{MANIFEST_DIR}/{storage.basename(path)}"))
    return sorted(records, key=lambda record: record.key)
