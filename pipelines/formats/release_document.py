"""``release.json`` on storage: the one writer and the one reader of :class:`schemas.release.Release`."""
from __future__ import annotations

from schemas.records import FileInfo
from schemas.release import RELEASE_JSON, Release

from pipelines.formats import storage

__all__ = ["read_release", "write_release"]


def read_release(release_dir: str, relative: str = RELEASE_JSON) -> Release:
    """The release (or build record, ``relative``) in ``release_dir``, old releases included.

    Raises
    ------
    OSError
        When the file cannot be read.
    ValueError
        When it is not a JSON object.
    """
    return Release.from_text(storage.read_bytes(storage.join(release_dir, relative)))


def write_release(release_dir: str, release: Release) -> FileInfo:
    """Write ``release_dir/release.json`` atomically (:meth:`schemas.release.Release.text`) and
    describe the file written."""
    return storage.write_atomic(release_dir, RELEASE_JSON, release.text().encode("utf-8"))
