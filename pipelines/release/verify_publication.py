"""Check the published files of a release against what its ``release.json`` and manifests make.

``README.md`` (the dataset card), ``croissant.json`` and the Hugging Face index (``metadata.parquet``
or ``hf/<config>.parquet``) are made by :func:`pipelines.release.publication.render_publication`, from
``release.json``, the manifests, the TFDS label names and records and the ``packages/`` listing. A
file changed together with its ``SHA256SUMS`` line passes the checksum pass; this check makes them
again in memory (the index only hashed, never written) and compares them byte for byte:

- the card and ``croissant.json`` must be the bytes made; ``croissant.json`` may list the
  ``packages/`` tars or none (a release packaged after it was published);
- an index file must have the SHA-256 of the one made, or, when only the parquet encoding differs (an
  other pyarrow version), the same table: schema, Hugging Face features and every row.

A file that is not listed in ``SHA256SUMS`` is not checked (a release never published).
"""
from __future__ import annotations

import hashlib
import io
from typing import Mapping, Optional

from schemas.publication import CARD, CROISSANT
from schemas.release import Release

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable
from pipelines.release.hf_index import listed_index_files
from pipelines.release.publication import render_publication

__all__ = ["Digest", "check_publication"]



class Digest:
    """A write-only stream that keeps the SHA-256 of what it is given (and the bytes, if ``keep``):
    what :func:`pipelines.release.hf_index.write_index` writes an index file to when verify makes it."""

    def __init__(self, keep: bool = False):
        self._hash, self._size = hashlib.sha256(), 0
        self.data: Optional[io.BytesIO] = io.BytesIO() if keep else None

    def write(self, data) -> int:
        self._hash.update(data)
        self._size += len(data)
        if self.data is not None:
            self.data.write(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def __enter__(self) -> "Digest":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def _same_table(found: bytes, made: bytes) -> bool:
    """True when two parquet files hold the same table, schema metadata included."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(io.BytesIO(found)).equals(pq.read_table(io.BytesIO(made)), check_metadata=True)
    except Exception:  # an unreadable file is reported by check_index  # noqa: BLE001
        return False


def check_publication(root: str, release: Release, listed: ChecksumTable, packages: Mapping[str, str]) -> list[str]:
    """Problems of the published files of a release (module doc), one line each naming the file.

    ``listed``: the table of its ``SHA256SUMS`` (already checked against the files; its entries
    are streamed to :func:`~pipelines.release.publication.render_publication` in one query);
    ``packages``: ``packages/<tar>`` -> SHA-256 of the packed tars (empty when not packed)."""
    published = [p for p in (CARD, CROISSANT) if p in listed and storage.exists(storage.join(root, p))]
    index_listed = listed_index_files(listed)
    if not published and not index_listed:
        return []
    def render(open_output, packed=packages):
        return render_publication(root, release, listed.items(), packed, open_output)
    index, documents = render(lambda relative: Digest())
    problems = []
    differing = sorted(p for p, digest in index.items() if p in listed and listed[p] != digest)
    if differing:
        kept = {}

        def keep(relative):
            kept[relative] = Digest(keep=relative in differing)
            return kept[relative]
        render(keep)
        for relative in differing:
            path = storage.join(root, relative)
            if not (storage.exists(path) and _same_table(storage.read_bytes(path), kept[relative].data.getvalue())):
                problems.append(f"{relative}: edited: differs from the index release.json and the manifests make")
    problems += [f"{p}: not made by publish from release.json and the manifests" for p in sorted(index_listed)
                 if p not in index]
    for relative in published:
        found = storage.read_bytes(storage.join(root, relative))
        if found == documents[relative]:
            continue
        if relative == CROISSANT and packages and found == render(lambda r: Digest(), {})[1][CROISSANT]:
            continue  # published before the release was packaged
        what = "the dataset card" if relative == CARD else "the Croissant file"
        problems.append(f"{relative}: edited: differs from {what} release.json and the manifests make")
    return problems
