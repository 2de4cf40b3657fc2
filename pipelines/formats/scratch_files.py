"""The small JSON files a build or an evaluation keeps beside its parts, and the lock's record.

Each is written and read here, the one place its shape is known:

- a worker's progress counts, ``DIR/.progress/<id>.json`` (:func:`counts_bytes`, :func:`parse_counts`);
- a build's worker environments, ``DIR/.parts/environments/<digest>.json``, one file per distinct
  environment (:func:`pipelines.beam.write_release.environment_path`): a JSON list of the
  environments' JSON texts (:func:`environments_bytes`, :func:`parse_environments`), each one
  ``{library: version}`` (:func:`parse_environment`);
- an evaluation's identity, ``OUT/.evaluation/identity.json`` (:func:`identity_bytes`,
  :func:`parse_identity`);
- a folder lock's record, who holds it and its last beat (:func:`parse_lock_record`).
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping, Union

from schemas.release import JsonValue, json_object

__all__ = ["counts_bytes", "parse_counts", "environments_bytes", "parse_environments", "parse_environment",
           "identity_bytes", "parse_identity", "parse_lock_record"]

_Data = Union[str, bytes]


def counts_bytes(counts: Mapping[str, int]) -> bytes:
    """The bytes of a progress file: ``{counter: count}``."""
    return json.dumps(dict(counts)).encode()


def parse_counts(data: _Data) -> dict[str, int]:
    """``{counter: count}`` of a progress file.

    Raises
    ------
    ValueError
        When the text is not a JSON object of counts (a file being replaced, say).
    """
    counts = json_object(data, "a progress file")
    if not all(isinstance(n, int) for n in counts.values()):
        raise ValueError("a progress file holds a count that is not an integer")
    return counts


def environments_bytes(environments: Iterable[str]) -> bytes:
    """The bytes of an environments file: the environments' JSON texts, sorted."""
    return json.dumps(sorted(environments)).encode("utf-8")


def parse_environments(data: _Data) -> list[str]:
    """The environments' JSON texts of an environments file.

    Raises
    ------
    ValueError
        When the text is not a JSON list of texts.
    """
    texts = json.loads(data)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ValueError("an environments file is not a JSON list of texts")
    return texts


def parse_environment(text: str) -> dict[str, str]:
    """``{library: version}`` of one environment's JSON text."""
    return json_object(text, "a worker environment")


def identity_bytes(identity: Mapping[str, JsonValue]) -> bytes:
    """The bytes of an evaluation's identity file (sorted keys, two-space indent, newline)."""
    return (json.dumps(identity, indent=2, sort_keys=True) + "\n").encode()


def parse_identity(data: _Data) -> dict[str, JsonValue]:
    """The identity of an evaluation's identity file.

    Raises
    ------
    ValueError
        When the text is not a JSON object.
    """
    return json_object(data, "an evaluation's identity file")


def parse_lock_record(data: _Data) -> dict[str, JsonValue]:
    """A lock's record (``pid``, ``host``, ``beat``, ...); empty for an empty or unreadable record
    (a lock being written, or one made by something else)."""
    try:
        return json_object(data or b"{}", "a lock record")
    except ValueError:
        return {}
