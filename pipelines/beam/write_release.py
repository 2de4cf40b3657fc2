"""WriteRelease: the writer of a build and its own sinks, and the driver's last step that seals a release.

:class:`WriteRelease` takes the output records, source records, failures and worker environments
of any edition and writes, under the release directory:

- ``manifest/<group>.jsonl``, ``sources.jsonl`` and ``failures.jsonl``, sorted; each record's
  TFDS example goes into the spill with its shard (a hash of its key: records are sorted by key
  inside a shard, so the bytes do not depend on workers or order), whichever formats the release holds;
- the files of the build's sinks, one class per format (:mod:`pipelines.formats.release_sink`: the
  ``--formats``, e.g. the tree, the TFDS records, WebDataset shards, and the edition's, e.g. stacked
  ``.npy`` arrays), each through the same three steps: per output, per group, or a branch of its own
  over the committed parts;
- per-group checksum parts and the worker environments, in ``.parts/`` for the driver (each
  environment as soon as a worker reports it, before that worker commits an output made in it:
  a resumed build keeps the environments of the parts it keeps).

No per-output element goes through a shuffle (a local runner would hold it in the driver's
memory): workers commit *parts* (:mod:`pipelines.formats.parts`: sorted runs of manifest lines, checksums
and shard references, the serialized examples and stacked rows in ``DIR/.spill/``) and emit only the
parts' names; one task per group then merges the group's runs with a streaming merge.

:func:`seal_release` (driver, after the pipeline) writes ``release.json`` and ``SHA256SUMS`` and
removes the scratch folders.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools
import json
from dataclasses import replace
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam

from schemas.records import FileInfo, ManifestRecord, OutputRecord
from schemas.release import (CHECKSUMS, FAILURES, PARTS_DIR, RELEASE_FORMAT, RELEASE_JSON, SCRATCH_DIRS,
                             SOURCES, Release, ReleaseCounts, ReleaseInput,
                             ReleaseManifest, checksum_line, json_line, manifest_path)

from pipelines.formats import storage
from pipelines.formats.release_document import write_release
from pipelines.release.output_folder import WorkerLock
from pipelines.release.versions import library_versions
from pipelines.formats.parts import (FAILURES_TABLE, LEDGER_DIR, PART_RECORDS, PART_SECONDS, SOURCES_TABLE, PartWriter,
                                     iter_file_chunks, ledger_runs, merge_runs)
from pipelines.beam.progress import ProgressCounter
from pipelines.formats.release_sink import GroupOutputs, ReleaseFiles, ReleaseSink
from pipelines.formats.scratch_files import environments_bytes, parse_environment, parse_environments
from pipelines.formats.tfrecord import encode_example

__all__ = ["CHECKSUM_PARTS", "ENVIRONMENTS_DIR", "RELEASE_WIDE_GROUP", "OutputsFn", "shard_index", "global_windowed",
           "WRITE_BATCH", "write_group", "write_lists", "write_checksum_part", "committed_files",
           "committed_names", "environment_path", "WriteRelease", "read_environments", "seal_release"]

CHECKSUM_PARTS = f"{PARTS_DIR}/sha256"
ENVIRONMENTS_DIR = f"{PARTS_DIR}/environments"
"""One file per distinct worker environment a build's workers reported (:func:`environment_path`)."""
RELEASE_WIDE_GROUP = "_release"
"""Checksum-part name of the files that belong to no group (sources, failures)."""


class OutputsFn(beam.DoFn):
    """Base of the DoFns that make an edition's output records.

    Runs OpenCV on the worker's own thread (:func:`transforms.threads.one_opencv_thread`), keeps
    freed memory for reuse (:func:`transforms.heap.retain_freed_memory`), holds the worker's :class:`ProgressCounter` and reports the worker's environment (the versions
    from :meth:`environment`, as JSON, tagged ``environments``) once per bundle, before the
    bundle's first output (:class:`WriteRelease` writes it down at once), so that ``release.json``
    can show every environment a release was built in, a resumed build's among them.
    """

    def __init__(self, progress_dir: Optional[str]):
        self._progress_dir = progress_dir

    def environment(self) -> dict[str, str]:
        """Versions of everything that can change this worker's output bytes."""
        return library_versions()

    def setup(self):
        from transforms.heap import retain_freed_memory  # the corruptions (numba, scipy): not for what
        from transforms.threads import one_opencv_thread  # imports this module only for its sinks

        one_opencv_thread()
        retain_freed_memory()
        self._progress = ProgressCounter(self._progress_dir)
        self._environment = json.dumps(self.environment(), sort_keys=True)

    def start_bundle(self):
        self._reported = False

    def report_environment(self):
        """The ``environments`` output, once per bundle (an empty list after the first call)."""
        if self._reported:
            return []
        self._reported = True
        return [beam.pvalue.TaggedOutput("environments", self._environment)]

    def fail(self, failure):
        """Count ``failure`` and return it as the tagged ``failures`` output."""
        self._progress.add(failures=1)
        return beam.pvalue.TaggedOutput("failures", failure)

    def teardown(self):
        self._progress.flush()


def shard_index(key: str, count: int) -> int:
    """Shard (0..count-1) of an output key: SHA-256 of the key, so stable everywhere."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % count


def global_windowed(values):
    """Values a DoFn emits from ``finish_bundle`` (which must give their window)."""
    return [beam.transforms.window.GlobalWindows.windowed_value(v) for v in values]


WRITE_BATCH = (64, 1 << 22)
"""Output records, and bytes of their files, that a writer holds at most before it writes them one
after the other: the files, hashes and run lines of a batch are made while the file system's and
the interpreter's caches are warm, instead of one between every two corruptions (64 ImageNet-C
outputs are about 1.3 MB)."""


def _example(release: ReleaseFiles, record: OutputRecord, keep: bool) -> tuple[int, str, bytes]:
    """``(shard index, shard path, serialized example)`` of ``record``: its manifest row's shard
    (:func:`shard_index`) and, with ``keep``, the TFDS example the spill keeps for the sinks that
    read it back (empty without: no sink of the build reads it)."""
    dataset, count = release.dataset, release.shard_count
    index = shard_index(record.key, count)
    shard = f"{dataset.config_dir(record.group)}/{dataset.shard_name(index, count)}"
    if not keep:
        return index, shard, b""
    if record.example is None:
        raise ValueError(f"{record.key}: no TFDS example, and a format of the release reads it")
    return index, shard, encode_example(record.example, dataset.features)


def _output_file(release: ReleaseFiles, record: OutputRecord, sinks: Sequence[ReleaseSink]) -> tuple[FileInfo, bool]:
    """The FileInfo of ``record``'s bytes, and whether a sink wrote them as a file of their own
    (:meth:`~pipelines.formats.release_sink.ReleaseSink.write_output`; the first that does)."""
    for sink in sinks:
        info = sink.write_output(release, record)
        if info is not None:
            return info, True
    return FileInfo(record.path, hashlib.sha256(record.data).hexdigest(), len(record.data), record.group), False


class _WriteOutputFilesFn(beam.DoFn):
    """OutputRecord -> its file, written by the sinks that write per output (the tree's); its run
    line (manifest line, checksum, shard) and its serialized example go to this worker's current
    part (:class:`pipelines.formats.parts.PartWriter`). Records are written in batches (at most
    ``batch``: records, bytes; :data:`WRITE_BATCH`; no more records than a part holds), the last one
    at the end of the bundle, each before the part that lists it commits. With ``keep_rows``, a
    stacked row's bytes go to the part too (:meth:`~pipelines.formats.parts.PartWriter.add_stacked_output`);
    without ``keep_examples`` (no sink reads them), no example is serialized or kept.
    Emits ``(group, (group, part, offset, length))`` of each run it commits, nothing per output."""

    def __init__(self, release: ReleaseFiles, progress_dir: Optional[str], part_records: int = PART_RECORDS,
                 part_seconds: float = PART_SECONDS, batch: tuple[int, int] = WRITE_BATCH,
                 sinks: Sequence[ReleaseSink] = (), keep_rows: bool = False, keep_examples: bool = True):
        self._output_dir, self._release = release.output_dir, release
        self._progress_dir, self._part_limits = progress_dir, (part_records, part_seconds)
        self._batch = (min(batch[0], part_records), batch[1])  # a batch never holds more than a part
        self._sinks, self._keep_rows, self._keep_examples = tuple(sinks), keep_rows, keep_examples

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)
        self._lock = WorkerLock(self._progress_dir)

    def start_bundle(self):
        self._parts = PartWriter(self._output_dir, *self._part_limits)
        self._pending: list = []
        self._pending_bytes = 0

    def _committed(self):
        return [(run[0], run) for run in self._parts.commit()]

    def _write(self, record: OutputRecord) -> None:
        info, written = _output_file(self._release, record, self._sinks)
        index, shard, example = _example(self._release, record, self._keep_examples)
        row = ManifestRecord(record.key, record.path, info.sha256, info.size, shard, record.metadata)
        if record.stacked and self._keep_rows and not written:  # a row of an array its sink assembles
            self._parts.add_stacked_output(record.group, record.key, index, json_line(row.to_json()), info.sha256,
                                           example, record.data)
            return
        self._parts.add_output(record.group, record.key, index, json_line(row.to_json()), info.sha256,
                               info.path if written else None, info.size, example)  # a file of its own to list

    def _write_pending(self) -> list:
        """Write the held records; the runs of every part that came due meanwhile."""
        pending, self._pending, self._pending_bytes, committed = self._pending, [], 0, []
        for record in pending:
            self._write(record)
            if self._parts.due():
                committed += self._committed()
        self._progress.add(outputs_written=len(pending))
        return committed

    def process(self, record: OutputRecord):
        self._pending.append(record)
        self._pending_bytes += len(record.data)
        if len(self._pending) >= self._batch[0] or self._pending_bytes >= self._batch[1]:
            yield from self._write_pending()

    def finish_bundle(self):
        return global_windowed(self._write_pending() + self._committed())

    def teardown(self):
        self._progress.flush()


class _WriteListPartsFn(beam.DoFn):
    """``(table, record)`` of ``sources.jsonl`` or ``failures.jsonl`` -> its line in this worker's
    current part. Emits ``(RELEASE_WIDE_GROUP, (table, part, offset, length))`` of each run it commits."""

    def __init__(self, output_dir: str, progress_dir: Optional[str] = None, part_records: int = PART_RECORDS,
                 part_seconds: float = PART_SECONDS):
        self._output_dir, self._progress_dir, self._part_limits = output_dir, progress_dir, (part_records, part_seconds)

    def setup(self):
        self._lock = WorkerLock(self._progress_dir)

    def start_bundle(self):
        self._parts = PartWriter(self._output_dir, *self._part_limits, follow=True)

    def _committed(self):
        return [(RELEASE_WIDE_GROUP, run) for run in self._parts.commit()]

    def process(self, element):
        table, record = element
        self._parts.add_line(table, record["key"], json_line(record))
        if self._parts.due():
            yield from self._committed()

    def finish_bundle(self):
        return global_windowed(self._committed())


def environment_path(environment: str) -> str:
    """Relative path of the file of one worker environment (its JSON text):
    ``.parts/environments/<SHA-256 of the text>.json``, so that every report of it, by any worker
    or run of the build, writes the same file with the same bytes."""
    return f"{ENVIRONMENTS_DIR}/{hashlib.sha256(environment.encode('utf-8')).hexdigest()}.json"


class _WriteEnvironmentFn(beam.DoFn):
    """A worker environment (JSON text) -> its file (:func:`environment_path`), written when the
    worker reports it: fused with the DoFn that reports it (:class:`OutputsFn`, before the
    bundle's first output; no shuffle and no Flatten of several stages in between), so it is on
    disk before any part that holds an output made in it commits, wherever an interruption lands.
    Each worker writes each environment once."""

    def __init__(self, output_dir: str):
        self._output_dir = output_dir

    def setup(self):
        self._written: set = set()

    def process(self, environment: str):
        if environment not in self._written:
            storage.write_atomic(self._output_dir, environment_path(environment), environments_bytes([environment]))
            self._written.add(environment)
        return []


def _tagged(record, table: str) -> tuple:
    return table, record


def _checksum_lines(infos: Iterable[FileInfo]) -> list:
    return [(i.path, checksum_line(i.sha256, i.path)) for i in sorted(infos, key=lambda i: i.path)]


def _merged_checksums(records: Iterable[tuple], others: Iterable[FileInfo]) -> Iterator[bytes]:
    """``sha256sum`` lines of a group, sorted by path: the outputs' ``(path, line)`` (in key order,
    which is path order) merged with the group's other files."""
    def checked(pairs):
        previous = ""
        for path, line in pairs:
            if path < previous:
                raise ValueError(f"output paths are not in key order ({previous} before {path})")
            previous = path
            yield path, line
    for _, line in heapq.merge(checked(records), _checksum_lines(others), key=lambda pair: pair[0]):
        yield line.encode("utf-8")


def write_group(release: ReleaseFiles, group: str, runs: Iterable[tuple], sinks: Sequence[ReleaseSink] = ()) -> None:
    """Merge the committed runs of one group into its files: ``manifest/<group>.jsonl``, then the
    files of the ``sinks`` that share the group's checksum part
    (:attr:`~pipelines.formats.release_sink.ReleaseSink.shares_config_part`: every class folder of the
    group's folders of classes, the TFRecord shards and metadata files), that part
    ``.parts/sha256/<group>.txt``, and the files of the other ``sinks`` (each with its checksum part
    ``.parts/sha256/<group>.<sink name>.txt``).

    The runs are read and merged once: the manifest pass keeps each output's shard reference and
    checksum line for the shards and the checksum part. Memory: one chunk per run being merged, and
    per output of the group its ``(part, offset, length)`` and its ``sha256sum`` line (about 300
    bytes together).
    """
    output_dir = release.output_dir
    runs = sorted(set(map(tuple, runs)))
    outputs = GroupOutputs(shard_refs=[[] for _ in range(release.shard_count)])
    checksums: list = []  # (path, line) of the outputs' own files, in key order (= path order)

    def manifest_lines():
        for fields in merge_runs(output_dir, group, runs):  # a stacked row's has its row reference too
            (_, shard, offset, length, sha256, path, line), part = fields[:7], fields[-1]
            outputs.shard_refs[shard].append((part, offset, length))
            if path is not None:  # None: no file in the tree (a stacked row, checksummed by its own sink)
                outputs.folders.add(path.rpartition("/")[0])
                checksums.append((path, checksum_line(sha256, path)))
            yield line.encode("utf-8")

    infos = [storage.write_atomic(output_dir, manifest_path(group), manifest_lines(), group=group)]
    for sink in sinks:
        if sink.shares_config_part:
            infos += sink.write_group(release, group, outputs)
    storage.write_atomic(output_dir, f"{CHECKSUM_PARTS}/{group}.txt", _merged_checksums(checksums, infos))
    for sink in sinks:
        if not sink.shares_config_part:
            write_checksum_part(output_dir, (f"{group}.{sink.name}", sink.write_group(release, group, outputs)))


def write_lists(output_dir: str, names: Iterable[tuple]) -> None:
    """Merge the committed list runs ``(table, part, offset, length)`` into ``sources.jsonl`` and
    ``failures.jsonl`` (sorted by key, then text; written empty when there is nothing) and their
    checksum part."""
    names = list(names)
    infos = []
    for table, relative in ((SOURCES_TABLE, SOURCES), (FAILURES_TABLE, FAILURES)):
        runs = [run[1:] for run in names if run[0] == table]
        lines = (line.encode("utf-8") for _, line, _ in merge_runs(output_dir, table, runs))
        infos.append(storage.write_atomic(output_dir, relative, lines, group=RELEASE_WIDE_GROUP))
    text = "".join(line for _, line in _checksum_lines(infos))
    storage.write_atomic(output_dir, f"{CHECKSUM_PARTS}/{RELEASE_WIDE_GROUP}.txt", text.encode("utf-8"))


class _WriteTablesFn(beam.DoFn):
    """``(group, [(table, part, offset, length)])`` -> the merged files of a group (:func:`write_group`,
    with the files of ``sinks`` that write per group), or, for
    :data:`RELEASE_WIDE_GROUP`, ``sources.jsonl`` and ``failures.jsonl`` (:func:`write_lists`)."""

    def __init__(self, release: ReleaseFiles, sinks: Sequence[ReleaseSink] = ()):
        self._release, self._sinks = release, tuple(sinks)

    def process(self, element):
        group, names = element
        names = [name for name in names if name is not None]
        if group == RELEASE_WIDE_GROUP:
            write_lists(self._release.output_dir, names)
        elif names:
            write_group(self._release, group, [run[1:] for run in names], self._sinks)
        return []


def write_checksum_part(output_dir: str, element) -> None:
    """``(group, [FileInfo])`` -> ``.parts/sha256/<group>.txt`` (``sha256sum`` lines sorted by path)."""
    group, infos = element
    text = "".join(line for _, line in _checksum_lines(infos))
    storage.write_atomic(output_dir, f"{CHECKSUM_PARTS}/{group}.txt", text.encode("utf-8"))


def committed_files(output_dir: str) -> int:
    """The parts (:data:`pipelines.formats.parts.LEDGER_DIR`) and the groups' checksum parts
    (:data:`CHECKSUM_PARTS`) a build has committed into ``output_dir`` so far: a count that grows
    while its workers make outputs and while they merge the groups' tables."""
    return len(storage.list_files(output_dir, LEDGER_DIR)) + len(storage.list_files(output_dir, CHECKSUM_PARTS))


def committed_names(ledger: Iterable[Mapping[str, Any]]) -> list:
    """``(group, (table, part, offset, length))`` of every run of every committed part (see
    :func:`pipelines.formats.parts.read_ledger`)."""
    return [(table if not table.startswith("_") else RELEASE_WIDE_GROUP, (table, *run))
            for table, runs in ledger_runs(ledger).items() for run in runs]


class _SinkBranch(beam.PTransform):
    """The committed parts of each config, ``(config, [(table, part, offset, length)])`` -> the
    FileInfo s of the files a sink's branch writes (:meth:`ReleaseSink.expand`)."""

    def __init__(self, sink: ReleaseSink, release: ReleaseFiles):
        super().__init__()
        self._sink, self._release = sink, release

    def expand(self, parts):
        return self._sink.expand(parts, self._release)


class WriteRelease(beam.PTransform):
    """``{'records', 'sources', 'failures', 'environments'}`` -> every file of a release but
    ``release.json`` and ``SHA256SUMS`` (see :func:`seal_release`). Failure records (JSON-ready
    dicts) may come in several PCollections, under keys that start with ``failures``.

    Workers write the outputs' files and commit parts (:mod:`pipelines.formats.parts`); only the parts'
    names are shuffled, grouped by TFDS config, and each group's runs are merged into its
    manifest, shards and metadata files.

    Parameters
    ----------
    release : ReleaseFiles
        The release directory, the TFDS dataset whose configs are the records' groups, the
        TFRecord shards per config and the formats the release holds.
    progress_dir : str, optional
        Where workers leave progress counts (see :class:`ProgressCounter`).
    committed : sequence, optional
        :func:`committed_names` of parts an earlier, interrupted run of this build committed.
    part_records, part_seconds : int, float
        When workers commit a part (see :class:`pipelines.formats.parts.PartWriter`).
    sinks : sequence of ReleaseSink
        The sinks beside the manifests, each made for the build's input
        (:func:`pipelines.formats.release_formats.release_sinks`: the ``--formats``, e.g. the tree,
        the TFDS records, WebDataset shards, and the edition's, e.g. stacked ``.npy`` arrays). A sink's
        :meth:`~pipelines.formats.release_sink.ReleaseSink.write_output` runs per output on the
        workers; its :meth:`~pipelines.formats.release_sink.ReleaseSink.write_group` per config once
        its manifest is written; its :meth:`~pipelines.formats.release_sink.ReleaseSink.expand` adds a
        branch over the committed parts of each config (those of ``committed`` among them), whose
        files go into a checksum part of their own (``sink.checksum_part``).
    """

    def __init__(self, release: ReleaseFiles, progress_dir: Optional[str] = None, committed: Sequence = (),
                 part_records: int = PART_RECORDS, part_seconds: float = PART_SECONDS, sinks: Sequence[ReleaseSink] = ()):
        super().__init__()
        if release.shard_count < 1:
            raise ValueError(f"shard_count must be >= 1, got {release.shard_count}")
        self._release, self._output_dir = release, release.output_dir
        self._progress_dir, self._committed = progress_dir, list(committed)
        self._part_limits = (part_records, part_seconds)
        self._sinks = tuple(sinks)

    def expand(self, inputs):
        out, release = self._output_dir, self._release
        pipeline = inputs["records"].pipeline
        output_parts = inputs["records"] | "WriteOutputFiles" >> beam.ParDo(_WriteOutputFilesFn(
            release, self._progress_dir, *self._part_limits, sinks=[sink for sink in self._sinks if sink.writes_outputs],
            keep_rows=any(sink.keeps_rows for sink in self._sinks),
            keep_examples=any(sink.reads_examples for sink in self._sinks)))
        # One sink per input, fused with the stage that makes it (a Flatten would be materialized
        # by a local runner, in the driver's memory, until its last input is done).
        failures = [inputs[name] for name in sorted(inputs) if name.startswith("failures")]
        lists = [("Sources", SOURCES_TABLE, inputs["sources"])] + [
            (f"Failures{i}", FAILURES_TABLE, pcoll) for i, pcoll in enumerate(failures)]
        list_parts = [pcoll | f"Tag{name}" >> beam.Map(_tagged, table)
                      | f"Write{name}Parts" >> beam.ParDo(_WriteListPartsFn(out, self._progress_dir, *self._part_limits))
                      for name, table, pcoll in lists]
        earlier = pipeline | "CommittedParts" >> beam.Create(
            self._committed + [(RELEASE_WIDE_GROUP, None)], reshuffle=False)
        environments = inputs["environments"] | "WriteEnvironments" >> beam.ParDo(_WriteEnvironmentFn(out))
        group_sinks = [sink for sink in self._sinks if sink.writes_groups]
        parts = ((output_parts, *list_parts, earlier) | "AllParts" >> beam.Flatten()
                 | "GroupPartsByConfig" >> beam.GroupByKey())
        self._expand_sinks(parts)
        return parts | "WriteTables" >> beam.ParDo(_WriteTablesFn(release, group_sinks)), environments

    def _expand_sinks(self, parts) -> None:
        """The branch of each sink that has one, over the committed parts of each config, and the
        checksum part of the files it writes."""
        out, release = self._output_dir, self._release
        for sink in self._sinks:
            if not sink.has_branch:
                continue
            label = type(sink).__name__
            files = parts | label >> _SinkBranch(sink, release)
            _ = (files
                 | f"Collect{label}Files" >> beam.combiners.ToList()
                 | f"Write{label}Checksums" >> beam.Map(
                     lambda infos, part: write_checksum_part(out, (part, infos)), sink.checksum_part))


def _count_and_digest(output_dir: str, relative_paths: Iterable[str]) -> tuple[dict, str]:
    """Lines per file and one SHA-256 over the files' bytes concatenated in the given order
    (read in chunks: memory does not grow with the files)."""
    digest, counts = hashlib.sha256(), {}
    for relative in relative_paths:
        counts[relative] = 0
        for data in iter_file_chunks(storage.join(output_dir, relative)):
            digest.update(data)
            counts[relative] += data.count(b"\n")
    return counts, digest.hexdigest()


def read_environments(output_dir: str) -> list:
    """Distinct worker environments (JSON texts, sorted) every run of a build reported."""
    found = set()
    for relative in storage.list_files(output_dir, ENVIRONMENTS_DIR):
        found.update(parse_environments(storage.read_bytes(storage.join(output_dir, relative))))
    return sorted(found)


def seal_release(output_dir: str, document: Release) -> Release:
    """Write ``release.json`` and ``SHA256SUMS`` after the pipeline, then remove scratch folders.

    Parameters
    ----------
    output_dir : str
        The release directory the pipeline wrote.
    document : Release
        Edition-specific fields of ``release.json`` (``edition``, ``config``, ``tfds``, ...); the
        input checksum, counts, library versions and manifest digest are added here.

    Returns
    -------
    Release
        The ``release.json`` document.
    """
    manifest_parts = storage.list_files(output_dir, "manifest")
    per_part, manifest_sha256 = _count_and_digest(output_dir, manifest_parts)
    lists, _ = _count_and_digest(output_dir, [SOURCES, FAILURES])
    _, sources_sha256 = _count_and_digest(output_dir, [SOURCES])
    environments = [parse_environment(e) for e in read_environments(output_dir)]
    environments = environments or [library_versions()]  # no image reached a worker
    release = replace(
        document,
        format=RELEASE_FORMAT,
        input=replace(document.input or ReleaseInput(), sha256=sources_sha256, images=lists[SOURCES]),
        counts=ReleaseCounts(images=lists[SOURCES], outputs=sum(per_part.values()), failures=lists[FAILURES],
                             outputs_per_config={p.rsplit("/", 1)[1][:-len(".jsonl")]: n for p, n in per_part.items()}),
        manifest=ReleaseManifest(parts=tuple(manifest_parts), records=sum(per_part.values()), sha256=manifest_sha256),
        library_versions=environments[0] if len(environments) == 1 else environments,
    )
    release_info = write_release(output_dir, release)
    parts = (chunk for p in storage.list_files(output_dir, CHECKSUM_PARTS)
             for chunk in iter_file_chunks(storage.join(output_dir, p)))
    storage.write_atomic(output_dir, CHECKSUMS, itertools.chain(
        parts, [checksum_line(release_info.sha256, RELEASE_JSON).encode("utf-8")]))
    for scratch in SCRATCH_DIRS:
        storage.delete_tree(storage.join(output_dir, scratch))
    return release
