"""WriteSequenceArrays: the sink of the ImageNet-P editions that save ``.npy`` (the CIFAR-10-P layout).

``<tree>/<perturbation>[_<d>].npy`` holds one dataset: uint8, shape (N, T, H, W, 3), row i the
sequence of the i-th input image in input order (a CIFAR test set's order), as ``make_cifar_p.py``
saves it. The rows arrive as stacked :class:`schemas.records.OutputRecord` s (``stacked=True``, the
raw frames); each array is assembled in a local scratch file (memory stays flat) and streamed into
place with the ``.npy`` header of :func:`pipelines.beam.npy_release.npy_header`. The files go into the
release checksums through a checksum part of their own.
"""
from __future__ import annotations

import tempfile
from typing import Mapping, Sequence

import apache_beam as beam
import numpy as np

from schemas.records import OutputRecord

from pipelines.formats import storage
from pipelines.beam.npy_release import npy_header
from pipelines.beam.write_release import write_checksum_part

SEQUENCE_ARRAYS_GROUP = "_sequence_arrays"
"""Checksum-part name of the ``.npy`` sequence files."""

_CHUNK = 1 << 20


def _chunks(header: bytes, scratch, size: int):
    yield header
    scratch.seek(0)
    while size:
        chunk = scratch.read(min(_CHUNK, size))
        if not chunk:
            raise IOError("scratch file shorter than the array")
        size -= len(chunk)
        yield chunk


class _WriteSequenceArrayFn(beam.DoFn):
    """``(path, [(image key, row bytes)])`` -> the ``.npy`` at ``path``; a FileInfo."""

    def __init__(self, output_dir: str, keys: Sequence[str], row_shapes: Mapping[str, tuple]):
        self._output_dir, self._keys, self._row_shapes = output_dir, tuple(keys), dict(row_shapes)

    def setup(self):
        self._position = {key: i for i, key in enumerate(self._keys)}

    def process(self, element):
        path, rows = element
        shape = self._row_shapes[path]
        row_bytes = int(np.prod(shape))
        with tempfile.TemporaryFile() as scratch:
            scratch.truncate(len(self._keys) * row_bytes)  # rows that failed stay zero (see failures.jsonl)
            for image_key, data in rows:
                if len(data) != row_bytes:
                    raise ValueError(f"{path}: a row of {len(data)} bytes, expected {row_bytes} for {shape}")
                scratch.seek(self._position[image_key] * row_bytes)
                scratch.write(data)
            header = npy_header((len(self._keys), *shape))
            yield storage.write_atomic(self._output_dir, path, _chunks(header, scratch, len(self._keys) * row_bytes),
                                       group=SEQUENCE_ARRAYS_GROUP)


class WriteSequenceArrays(beam.PTransform):
    """Stacked sequence records -> one ``.npy`` per dataset.

    Parameters
    ----------
    output_dir : str
        The release directory.
    keys : sequence of str
        The input images' keys in input (row) order.
    row_shapes : Mapping[str, tuple]
        Release-relative path of each array -> the shape of one row, (T, H, W, 3).
    """

    def __init__(self, output_dir: str, keys: Sequence[str], row_shapes: Mapping[str, tuple]):
        super().__init__()
        self._output_dir, self._keys, self._row_shapes = output_dir, list(keys), dict(row_shapes)

    def expand(self, records):
        out = self._output_dir
        return (records
                | "StackedSequences" >> beam.Filter(lambda r: r.stacked)
                | "KeyByArray" >> beam.Map(lambda r: (r.path, (r.metadata["image_key"], r.data)))
                | "GroupArrays" >> beam.GroupByKey()
                | "WriteArrays" >> beam.ParDo(_WriteSequenceArrayFn(out, self._keys, self._row_shapes))
                | "CollectArrayFiles" >> beam.combiners.ToList()
                | "WriteArrayChecksums" >> beam.Map(
                    lambda infos: write_checksum_part(out, (SEQUENCE_ARRAYS_GROUP, infos))))


__all__ = ["WriteSequenceArrays", "SEQUENCE_ARRAYS_GROUP"]
