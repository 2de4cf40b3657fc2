"""Verify a release directory against its ``SHA256SUMS`` and ``release.json``.

Every file listed is hashed again (in parallel threads: ``hashlib`` releases the GIL); files on
disk that are not listed are extra. ``release.json``'s manifest digest and input checksum are
recomputed from the manifest parts and ``sources.jsonl``. A ``packages/`` folder, when present,
is checked against its own ``SHA256SUMS``. The release may lie on any file system
:mod:`pipelines.storage` reaches (a local disk, ``s3://``, ``gs://``).
"""
from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from schemas.release import CHECKSUMS, PACKAGES_DIR, RELEASE_JSON, SOURCES, parse_checksum_lines

from . import storage

CHUNK_BYTES = 1 << 20


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with storage.open_stream(path) as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def relative_files(root: str, skip: tuple = ()) -> set[str]:
    """Relative ``/``-separated paths of every file below ``root``, leaving out ``skip`` paths
    (files or whole folders, relative to ``root``)."""
    return set(storage.list_tree(root, skip))


@dataclass
class VerifyReport:
    """Problems found in a release; empty lists mean it is intact."""

    checked: int = 0
    missing: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.problems)

    def merge(self, other: "VerifyReport", prefix: str) -> None:
        self.checked += other.checked
        for name in ("missing", "extra", "changed", "problems"):
            getattr(self, name).extend(f"{prefix}{item}" for item in getattr(other, name))

    def text(self) -> str:
        """A human-readable report, one problem a line, then a verdict."""
        lines = [f"{kind}: {item}" for kind in ("missing", "extra", "changed", "problems")
                 for item in getattr(self, kind)]
        verdict = (f"OK: {self.checked} files match" if self.ok else
                   f"FAILED: {len(self.missing)} missing, {len(self.extra)} extra, {len(self.changed)} changed, "
                   f"{len(self.problems)} other problems among {self.checked} listed files")
        return "\n".join(lines + [verdict])


def verify_checksums(root: str, skip: tuple = (), threads: Optional[int] = None) -> VerifyReport:
    """Compare the files below ``root`` with ``root/SHA256SUMS``."""
    report = VerifyReport()
    listing = storage.join(root, CHECKSUMS)
    if not storage.exists(listing) or storage.is_folder(listing):
        report.problems.append(f"{CHECKSUMS} not found in {root}")
        return report
    try:
        expected = parse_checksum_lines(storage.read_bytes(listing).decode("utf-8").splitlines())
    except ValueError as err:
        report.problems.append(str(err))
        return report
    present = relative_files(root, skip + (CHECKSUMS,))
    report.checked = len(expected)
    report.missing = sorted(set(expected) - present)
    report.extra = sorted(present - set(expected))
    common = sorted(set(expected) & present)
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count()) as pool:
        digests = pool.map(lambda p: file_sha256(storage.join(root, p)), common)
        report.changed = [p for p, digest in zip(common, digests) if digest != expected[p]]
    return report


def _check_release_json(root: str, report: VerifyReport) -> None:
    """Recompute the manifest digest and the input checksum that ``release.json`` records."""
    try:
        release = json.loads(storage.read_bytes(storage.join(root, RELEASE_JSON)))
        digest = hashlib.sha256()
        for part in release["manifest"]["parts"]:
            digest.update(storage.read_bytes(storage.join(root, part)))
        if digest.hexdigest() != release["manifest"]["sha256"]:
            report.problems.append(f"manifest digest differs from {RELEASE_JSON}")
        if file_sha256(storage.join(root, SOURCES)) != release["input"]["sha256"]:
            report.problems.append(f"{SOURCES} differs from the input checksum in {RELEASE_JSON}")
    except (OSError, ValueError, KeyError) as err:
        report.problems.append(f"cannot check {RELEASE_JSON}: {type(err).__name__}: {err}")


def verify_release(root: str, threads: Optional[int] = None) -> VerifyReport:
    """Verify a release directory (and its ``packages/`` when present).

    Parameters
    ----------
    root : str
        The release directory (a local folder or an object-store URL).
    threads : int, optional
        Hashing threads (default: one per core).
    """
    report = verify_checksums(root, (PACKAGES_DIR,), threads)
    if not report.problems:
        _check_release_json(root, report)
    packages = storage.join(root, PACKAGES_DIR)
    if storage.is_folder(packages):
        report.merge(verify_checksums(packages, (), threads), f"{PACKAGES_DIR}/")
    return report
