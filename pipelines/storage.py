"""File access through Beam's file systems, so that inputs and releases may live on a local disk,
a shared file system or an object store (``gs://``) alike.

Every write is atomic: the bytes go to ``DIR/.tmp/<random>`` first and are renamed into place,
so an interrupted or retried worker never leaves a half-written file under its final name.
"""
from __future__ import annotations

import hashlib
import os
import uuid
from typing import Iterable, Optional, Union

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from schemas.records import FileInfo
from schemas.release import TMP_DIR

_RAW = CompressionTypes.UNCOMPRESSED


def join(root: str, relative: str) -> str:
    """``root`` joined with a ``/``-separated relative path."""
    return FileSystems.join(root, *relative.split("/")) if relative else root


def is_local(path: str) -> bool:
    """True for a path on the local file system (no URL scheme)."""
    return FileSystems.get_scheme(path) is None


def read_bytes(path: str, offset: int = 0, length: Optional[int] = None) -> bytes:
    """The bytes of ``path``, or ``length`` bytes from ``offset`` when a length is given.

    Raises
    ------
    OSError
        If the file cannot be opened or is shorter than the requested range.
    """
    with open_stream(path) as stream:
        if length is None:
            return stream.read()
        stream.seek(offset)
        data = stream.read(length)
    if len(data) != length:
        raise OSError(f"{path}: expected {length} bytes at offset {offset}, got {len(data)}")
    return data


def write_atomic(root: str, relative: str, data: Union[bytes, Iterable[bytes]], group: str = "") -> FileInfo:
    """Write ``data`` (bytes, or an iterable of byte chunks) to ``root/relative`` atomically and
    describe the file written."""
    temporary = join(root, f"{TMP_DIR}/{uuid.uuid4().hex}")
    digest, size = hashlib.sha256(), 0
    with FileSystems.create(temporary, compression_type=_RAW) as stream:
        for chunk in [data] if isinstance(data, (bytes, bytearray)) else data:
            stream.write(chunk)
            digest.update(chunk)
            size += len(chunk)
    destination = join(root, relative)
    if is_local(destination):
        os.makedirs(os.path.dirname(destination), exist_ok=True)
    FileSystems.rename([temporary], [destination])
    return FileInfo(path=relative, sha256=digest.hexdigest(), size=size, group=group)


def open_stream(path: str):
    """A seekable binary stream reading ``path``."""
    return FileSystems.open(path, compression_type=_RAW)


def create_stream(path: str):
    """A binary stream writing a new file at ``path`` (parent folders are made on a local disk).

    Not atomic: only for files under a fresh, unique name that nothing reads before the stream
    is closed (scratch files such as :mod:`pipelines.spill`'s)."""
    return FileSystems.create(path, compression_type=_RAW)


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob pattern."""
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def parent(path: str) -> str:
    return FileSystems.split(path)[0]


def basename(path: str) -> str:
    return FileSystems.split(path)[1]


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def delete_tree(path: str) -> None:
    """Delete a file or a folder with everything below it; nothing happens when it is absent."""
    if FileSystems.exists(path):
        FileSystems.delete([path])


def list_files(root: str, relative_folder: str) -> list[str]:
    """Sorted relative paths of the files directly inside ``root/relative_folder``."""
    folder = join(root, relative_folder)
    if not FileSystems.exists(folder):
        return []
    return sorted(f"{relative_folder}/{basename(p)}" for p in match(FileSystems.join(folder, "*")))
