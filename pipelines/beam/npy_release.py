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
No row, and no reference to one, crosses a shuffle: the writer commits each row in the build's
parts (:meth:`pipelines.formats.parts.PartWriter.add_stacked_output`: its bytes in the part's spill
file, where they lie in its run line), as it commits every output, and once every part is committed
(after the shuffle of the parts' names, :class:`pipelines.beam.write_release.WriteRelease`) each
array is assembled from the committed runs of its configs: a config's first run line names its
array, only the runs' names are grouped by array, and one task per array reads its rows' spilled
bytes one at a time into a local scratch file (memory stays flat, whatever the release) and streams
it into place. A resumed build's earlier parts are among the committed ones, so an interrupted
build keeps the rows it committed and builds only the images they miss. The files go into the
release checksums through a checksum part of their own.
"""
from __future__ import annotations

import io
import itertools
import tempfile
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from schemas.records import SourceEntry
from schemas.release import SPILL_DIR

from pipelines.formats import storage
from pipelines.formats.parts import run_fields, run_manifest
from pipelines.formats.spill import SpillRef, iter_spilled
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


def _row(part: str, fields: list, output_dir: str) -> Optional[tuple[str, Optional[int], str, SpillRef]]:
    """``(array path, severity, image key, SpillRef of the row's bytes)`` of a committed run line;
    None for an output that is not a row of a stacked array (its line has no row reference)."""
    if len(fields) < 8:
        return None
    manifest = run_manifest(fields)
    offset, length = fields[7]
    return (manifest["path"], manifest.get("severity"), manifest["image_key"],
            SpillRef(storage.join(output_dir, f"{SPILL_DIR}/{part}"), offset, length))


def _config_array(element, output_dir: str) -> Iterator[tuple[str, tuple]]:
    """``(config, [(table, part, offset, length)])`` of the committed parts ->
    ``(array path, (config, runs))``, the array named by the config's first row (every row of a
    config belongs to one array); nothing for the release-wide lists or a config without rows."""
    config, names = element
    runs = sorted({tuple(name[1:]) for name in names if name is not None and name[0] == config})
    for part, fields in itertools.islice(run_fields(output_dir, runs), 1):
        row = _row(part, fields, output_dir)
        if row is not None:
            yield row[0], (config, runs)


def _block_rows(output_dir: str, runs: Iterable[tuple]) -> Iterator[tuple]:
    """The rows of committed runs: ``(array path, severity, image key, bytes)``, one at a time, each
    run's rows read in spill-file order (a run lists at most one part's records)."""
    for part, lines in itertools.groupby(run_fields(output_dir, runs), key=lambda item: item[0]):
        rows = [row for row in (_row(part, fields, output_dir) for _, fields in lines) if row is not None]
        for index, data in iter_spilled([row[3] for row in rows]):
            yield (*rows[index][:3], data)


class _WriteArrayFn(beam.DoFn):
    """``(path, [(config, committed runs)])`` -> the stacked ``.npy`` at ``path``, assembled from the
    rows the runs commit; a FileInfo.

    One block of N rows per severity; rows of severity None (the clean config, a P dataset) make
    one block of N rows. A row two parts hold (an image rebuilt after an interruption) is written
    twice at its place, with the same bytes."""

    def __init__(self, output_dir: str, keys: Sequence[str], severities: Sequence[int],
                 row_shape: Union[tuple, Mapping[str, tuple]], group: str):
        self._output_dir, self._keys, self._severities = output_dir, tuple(keys), tuple(severities)
        self._row_shape, self._group = row_shape, group

    def setup(self):
        self._position = {key: i for i, key in enumerate(self._keys)}
        self._block = {s: i for i, s in enumerate(self._severities)}

    def process(self, element):
        path, configs = element
        runs = sorted({run for _, config_runs in configs for run in config_runs})
        shape = tuple(self._row_shape[path] if isinstance(self._row_shape, Mapping) else self._row_shape)
        row_bytes = int(np.prod(shape))
        with tempfile.TemporaryFile() as scratch:
            one_block = None  # the clean config, a P dataset: one block of N rows
            for row_path, severity, image_key, data in _block_rows(self._output_dir, runs):
                one_block = (severity is None) if one_block is None else one_block
                if row_path != path:
                    raise ValueError(f"{path}: a row of {row_path} among its configs' rows")
                if len(data) != row_bytes:
                    raise ValueError(f"{path}: a row of {len(data)} bytes, expected {row_bytes} for {shape}")
                if (severity is None) != one_block:
                    raise ValueError(f"{path}: clean and corrupted rows in one array")
                block = 0 if one_block else self._block[severity]
                scratch.seek((block * len(self._keys) + self._position[image_key]) * row_bytes)
                scratch.write(data)
            count = len(self._keys) * (1 if one_block else len(self._severities))
            scratch.truncate(count * row_bytes)  # rows that failed stay zero (they are in failures.jsonl)
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
    :class:`pipelines.formats.release_sink.ReleaseSink` that keeps the rows in the committed parts
    (``keeps_rows``) and assembles the arrays from them in a branch of its own (module doc).

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
    keeps_rows = True
    row_shape: Union[tuple, Mapping[str, tuple]] = ()
    severities: tuple = ()
    labels_path: Optional[str] = None
    checksum_part: str = ARRAYS_GROUP
    keys: tuple = ()
    labels: tuple = ()

    def for_input(self, entries: Sequence[SourceEntry]) -> "StackedArrays":
        return replace(self, keys=tuple(e.key for e in entries), labels=tuple(e.label for e in entries))

    def expand(self, parts, release: ReleaseFiles):
        out = release.output_dir
        arrays = (parts
                  | "ConfigArrays" >> beam.FlatMap(_config_array, out)
                  | "GroupArrays" >> beam.GroupByKey()
                  | "WriteArrays" >> beam.ParDo(_WriteArrayFn(out, self.keys, self.severities, self.row_shape,
                                                              self.checksum_part)))
        if self.labels_path is None:
            return arrays
        labels = labels_array([int(v) for v in self.labels], len(self.severities))
        labels_file = (parts.pipeline
                       | "Labels" >> beam.Create([self.labels_path])
                       | "WriteLabels" >> beam.Map(lambda path, group: storage.write_atomic(
                           out, path, npy_header(labels.shape) + labels.tobytes(), group=group), self.checksum_part))
        return (arrays, labels_file) | "ArrayFiles" >> beam.Flatten()


__all__ = ["StackedArrays", "npy_header", "labels_array", "ARRAYS_GROUP", "SEQUENCE_ARRAYS_GROUP"]
