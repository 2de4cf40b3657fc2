"""``SHA256SUMS``: the one writer of the ``sha256sum`` lists a release and its packages hold.

A list is one :func:`schemas.release.checksum_line` per file (``<sha256>  <path>``, text mode),
in the order given, written atomically and streamed (a whole release lists millions of files).
"""
from __future__ import annotations

from typing import Iterable, Iterator

from schemas.records import FileInfo
from schemas.release import CHECKSUMS, checksum_line

from pipelines.formats import storage

__all__ = ["LINES_PER_CHUNK", "checksum_chunks", "write_checksums"]

LINES_PER_CHUNK = 8192
"""Lines of ``SHA256SUMS`` written at a time."""


def checksum_chunks(entries: Iterable[tuple[str, str]]) -> Iterator[bytes]:
    """The bytes of a ``SHA256SUMS`` listing ``(relative path, sha256)`` pairs in the order given,
    :data:`LINES_PER_CHUNK` lines at a time (one empty chunk for no entry)."""
    lines = []
    for path, sha256 in entries:
        lines.append(checksum_line(sha256, path))
        if len(lines) == LINES_PER_CHUNK:
            yield "".join(lines).encode("utf-8")
            lines = []
    yield "".join(lines).encode("utf-8")


def write_checksums(directory: str, entries: Iterable[tuple[str, str]]) -> FileInfo:
    """Write ``directory/SHA256SUMS`` listing ``(relative path, sha256)`` pairs in the order given
    (atomically: :func:`pipelines.formats.storage.write_atomic`); describe the file written."""
    return storage.write_atomic(directory, CHECKSUMS, checksum_chunks(entries))
