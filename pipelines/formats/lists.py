"""The JSON-line lists of a build and a release: the one writer and reader of each.

- the entry lists the driver hands to the workers (``DIR/.parts/entries/NNNNNN.jsonl``, one
  :class:`schemas.records.SourceEntry` a line);
- ``sources.jsonl`` (one :class:`schemas.records.SourceRecord` a line);
- ``failures.jsonl`` (one :class:`schemas.records.Failure` a line);
- a filter run's ``decisions.jsonl`` (one :class:`schemas.adversarial.DecisionRecord` a line);
- and the JSON-line files a person hands in: the reviews of a shortlist (:func:`read_reviews`) and
  the candidates' metadata (:func:`read_metadata`).

Lines are :func:`schemas.release.json_line` text: sorted keys, compact, so that equal records give
equal bytes.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Iterator, Optional, Sequence

from schemas.adversarial import REVIEW_CODES, DecisionRecord
from schemas.records import Failure, Locator, SourceEntry, SourceRecord
from schemas.release import json_line

from pipelines.formats import storage
from pipelines.formats.parts import iter_lines

__all__ = ["write_entry_list", "read_entry_list", "read_sources", "read_failures", "read_decisions", "read_reviews",
           "read_metadata"]


def write_entry_list(output_dir: str, relative: str, entries: Sequence[SourceEntry]) -> str:
    """Write ``entries`` to ``output_dir/relative`` (atomically) and return its path."""
    text = "".join(json_line(asdict(entry)) for entry in entries)
    storage.write_atomic(output_dir, relative, text.encode("utf-8"))
    return storage.join(output_dir, relative)


def read_entry_list(path: str) -> Iterator[SourceEntry]:
    """The entries of one list file written by :func:`write_entry_list`."""
    for line in storage.read_bytes(path).decode("utf-8").splitlines():
        fields = json.loads(line)
        yield SourceEntry(**{**fields, "locator": Locator(**fields["locator"])})


def read_sources(path: str) -> Iterator[SourceRecord]:
    """The records of a ``sources.jsonl``, in file order, read chunk by chunk."""
    for line in iter_lines(path):
        yield SourceRecord.from_json(json.loads(line))


def read_failures(path: str) -> Iterator[Failure]:
    """The records of a ``failures.jsonl``, in file order, read chunk by chunk."""
    for line in iter_lines(path):
        yield Failure.from_json(json.loads(line))


def read_decisions(path: str) -> list[DecisionRecord]:
    """The records of a filter run's ``decisions.jsonl``, in file order (key order).

    Raises
    ------
    ValueError
        When a line is not JSON.
    KeyError
        When a line lacks a declared field.
    """
    return [DecisionRecord.from_json(json.loads(line)) for line in iter_lines(path) if line.strip()]


def read_reviews(path: str) -> dict:
    """``{key: review record}`` from ``reviews.jsonl`` lines or plain accepted keys; a later line
    for a key replaces an earlier one (second opinions are appended).

    Raises
    ------
    ValueError
        On a malformed line or an unknown decision code.
    """
    reviews = {}
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("{"):
                try:
                    record = json.loads(line)
                    key = record["key"]
                except (ValueError, KeyError) as err:
                    raise ValueError(f"{path}:{number}: expected a review record with a 'key': {err}") from err
                if record.get("decision") not in REVIEW_CODES:
                    raise ValueError(f"{path}:{number}: decision {record.get('decision')!r} is not one of "
                                     f"{', '.join(REVIEW_CODES)}")
            else:
                key, record = line, {"key": line, "decision": "accept"}
            reviews[key] = record
    return reviews


def read_metadata(path: Optional[str]) -> dict:
    """``{key: {source, url, licence, query, ...}}`` from a JSON-lines file with a ``key`` per row."""
    if path is None:
        return {}
    found = {}
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                    found[row.pop("key")] = row
                except (ValueError, KeyError, AttributeError) as err:
                    raise ValueError(f"{path}:{number}: expected a JSON object with a 'key': {err}") from err
    return found
