"""StackedArrays: the sink of editions that save ``.npy`` (the CIFAR-10-C and CIFAR-10-P layouts).

ImageNet-C: ``<tree>/<corruption>.npy`` holds the uint8 outputs of one corruption, shape
(S x N, side, side, 3): rows 0..N-1 are severity 1 (the first selected), in input order, then the
next severity, and so on; ``<tree>/labels.npy`` holds the N labels repeated S times (uint8), as
``make_cifar_c.py`` writes them. The clean config's rows (severity None) make a one-block array,
``<tree>/clean.npy`` of shape (N, side, side, 3), in input order (ours: the official archive has
none); it leaves the corruption arrays and ``labels.npy`` as they are.

ImageNet-P: ``<tree>/<perturbation>[_<d>].npy`` holds one dataset: uint8, shape (N, T, H, W, 3),
row i the sequence of the i-th input image in input order (a CIFAR test set's order), as
``make_cifar_p.py`` saves it: one block, as its rows have no severity.

The rows arrive as stacked :class:`schemas.records.OutputRecord` s (``stacked=True``, raw bytes).
The worker that made a row parks its bytes in a spill file (:mod:`pipelines.formats.spill`), and the
list of an array's rows (key, severity, place) in the same file, a list per bundle and array (or per
:data:`ROWS_PER_LIST` rows), so that only references to these lists cross the shuffle that brings an
array's rows together: a local runner holds every shuffled element in the driver's memory, a whole
CIFAR-10-P is 19 GB of rows, and even a reference per row (200,000 of them) would make the driver
grow with the input. Each array
is assembled in a local scratch file from its rows' spilled bytes (memory stays flat) and streamed
into place. The files go into the release checksums through a checksum part of their own.
"""
from __future__ import annotations

import collections
import io
import json
import tempfile
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence, Union

import apache_beam as beam
import numpy as np
from apache_beam.transforms.window import GlobalWindows

from schemas.records import OutputRecord, SourceEntry

from pipelines.formats import storage
from pipelines.formats.spill import SpillRef, SpillWriter, iter_spilled
from pipelines.formats.release_sink import ReleaseFiles, ReleaseSink

ARRAYS_GROUP = "_arrays"
"""Checksum-part name of ImageNet-C's stacked array files."""
SEQUENCE_ARRAYS_GROUP = "_sequence_arrays"
"""Checksum-part name of ImageNet-P's ``.npy`` sequence files."""

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


ROWS_PER_LIST = 4096
"""Most rows in one spilled row list: a worker holds at most this many rows' references per array."""


class _SpillRowsFn(beam.DoFn):
    """Stacked records -> ``(path, SpillRef of a row list)``: each record's bytes are appended to this
    bundle's spill file, and so is, per array, the list of its rows (:func:`rows_bytes`) at the end of
    the bundle or every :data:`ROWS_PER_LIST` rows. A retried bundle writes a file of its own; only
    the references of the bundle that succeeded cross the shuffle, a few per bundle and array."""

    def __init__(self, output_dir: str):
        self._output_dir = output_dir

    def start_bundle(self):
        self._spill = SpillWriter(self._output_dir)
        self._rows: dict[str, list] = collections.defaultdict(list)
        self._lists: list[tuple[str, SpillRef]] = []

    def process(self, record: OutputRecord):
        rows = self._rows[record.path]
        rows.append((record.metadata.get("severity"), record.metadata["image_key"], self._spill.append(record.data)))
        if len(rows) >= ROWS_PER_LIST:
            self._spill_rows(record.path)
        return []

    def _spill_rows(self, path: str) -> None:
        self._lists.append((path, self._spill.append(rows_bytes(self._rows.pop(path)))))

    def finish_bundle(self):
        for path in sorted(self._rows):
            self._spill_rows(path)
        self._spill.close()
        for element in self._lists:
            yield GlobalWindows.windowed_value(element)


def rows_bytes(rows: Sequence[tuple]) -> bytes:
    """``[(severity, image key, SpillRef)]`` as JSON lines (:func:`read_rows` reads them back)."""
    return "".join(json.dumps([severity, key, *ref]) + "\n" for severity, key, ref in rows).encode("utf-8")


def read_rows(refs: Sequence[SpillRef]) -> list:
    """The rows ``[(severity, image key, SpillRef)]`` of the spilled row lists at ``refs``, in
    file and offset order."""
    return [(severity, key, SpillRef(*ref)) for _, data in iter_spilled(refs)
            for severity, key, *ref in map(json.loads, data.decode("utf-8").splitlines())]


class _WriteArrayFn(beam.DoFn):
    """``(path, [SpillRef of a row list])`` -> the stacked ``.npy`` at ``path``; a FileInfo.

    One block of N rows per severity; rows of severity None (the clean config, a P dataset) make
    one block of N rows."""

    def __init__(self, output_dir: str, keys: Sequence[str], severities: Sequence[int],
                 row_shape: Union[tuple, Mapping[str, tuple]], group: str):
        self._output_dir, self._keys, self._severities = output_dir, tuple(keys), tuple(severities)
        self._row_shape, self._group = row_shape, group

    def setup(self):
        self._position = {key: i for i, key in enumerate(self._keys)}
        self._block = {s: i for i, s in enumerate(self._severities)}

    def process(self, element):
        path, lists = element
        rows = read_rows(list(lists))  # references only: the rows' bytes are read one at a time below
        shape = tuple(self._row_shape[path] if isinstance(self._row_shape, Mapping) else self._row_shape)
        row_bytes = int(np.prod(shape))
        one_block = rows[0][0] is None  # the clean config, a P dataset: one block of N rows
        blocks = {None: 0} if one_block else self._block
        count = len(self._keys) * (1 if one_block else len(self._severities))
        with tempfile.TemporaryFile() as scratch:
            scratch.truncate(count * row_bytes)  # rows that failed stay zero (they are in failures.jsonl)
            for index, data in iter_spilled([ref for _, _, ref in rows]):
                severity, image_key, _ = rows[index]
                if len(data) != row_bytes:
                    raise ValueError(f"{path}: a row of {len(data)} bytes, expected {row_bytes} for {shape}")
                if (severity is None) != one_block:
                    raise ValueError(f"{path}: clean and corrupted rows in one array")
                scratch.seek((blocks[severity] * len(self._keys) + self._position[image_key]) * row_bytes)
                scratch.write(data)
            header = npy_header((count, *shape))
            yield storage.write_atomic(self._output_dir, path, _stream(header, scratch, count * row_bytes),
                                       group=self._group)


def labels_array(labels: Sequence[int], severities: int) -> np.ndarray:
    """``labels.npy``: the labels in input order, repeated once per severity, uint8."""
    return np.tile(np.asarray(labels, dtype=np.uint8), severities)


@dataclass(frozen=True)
class StackedArrays(ReleaseSink):
    """Stacked output records -> one ``.npy`` per path (``record.path``), rows in input order, one
    block per severity (and ``labels.npy`` where ``labels_path`` is given); a
    :class:`pipelines.formats.release_sink.ReleaseSink` with a branch of its own, so it sees every output.

    Attributes
    ----------
    row_shape : tuple of int, or mapping
        Shape of one row, e.g. (32, 32, 3); or release-relative path of each array -> the shape of
        its rows, e.g. (T, H, W, 3).
    severities : sequence of int
        The selected severities, in order (one block of rows each); rows without a severity make
        one block.
    labels_path : str, optional
        Release-relative path of the labels array, e.g. ``'CIFAR-10-C/labels.npy'``: the N labels
        repeated once per severity.
    checksum_part : str
        The checksum part of the arrays (:data:`ARRAYS_GROUP`, :data:`SEQUENCE_ARRAYS_GROUP`).
    keys, labels : tuple
        The input images' keys and labels in input (row) order (:meth:`for_input`).
    """

    name = "npy"
    row_shape: Union[tuple, Mapping[str, tuple]] = ()
    severities: tuple = ()
    labels_path: Optional[str] = None
    checksum_part: str = ARRAYS_GROUP
    keys: tuple = ()
    labels: tuple = ()

    def for_input(self, entries: Sequence[SourceEntry]) -> "StackedArrays":
        return replace(self, keys=tuple(e.key for e in entries), labels=tuple(e.label for e in entries))

    def expand(self, records, release: ReleaseFiles):
        out = release.output_dir
        arrays = (records
                  | "StackedRows" >> beam.Filter(lambda r: r.stacked)
                  | "SpillRows" >> beam.ParDo(_SpillRowsFn(out))
                  | "GroupArrays" >> beam.GroupByKey()
                  | "WriteArrays" >> beam.ParDo(_WriteArrayFn(out, self.keys, self.severities, self.row_shape,
                                                              self.checksum_part)))
        if self.labels_path is None:
            return arrays
        labels = labels_array([int(v) for v in self.labels], len(self.severities))
        labels_file = (records.pipeline
                       | "Labels" >> beam.Create([self.labels_path])
                       | "WriteLabels" >> beam.Map(lambda path, group: storage.write_atomic(
                           out, path, npy_header(labels.shape) + labels.tobytes(), group=group), self.checksum_part))
        return (arrays, labels_file) | "ArrayFiles" >> beam.Flatten()


__all__ = ["StackedArrays", "npy_header", "labels_array", "ARRAYS_GROUP", "SEQUENCE_ARRAYS_GROUP"]
