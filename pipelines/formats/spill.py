"""Spill files: large values a worker parks in the release's scratch folder, so that what crosses
a shuffle is at most a small reference (path, offset, length), never the bytes.

A local FnApiRunner holds every shuffled element in the driver's memory, and a distributed
runner moves it through its shuffle service. A worker therefore appends each large value (a
serialized TFRecord example) to a spill file, ``DIR/.spill/<name>`` (one per part of
:mod:`pipelines.formats.parts`, which records where each value lies); :class:`SpillReader` (and
:func:`read_spilled`) fetch the ranges back.

Retries and reruns are safe: a retried bundle writes a new file under a new name, and only
ranges that committed parts point to are ever read. :func:`pipelines.beam.write_release.seal_release`
removes the folder with the other scratch folders. Scratch space: the spilled values once more
(for ImageNet-C, about the size of the TFRecord shards; for a release whose formats read no TFDS
examples, only the rows of its ``.npy`` arrays) until the release is sealed.
"""
from __future__ import annotations

import collections
import itertools
import uuid
from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

from schemas.release import SPILL_DIR

from pipelines.formats import storage

__all__ = ["SpillRef", "SpillWriter", "iter_spilled", "read_spilled", "SpillReader"]


class SpillRef(NamedTuple):
    """Where one spilled value lies: ``length`` bytes at ``offset`` in the spill file ``path``."""

    path: str
    offset: int
    length: int


class SpillWriter:
    """Appends byte strings to one new spill file; make one per bundle and close it in ``finish_bundle``.

    The file is created on the first :meth:`append`, so an empty bundle leaves no file.

    Parameters
    ----------
    output_dir : str
        The release directory (local, or any Beam file system); the file is ``DIR/.spill/<name>``.
    name : str, optional
        A fresh, unique file name (default: a random one).
    """

    def __init__(self, output_dir: str, name: Optional[str] = None):
        self._path = storage.join(output_dir, f"{SPILL_DIR}/{name or uuid.uuid4().hex}")
        self._stream = None
        self._size = 0

    def append(self, data: bytes) -> SpillRef:
        """Write ``data`` at the end of the file and return where it lies (nothing is written for
        empty ``data``)."""
        if not data:
            return SpillRef(self._path, self._size, 0)
        if self._stream is None:
            self._stream = storage.create_stream(self._path)
        self._stream.write(data)
        ref = SpillRef(self._path, self._size, len(data))
        self._size += len(data)
        return ref

    def close(self) -> None:
        """Finish the file (nothing happens when nothing was appended or it is closed already)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def iter_spilled(refs: Sequence[SpillRef]) -> Iterator[tuple[int, bytes]]:
    """``(index, bytes)`` of each reference, in file and offset order (each spill file opened once,
    one value held at a time).

    Raises
    ------
    OSError
        If a file cannot be opened or holds fewer bytes than a reference says.
    """
    order = sorted(range(len(refs)), key=lambda i: (refs[i].path, refs[i].offset))
    for path, indices in itertools.groupby(order, key=lambda i: refs[i].path):
        with storage.open_stream(path) as stream:
            for i in indices:
                stream.seek(refs[i].offset)
                value = stream.read(refs[i].length)
                if len(value) != refs[i].length:
                    raise OSError(f"{path}: expected {refs[i].length} bytes at offset {refs[i].offset}, "
                                  f"got {len(value)}")
                yield i, value


def read_spilled(refs: Iterable[SpillRef]) -> list[bytes]:
    """The bytes of each reference, in the order given (:func:`iter_spilled`)."""
    refs = list(refs)
    values: list = [b""] * len(refs)
    for i, value in iter_spilled(refs):
        values[i] = value
    return values


class SpillReader:
    """Reads single values from spill files, keeping a few files open (the least recently used
    is closed first), for readers that go through many files in an order of their own.

    Parameters
    ----------
    output_dir : str
        The release directory; names are relative to ``DIR/.spill/``.
    open_files : int
        Files kept open at most.
    """

    def __init__(self, output_dir: str, open_files: int = 16):
        self._output_dir, self._limit = output_dir, open_files
        self._streams: collections.OrderedDict = collections.OrderedDict()

    def read(self, name: str, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of spill file ``name``.

        Raises
        ------
        OSError
            If the file cannot be opened or holds fewer bytes than asked for.
        """
        stream = self._streams.pop(name, None)
        if stream is None:
            stream = storage.open_stream(storage.join(self._output_dir, f"{SPILL_DIR}/{name}"))
            while len(self._streams) >= self._limit:
                self._streams.popitem(last=False)[1].close()
        self._streams[name] = stream
        stream.seek(offset)
        data = stream.read(length)
        if len(data) != length:
            raise OSError(f"{SPILL_DIR}/{name}: expected {length} bytes at offset {offset}, got {len(data)}")
        return data

    def close(self) -> None:
        while self._streams:
            self._streams.popitem()[1].close()
