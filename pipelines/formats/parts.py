"""Part files: what workers hand to the final writers of a release, so that no per-output element
crosses a shuffle and a build can resume after any interruption.

A local FnApiRunner holds every shuffled element in the driver's memory, so the release sinks do
not shuffle outputs. A worker's :class:`PartWriter` collects, for each output, a small *run line*
(key, TFRecord shard, manifest line, checksum, where its serialized example lies in the part's
spill file; for a row of a stacked ``.npy`` array, where the row's bytes lie too) and, for each
source or failure record, its JSON line. Every :data:`PART_RECORDS` records or :data:`PART_SECONDS`
seconds, and at the end of a bundle, it *commits a part*:

1. the spill file ``DIR/.spill/<part>`` (the serialized examples) is closed;
2. the part's runs, ``DIR/.parts/runs/<part>.jsonl``, are written: one sorted run per table (a
   group, or a list), one after the other;
3. the ledger entry ``DIR/.parts/ledger/<part>.json`` (where each table's run lies in the runs
   file, counts, bytes, the host that made it) is written last, atomically: a part counts only
   once it exists.

A part is three files whatever the number of groups. Only the runs' names ``(table, part,
offset, length)`` go on through the pipeline. The final writers merge the committed runs of a
table with :func:`merge_runs` (``heapq.merge`` over chunked range readers: memory of one chunk
per run, the chunks smaller when there are many runs, :data:`MERGE_BYTES`; not of the records). A record that two parts hold (an image that
was being built when a build was interrupted, and was built again by the rerun) is kept once:
builds are deterministic, so both copies are equal.

On a rerun the driver reads the ledger (:func:`read_ledger`), counts what each input image
already has (:func:`completed_images`) and builds only the others. While a job runs elsewhere, the
driver follows its committed outputs (:class:`CommittedOutputs`) for the progress line.
"""
from __future__ import annotations

import collections
import heapq
import json
import socket
import time
import uuid
from array import array
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from schemas.release import PARTS_DIR

from pipelines.formats import storage
from pipelines.formats.spill import SpillWriter

__all__ = ["RUNS_DIR", "LEDGER_DIR", "SOURCES_TABLE", "FAILURES_TABLE", "PART_RECORDS", "PART_SECONDS", "READ_CHUNK",
           "MERGE_BYTES", "MIN_READ_CHUNK", "LedgerEntry", "ledger_path", "run_path", "PartWriter", "read_ledger", "iter_file_chunks", "iter_lines",
           "merge_runs", "run_fields", "run_manifest", "ledger_runs", "completed_images", "CommittedOutputs",
           "CommittedRecords"]

RUNS_DIR = f"{PARTS_DIR}/runs"
LEDGER_DIR = f"{PARTS_DIR}/ledger"
SOURCES_TABLE = "_sources"
FAILURES_TABLE = "_failures"
"""Run names of the release-wide lists (groups are TFDS config names, which never start with ``_``)."""

PART_RECORDS = 10_000
"""Records after which a worker commits a part (memory of a part: its run lines, ~0.5 KiB each).
Each committed run's name crosses the shuffle that groups runs by config, and a part holds a run
of every config its images reach (all 96 of an ImageNet-C image): at 1,000 records a part, the
whole ImageNet 64x64-C (4.8 million outputs, 4,800 parts) sent 460,000 names through it, and a
local runner's driver held about 470 MiB more at the end than at 5,000 images. Fast editions
reach this limit first; slower ones commit by :data:`PART_SECONDS`."""
PART_SECONDS = 120.0
"""Seconds after which a worker commits a part: the most work one worker loses to an interruption."""
READ_CHUNK = 1 << 18
"""Bytes a run reader holds at a time (one per run being merged)."""
MERGE_BYTES = 1 << 25
"""Bytes the run readers of one merge hold together at most: a merge of more than
``MERGE_BYTES / READ_CHUNK`` runs reads each in smaller chunks (at least :data:`MIN_READ_CHUNK`),
so that its memory does not grow with the number of parts a whole release commits."""
MIN_READ_CHUNK = 1 << 14
"""The smallest chunk a run reader of a merge reads."""


@dataclass(frozen=True)
class LedgerEntry:
    """The ledger entry of a committed part, ``DIR/.parts/ledger/<part>.json``.

    Attributes
    ----------
    part : str
        The part's name (its runs file is :func:`run_path`).
    tables : mapping of str to (int, int)
        Table (a group, or a list) -> where its run lies in the runs file: ``(offset, length)``.
    records : int
        Records the part holds (outputs, source and failure lines).
    bytes : int
        Bytes of the part's serialized examples (its spill file).
    host : str
        The machine that made it: how a cluster spread the work.
    """

    part: str
    tables: Mapping[str, tuple[int, int]]
    records: int
    bytes: int
    host: str

    @classmethod
    def from_text(cls, text: Union[str, bytes]) -> "LedgerEntry":
        """The entry of a ledger file's text.

        Raises
        ------
        ValueError
            When the text is not a ledger entry.
        """
        document = json.loads(text)
        try:
            return cls(part=document["part"], records=document["records"], bytes=document["bytes"],
                       host=document["host"],
                       tables={table: (offset, length) for table, (offset, length) in document["tables"].items()})
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a ledger entry ({type(err).__name__}: {err})") from err

    def text(self) -> str:
        """The ledger file's text (one JSON object)."""
        return json.dumps({"part": self.part, "tables": {t: list(run) for t, run in self.tables.items()},
                           "records": self.records, "bytes": self.bytes, "host": self.host})


def ledger_path(part: str) -> str:
    """Relative path of a part's ledger entry, ``.parts/ledger/<part>.json``."""
    return f"{LEDGER_DIR}/{part}.json"


def run_path(part: str) -> str:
    """Relative path of the runs of ``part``."""
    return f"{RUNS_DIR}/{part}.jsonl"


_leader_commits = [0]
"""Parts the output writers of this process committed so far (see ``follow``)."""


class PartWriter:
    """A worker's parts: collect run lines, commit every ``max_records`` or ``max_seconds``.

    Parameters
    ----------
    output_dir : str
        The release directory.
    max_records, max_seconds : int, float
        When :meth:`due` says a part should be committed.
    follow : bool
        Also commit as soon as an output writer (``follow=False``) of this process has committed
        one: the list writers, whose one source record per image would otherwise wait for
        ``max_records`` images, so that the images of a committed output part count as done.
    """

    def __init__(self, output_dir: str, max_records: int = PART_RECORDS, max_seconds: float = PART_SECONDS,
                 follow: bool = False):
        self._output_dir, self._max_records, self._max_seconds = output_dir, max_records, max_seconds
        self._follow = follow
        self._open()

    def _open(self):
        self.part = uuid.uuid4().hex
        self._runs: dict = collections.defaultdict(list)
        self._records = 0
        self._bytes = 0
        self._spill = SpillWriter(self._output_dir, self.part)
        self._started = time.monotonic()
        self._leaders_seen = _leader_commits[0]

    def add_output(self, group: str, key: str, shard: int, manifest_line: str, sha256: str, path: Optional[str],
                   size: int, example: bytes) -> None:
        """One output: its file is written already; its example goes to the part's spill file.
        ``path`` is where its ``SHA256SUMS`` line points (None: no line of its own)."""
        ref = self._spill.append(example)
        self._add_run_line(group, key, [key, shard, ref.offset, ref.length, sha256, path, manifest_line],
                           size + len(example))

    def add_stacked_output(self, group: str, key: str, shard: int, manifest_line: str, sha256: str, example: bytes,
                           row: bytes) -> None:
        """One row of a stacked array (no file of its own): its example and then its row's bytes go to
        the part's spill file; its run line ends in ``[row offset, row length]``, so that the array
        is assembled from the committed parts (:mod:`pipelines.beam.npy_release`)."""
        ref, row_ref = self._spill.append(example), self._spill.append(row)
        self._add_run_line(group, key, [key, shard, ref.offset, ref.length, sha256, None, manifest_line,
                                        [row_ref.offset, row_ref.length]], len(row) + len(example))

    def _add_run_line(self, group: str, key: str, fields: list, size: int) -> None:
        self._runs[group].append((key, json.dumps(fields, ensure_ascii=False)))
        self._records += 1
        self._bytes += size

    def add_line(self, table: str, key: str, line: str) -> None:
        """One line of a release-wide list (``sources.jsonl``, ``failures.jsonl``), sorted by key then text."""
        self._runs[table].append(((key, line), json.dumps([key, line], ensure_ascii=False)))
        self._records += 1

    def due(self) -> bool:
        return self._records >= self._max_records or (self._records > 0 and (
            time.monotonic() - self._started >= self._max_seconds
            or (self._follow and _leader_commits[0] != self._leaders_seen)))

    def commit(self) -> list:
        """Commit the part (nothing when it is empty); return its runs' ``(table, part, offset,
        length)``."""
        if not self._records:
            return []
        self._spill.close()
        chunks, ranges, offset = [], {}, 0
        for table in sorted(self._runs):
            data = "".join(line + "\n" for _, line in sorted(self._runs[table], key=lambda item: item[0])).encode()
            chunks.append(data)
            ranges[table] = [offset, len(data)]
            offset += len(data)
        storage.write_atomic(self._output_dir, run_path(self.part), chunks)
        entry = LedgerEntry(part=self.part, tables={table: tuple(run) for table, run in ranges.items()},
                            records=self._records, bytes=self._bytes, host=socket.gethostname())
        storage.write_atomic(self._output_dir, ledger_path(self.part), entry.text().encode("utf-8"))
        names = [(table, self.part, start, length) for table, (start, length) in ranges.items()]
        if not self._follow:
            _leader_commits[0] += 1
        self._open()
        return names


def read_ledger(output_dir: str) -> list[LedgerEntry]:
    """The committed parts' ledger entries, sorted by part name."""
    entries = []
    for relative in storage.list_files(output_dir, LEDGER_DIR):
        entries.append(LedgerEntry.from_text(storage.read_bytes(storage.join(output_dir, relative))))
    return sorted(entries, key=lambda e: e.part)


class CommittedOutputs:
    """The outputs a build in progress has committed so far, read from its ledger a little at a
    time: each call lists the ledger and reads only the entries it has not read before (a part is
    committed once and never changes), so that following a long build costs one read per part.

    Parameters
    ----------
    output_dir : str
        The release directory.
    before : iterable of str
        Parts committed by earlier runs, not counted (a resumed build counts its own outputs).
    """

    def __init__(self, output_dir: str, before: Iterable[str] = ()):
        self._output_dir, self._seen, self._outputs = output_dir, set(before), 0

    def __call__(self) -> int:
        for relative in storage.list_files(self._output_dir, LEDGER_DIR):
            part = relative.rsplit("/", 1)[-1][:-len(".json")]
            if part not in self._seen:
                entry = LedgerEntry.from_text(storage.read_bytes(storage.join(self._output_dir, relative)))
                self._outputs += self._counted(entry)
                self._seen.add(part)
        return self._outputs

    @staticmethod
    def _counted(entry: LedgerEntry) -> int:
        """What one ledger entry adds: its records when its part holds output bytes."""
        return entry.records if entry.bytes else 0


class CommittedRecords(CommittedOutputs):
    """Like :class:`CommittedOutputs`, but every committed record counts: the outputs, the source
    records and the predictions (what a full-size run waits for before it kills a step)."""

    @staticmethod
    def _counted(entry: LedgerEntry) -> int:
        return entry.records


def iter_file_chunks(path: str, start: int = 0, length: Optional[int] = None,
                     chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """The bytes of ``path`` (``length`` bytes from ``start``, or all from ``start``) in chunks,
    the file opened only while a chunk is read (so that a merge of thousands of runs holds no
    open file)."""
    offset, end = start, None if length is None else start + length
    while end is None or offset < end:
        with storage.open_stream(path) as stream:
            stream.seek(offset)
            data = stream.read(chunk if end is None else min(chunk, end - offset))
        if not data:
            if end is not None:
                raise OSError(f"{path}: expected {end - start} bytes at offset {start}, got {offset - start}")
            return
        offset += len(data)
        yield data


def iter_lines(path: str, start: int = 0, length: Optional[int] = None, chunk: int = READ_CHUNK) -> Iterator[str]:
    """The text lines of ``path`` (or of a byte range of it), without their newline, read ``chunk``
    bytes at a time."""
    rest = b""
    for data in iter_file_chunks(path, start, length, chunk):
        lines = (rest + data).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line.decode("utf-8")
    if rest:
        yield rest.decode("utf-8")


def merge_runs(output_dir: str, table: str, runs: Iterable[tuple]) -> Iterator[list]:
    """The lines of runs ``(part, offset, length)`` of ``table``, merged in sort order, each record once.

    Output runs yield ``[key, shard, offset, length, sha256, path, manifest line, part]`` (a stacked
    row ``[..., manifest line, [row offset, row length], part]``); list runs ``[key, line, part]``. Records with equal sort keys (the same output built twice) are
    yielded once.
    """
    runs = sorted(set(map(tuple, runs)))
    chunk = max(MIN_READ_CHUNK, min(READ_CHUNK, MERGE_BYTES // max(1, len(runs))))

    def read(part, offset, length):
        for line in iter_lines(storage.join(output_dir, run_path(part)), offset, length, chunk):
            fields = json.loads(line)
            fields.append(part)
            yield ((fields[0],) if len(fields) > 3 else (fields[0], fields[1])), fields

    previous = None
    for sort_key, fields in heapq.merge(*(read(*run) for run in runs), key=lambda item: item[0]):
        if sort_key != previous:
            previous = sort_key
            yield fields


def ledger_runs(ledger: Iterable[LedgerEntry]) -> dict:
    """table -> the ``(part, offset, length)`` of its committed runs."""
    tables = collections.defaultdict(list)
    for entry in ledger:
        for table, (offset, length) in entry.tables.items():
            tables[table].append((entry.part, offset, length))
    return tables


def run_fields(output_dir: str, runs: Iterable[tuple]) -> Iterator[tuple[str, list]]:
    """``(part, fields)`` of each line of the committed runs ``(part, offset, length)``, run after
    run: the fields of a run line as :meth:`PartWriter.add_output`, :meth:`PartWriter.add_stacked_output`
    and :meth:`PartWriter.add_line` write them."""
    for part, offset, length in runs:
        for line in iter_lines(storage.join(output_dir, run_path(part)), offset, length):
            yield part, json.loads(line)


def run_manifest(fields: list) -> dict:
    """The manifest object (``path``, ``image_key``, the edition's fields) of an output run line's
    ``fields`` (:func:`run_fields`)."""
    return json.loads(fields[6])


def _distinct_per_image(pairs: Iterable[tuple[int, str]], images: int) -> np.ndarray:
    """How many distinct keys each image has among ``(image, key)`` pairs (one table's outputs)."""
    found = array("q")
    for image, key in pairs:
        found.extend((image, hash(key)))
    if not found:
        return np.zeros(images, np.int64)
    unique = np.unique(np.frombuffer(found, np.int64).reshape(-1, 2), axis=0)
    return np.bincount(unique[:, 0], minlength=images)


def completed_images(output_dir: str, ledger: Sequence[LedgerEntry], entries: Sequence,
                     outputs_per_image: int) -> set:
    """Keys of the input images whose work is all in committed parts.

    An image is complete when a failure rejects it as a whole (its key is the image's key), or
    when its ``sources.jsonl`` record is committed and ``outputs_per_image`` distinct outputs
    (records, or failures of single outputs) of it are. The runs are read one after the other (no
    merge: the order does not matter here, and one chunk is in memory) and counted one table (one
    config) at a time: memory is a count per input image plus 16 bytes per committed output of
    the largest config, whatever the number of configs.

    Parameters
    ----------
    entries : sequence of SourceEntry
        The build's input images.
    """
    index = {entry.key: i for i, entry in enumerate(entries)}
    by_source = {entry.source: i for i, entry in enumerate(entries)}
    whole, sourced = set(), set()
    counts = np.zeros(len(entries), np.int64)
    for table, runs in ledger_runs(ledger).items():
        if table == SOURCES_TABLE:
            sourced.update(index[key] for _, (key, _) in run_fields(output_dir, runs) if key in index)
        elif table == FAILURES_TABLE:
            failed = []  # single outputs (few): (image, output key)
            for _, (key, line) in run_fields(output_dir, runs):
                if key in index:
                    whole.add(index[key])
                elif (image := by_source.get(json.loads(line).get("source"))) is not None:
                    failed.append((image, key))
            counts += _distinct_per_image(failed, len(entries))
        else:
            outputs = ((index.get(run_manifest(fields).get("image_key")), fields[0])
                       for _, fields in run_fields(output_dir, runs))
            counts += _distinct_per_image(((i, k) for i, k in outputs if i is not None), len(entries))
    done = whole | {i for i in sourced if counts[i] >= outputs_per_image}
    return {entries[i].key for i in done}
