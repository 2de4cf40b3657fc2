"""WriteStackedArrays: the sink of editions that save ``.npy`` (the CIFAR-10-C layout).

``<tree>/<corruption>.npy`` holds the uint8 outputs of one corruption, shape
(S x N, side, side, 3): rows 0..N-1 are severity 1 (the first selected), in input order, then the
next severity, and so on; ``<tree>/labels.npy`` holds the N labels repeated S times (uint8), as
``make_cifar_c.py`` writes them. The clean config's rows (severity None) make a one-block array,
``<tree>/clean.npy`` of shape (N, side, side, 3), in input order (ours: the official archive has
none); it leaves the corruption arrays and ``labels.npy`` as they are. The rows arrive as stacked :class:`schemas.records.OutputRecord` s
(``stacked=True``, raw bytes); each corruption's array is assembled in a local scratch file
(memory stays flat) and moved into place. The files go into the release checksums through a
checksum part of their own.
"""
from __future__ import annotations

import io
import tempfile
from typing import Sequence

import apache_beam as beam
import numpy as np

from schemas.records import OutputRecord

from pipelines.formats import storage
from pipelines.beam.write_release import write_checksum_part

ARRAYS_GROUP = "_arrays"
"""Checksum-part name of the stacked array files."""

_CHUNK = 1 << 20


def npy_header(shape: tuple, dtype=np.uint8) -> bytes:
    """The ``.npy`` (format 1.0) header ``np.save`` writes for a C-ordered array of ``shape``."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                  "fortran_order": False, "shape": tuple(shape)})
    return buffer.getvalue()


def _stream(header: bytes, scratch, size: int):
    yield header
    scratch.seek(0)
    remaining = size
    while remaining:
        chunk = scratch.read(min(_CHUNK, remaining))
        if not chunk:
            raise IOError("scratch file shorter than the array")
        remaining -= len(chunk)
        yield chunk


class _WriteCorruptionArrayFn(beam.DoFn):
    """``(path, [(severity, image key, row bytes)])`` -> the stacked ``.npy`` at ``path``; a FileInfo.

    Rows of severity None (the clean config) make one block of N rows."""

    def __init__(self, output_dir: str, keys: Sequence[str], severities: Sequence[int], row_shape: tuple):
        self._output_dir, self._keys, self._severities = output_dir, tuple(keys), tuple(severities)
        self._row_shape = tuple(row_shape)

    def setup(self):
        self._position = {key: i for i, key in enumerate(self._keys)}
        self._block = {s: i for i, s in enumerate(self._severities)}

    def process(self, element):
        path, rows = element
        rows = list(rows)
        row_bytes = int(np.prod(self._row_shape))
        clean = rows[0][0] is None  # the clean config: one block of N rows
        blocks = {None: 0} if clean else self._block
        count = len(self._keys) * (1 if clean else len(self._severities))
        with tempfile.TemporaryFile() as scratch:
            scratch.truncate(count * row_bytes)  # rows that failed stay zero (they are in failures.jsonl)
            for severity, image_key, data in rows:
                if len(data) != row_bytes:
                    raise ValueError(f"{path}: a row of {len(data)} bytes, expected {row_bytes}")
                if (severity is None) != clean:
                    raise ValueError(f"{path}: clean and corrupted rows in one array")
                scratch.seek((blocks[severity] * len(self._keys) + self._position[image_key]) * row_bytes)
                scratch.write(data)
            header = npy_header((count, *self._row_shape))
            yield storage.write_atomic(self._output_dir, path, _stream(header, scratch, count * row_bytes),
                                       group=ARRAYS_GROUP)


def labels_array(labels: Sequence[int], severities: int) -> np.ndarray:
    """``labels.npy``: the labels in input order, repeated once per severity, uint8."""
    return np.tile(np.asarray(labels, dtype=np.uint8), severities)


def _row(record: OutputRecord):
    return record.path, (record.metadata["severity"], record.metadata["image_key"], record.data)


class WriteStackedArrays(beam.PTransform):
    """Stacked output records -> ``<tree>/<corruption>.npy`` per corruption and ``<tree>/labels.npy``
    (and ``<tree>/clean.npy``, one block, where the records hold the clean config).

    Parameters
    ----------
    output_dir : str
        The release directory.
    labels_path : str
        Release-relative path of the labels array, e.g. ``'CIFAR-10-C/labels.npy'``.
    keys, labels : sequence
        The input images' keys and labels in input (row) order.
    severities : sequence of int
        The selected severities, in order (one block of rows each).
    row_shape : tuple of int
        Shape of one output, e.g. (32, 32, 3).
    """

    def __init__(self, output_dir: str, labels_path: str, keys: Sequence[str], labels: Sequence[int],
                 severities: Sequence[int], row_shape: tuple):
        super().__init__()
        self._output_dir, self._labels_path = output_dir, labels_path
        self._keys, self._labels = list(keys), [int(v) for v in labels]
        self._severities, self._row_shape = list(severities), tuple(row_shape)

    def expand(self, records):
        out = self._output_dir
        arrays = (records
                  | "StackedRows" >> beam.Filter(lambda r: r.stacked)
                  | "KeyByArray" >> beam.Map(_row)
                  | "GroupArrays" >> beam.GroupByKey()
                  | "WriteArrays" >> beam.ParDo(_WriteCorruptionArrayFn(out, self._keys, self._severities,
                                                                      self._row_shape)))
        labels = labels_array(self._labels, len(self._severities))
        labels_file = (records.pipeline
                       | "Labels" >> beam.Create([self._labels_path])
                       | "WriteLabels" >> beam.Map(lambda path: storage.write_atomic(
                           out, path, npy_header(labels.shape) + labels.tobytes(), group=ARRAYS_GROUP)))
        return ((arrays, labels_file)
                | "ArrayFiles" >> beam.Flatten()
                | "CollectArrayFiles" >> beam.combiners.ToList()
                | "WriteArrayChecksums" >> beam.Map(lambda infos: write_checksum_part(out, (ARRAYS_GROUP, infos))))


__all__ = ["WriteStackedArrays", "npy_header", "labels_array", "ARRAYS_GROUP"]
