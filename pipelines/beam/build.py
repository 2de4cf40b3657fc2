"""The driver of a release build: list the input, run ReadImageNet -> <edition transform> ->
WriteRelease on Beam, then seal the release.

The edition transform (``CorruptImages`` for ImageNet-C) turns ``SourceImage`` s into
``records``, ``sources``, ``failures`` and ``environments``; everything else here is shared.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from schemas.editions import release_identity
from schemas.image_ids import is_named_id_list, named_id_list_bytes
from schemas.records import SourceEntry
from schemas.release import (DEFAULT_FORMATS, FAILURES, PROGRESS_DIR, SAMPLE_DIR, SOURCES, TFDS_FORMAT, TMP_DIR,
                             BuildSettings, Release, ReleaseInput)
from schemas.tfds import TfdsDataset

from pipelines.formats import storage
from pipelines.formats.class_folders import label_names
from pipelines.release.output_folder import (FolderLock, OutputFolderError, check_not_inside, entry_size, inspect_folder,
                            listing_sha256, remove_release, wait_for_orphan_workers, write_build_record)
from pipelines.formats.lists import read_failures, read_sources
from pipelines.formats.parts import CommittedOutputs, completed_images, read_ledger
from pipelines.beam.progress import COUNTERS, NAMESPACE, ProgressLine, runner_counters
from pipelines.beam.write_release import WriteRelease, committed_files, committed_names, seal_release
from pipelines.release.publish import write_publication
from pipelines.formats.release_formats import check_format_names, release_sinks
from pipelines.formats.release_sink import ReleaseFiles, ReleaseSink
from pipelines.beam.shutdown import stopping_cleanly, wait_watched
from pipelines.beam.runner import RunOptions, is_local, make_pipeline
from pipelines.beam.sources import ReadImageNet
from pipelines.inputs.families import Input
from pipelines.inputs.listing import require_entries, select_entries, write_entry_lists

__all__ = ["DEFAULT_EXAMPLES_PER_SHARD", "SourceSelection", "BuildResult", "BuildPlan", "read_image_ids",
           "run_build"]

DEFAULT_EXAMPLES_PER_SHARD = 2048
"""Examples per TFRecord shard on average (about 50 MB of ImageNet-C JPEGs)."""


@dataclass(frozen=True)
class SourceSelection:
    """Which inputs a build reads.

    Attributes
    ----------
    input : str, optional
        Folder, tar or prepared TFDS ``imagenet2012``; the bundled sample when None.
    image_ids : str, optional
        A file of ``<wnid>/<file>`` or ``<file>`` lines, or the name of a bundled list
        (:data:`schemas.image_ids.ID_LISTS`, e.g. ``robustbench-5000``: RobustBench's 5,000 ids).
    limit : int, optional
        Keep only the first ``limit`` images in key order.
    """

    input: Optional[str] = None
    image_ids: Optional[str] = None
    limit: Optional[int] = None


@dataclass(frozen=True)
class BuildResult:
    """What a build produced: the ``release.json`` document and the Beam counters."""

    release: Release
    counters: Mapping[str, int]

    @property
    def failures(self) -> int:
        return self.release.counts.failures

    def summary(self, output_dir: str) -> str:
        counts = self.release.counts
        text = (f"{self.release.edition} release in {output_dir}: {counts.images} images, "
                f"{counts.outputs} outputs in {len(counts.outputs_per_config)} configs, "
                f"{counts.failures} failures")
        return text + (f" (listed with reasons in {FAILURES})" if counts.failures else "")


def read_image_ids(name_or_path: str) -> bytes:
    """The bytes of a bundled id list (checked against its SHA-256) or of a user's file."""
    return named_id_list_bytes(name_or_path) if is_named_id_list(name_or_path) else storage.read_bytes(name_or_path)


def _check_folder(output_dir: str, identity: tuple, config: BuildSettings, force: bool) -> tuple[str, Optional[Release]]:
    """What the output folder holds, refusing anything but nothing, or a release or build in
    progress of this edition, benchmark (``identity``, see :func:`schemas.editions.release_identity`)
    and config (``force``: remove one of another config)."""
    kind, record = inspect_folder(output_dir)
    if kind == "foreign":
        raise OutputFolderError(f"{output_dir} is not empty and holds no imagenet-cp release or build in progress: "
                                "choose an empty or new folder (nothing in it was changed)")
    if kind == "empty":
        return kind, record
    there = _identity_of(record)
    if there != identity or _settings_json(record.config) != _settings_json(config):
        if force:
            remove_release(output_dir)
            return "empty", None
        what = "release" if kind == "release" else "build in progress"
        if there != identity:
            other = f"edition {_shown_identity(there)} there, {_shown_identity(identity)} here"
        else:
            existing, config = ({"formats": list(DEFAULT_FORMATS), **_settings_json(c)} for c in (record.config, config))
            other = "; ".join(f"{key} {_shown(existing.get(key))} there, {_shown(config.get(key))} here"
                              for key in sorted(set(existing) | set(config)) if existing.get(key) != config.get(key))
        raise OutputFolderError(f"{output_dir} holds a {what} of another config ({other}); use another --output, "
                                "or --force to remove it")
    return kind, record


def _settings_json(settings: Optional[BuildSettings]) -> dict:
    """The JSON of a release's or a build's ``config`` (empty where it has none)."""
    return settings.to_json() if settings is not None else {}


def _identity_of(record: Release) -> Optional[tuple]:
    """``(edition, benchmark)`` of a release or build record (None where it names neither)."""
    try:
        return tuple(release_identity(record))
    except ValueError:
        return None


def _shown_identity(identity: Optional[tuple]) -> str:
    return "unknown" if identity is None else f"{identity[0]} ({identity[1]})"


def _shown(value) -> str:
    """A config value as a person reads it: lists comma-separated, None as 'none'."""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def _release_input_matches(output_dir: str, index, record: Release) -> bool:
    """Whether a finished release was built from this input: same kind, every entry built (same
    place and size) or rejected as a whole, nothing else."""
    if (record.input.kind if record.input else None) != index.kind:
        return False
    built = {row.key: (row.source, row.size) for row in read_sources(storage.join(output_dir, SOURCES))}
    rejected = {row.key for row in read_failures(storage.join(output_dir, FAILURES))}
    for entry in index.entries:
        if entry.key in built:
            source, size = built.pop(entry.key)
            known = entry_size(entry)
            if source != entry.source or (known is not None and known != size):
                return False
        elif entry.key not in rejected:
            return False
    return not built


def _remote_counts(result, committed: CommittedOutputs) -> collections.Counter:
    """The progress counts of a job run elsewhere: the runner's Beam counters, with the outputs of
    the committed parts where those are more. Dataflow reports counters while a job runs; Beam's
    job servers for Flink and Spark, and its own job service, only once it has ended."""
    counts = collections.Counter(runner_counters(result))
    try:
        counts["outputs_written"] = max(counts["outputs_written"], committed())
    except Exception:  # the store cannot say now: display only
        pass
    return counts


def _counters(result) -> dict[str, int]:
    totals = dict.fromkeys(COUNTERS, 0)
    for counter in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + value
    return totals


@dataclass(frozen=True)
class BuildPlan:
    """What one benchmark module hands to :func:`run_build`: what to read, what each image makes and
    where it goes. Each benchmark makes its own with ``plan(config, source)``
    (:func:`pipelines.beam.imagenet_c.plan`, :func:`pipelines.beam.imagenet_p.plan`,
    :func:`pipelines.beam.vcr.plan`).

    Attributes
    ----------
    selection : SourceSelection
        The input and its subset.
    source : Input
        The input, opened (read once) by :func:`pipelines.inputs.families.open_input`.
    document : Release
        Edition fields of ``release.json`` (``edition``, ``config``, ``tfds``, ...).
    dataset : TfdsDataset
        The TFDS dataset of the records' groups.
    outputs_per_image : int
        Outputs each image fans out to (for the progress line and the resume).
    transform : callable
        ``transform(progress_dir)`` returns the benchmark's PTransform: SourceImages ->
        records, sources, failures, environments.
    sinks : tuple of ReleaseSink
        The benchmark's own sinks (:class:`pipelines.formats.release_sink.ReleaseSink`, e.g. the
        stacked ``.npy`` arrays), handed to ``WriteRelease`` after those of ``formats`` when a format
        brings them (the tree: the stacked ``.npy`` arrays are the tree of CIFAR). A sink with a branch of its own
        writes its files from the committed parts, so a resumed build with one keeps what they hold too.
    exclusive : callable, optional
        ``exclusive(entries)`` -> ``(kept, rejected)``: the listed entries to build, in input order,
        and a Failure for each other one (ImageNet-P: one image per video name). The driver decides
        it before any image is read, so no worker needs to see the other images; the rejected join
        the listing's failures, and the release is sized (TFRecord shards, ``.npy`` rows) by the
        whole listing.
    examples_per_shard : int
        Average examples per TFRecord shard; the shard count is derived from the image count.
    formats : tuple of str
        The output formats of the release (:func:`pipelines.formats.release_formats.check_format_names`; default
        :data:`schemas.release.DEFAULT_FORMATS`, the tree and the TFDS records); recorded in
        ``release.json``'s config when they are not the default.
    """

    selection: SourceSelection
    source: Input
    document: Release
    dataset: TfdsDataset
    outputs_per_image: int
    transform: Callable[[Optional[str]], beam.PTransform]
    sinks: tuple = ()
    exclusive: Optional[Callable[[Sequence[SourceEntry]], tuple[list, list]]] = None
    examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD
    formats: tuple = DEFAULT_FORMATS

    def __post_init__(self):
        if self.examples_per_shard < 1:
            raise ValueError(f"examples_per_shard must be >= 1, got {self.examples_per_shard}")
        object.__setattr__(self, "formats", check_format_names(self.formats))
        object.__setattr__(self, "sinks", tuple(self.sinks))


def run_build(output_dir: str, plan: BuildPlan, run: RunOptions = RunOptions()) -> BuildResult:
    """Build a release of any benchmark and edition.

    Parameters
    ----------
    output_dir : str
        The release directory (local, or any Beam file system for remote runners).
    plan : BuildPlan
        What to read, the outputs per image, the transform and the sinks.
    run : RunOptions
        Workers, Beam options, progress stream and interval, ``force`` (replace a release or build in
        progress of another config or input in ``output_dir``; only the names of the release layout
        are removed) and the part limits.

    The same call into the same folder after an interruption builds only what is missing; on a
    finished release of the same config and input it does nothing.

    Raises
    ------
    OutputFolderError
        For a folder that is busy, not a release of this config and input, or inside the input.
    BuildInterrupted, BuildStopped
        From a local run stopped by a signal, a dead worker or a full disk (resumable).
    """
    selection, document, formats = plan.selection, plan.document, plan.formats
    storage.configure(run.beam_args)  # object-store options (--s3_endpoint_url, ...) for the driver's own I/O
    ids, ids_sha256 = None, None
    if selection.image_ids is not None:
        raw = read_image_ids(selection.image_ids)
        ids_sha256, ids = hashlib.sha256(raw).hexdigest(), raw.decode("utf-8").splitlines()
    config = document.config.with_run(plan.examples_per_shard, selection.limit, ids_sha256,
                                      None if formats == DEFAULT_FORMATS else formats)
    check_not_inside(selection.input, output_dir)
    with FolderLock(output_dir, f"{document.edition} {document.benchmark}") as lock:
        if lock.note:
            print(f"note: {lock.note}", file=run.out)
        if lock.took_over:
            print(f"note: took over the lock of a build that is gone (pid {lock.took_over.get('pid')} on "
                  f"{lock.took_over.get('host')})", file=run.out)
        wait_for_orphan_workers(output_dir)
        with stopping_cleanly(output_dir, signals=False):  # a full disk in the driver: one line too
            names = None if TFDS_FORMAT in formats else label_names(plan.dataset) or None  # no label file to hold them
            document = replace(document, config=config, class_names=names)
            return _locked_build(output_dir, replace(plan, document=document), run, ids)


def _write_pending(output_dir: str, entries: Sequence, ledger: list, outputs_per_image: int,
                   stream) -> tuple[list, int]:
    """Write the entry lists of the images that no committed part completes (all of them on a
    first run, :func:`pipelines.formats.parts.completed_images` on a rerun); return the lists'
    paths and how many images they hold."""
    done = set()
    if ledger:
        done = completed_images(output_dir, ledger, entries, outputs_per_image)
        print(f"resuming: {len(done)} of {len(entries)} images are built already", file=stream)
    pending = [entry for entry in entries if entry.key not in done]
    return write_entry_lists(output_dir, pending), len(pending)


def _locked_build(output_dir: str, plan: BuildPlan, run: RunOptions, ids: Optional[list]) -> BuildResult:
    """:func:`run_build` once the folder is locked."""
    selection, document, source, dataset = plan.selection, plan.document, plan.source, plan.dataset
    outputs_per_image = plan.outputs_per_image
    workers, beam_args, stream, force = run.workers, run.beam_args, run.out, run.force
    config, identity = document.config, (document.edition, document.benchmark)
    state, record = _check_folder(output_dir, identity, config, force)
    path = selection.input
    if path is None and not storage.is_local(output_dir):
        raise ValueError("the bundled sample is written next to a local release: give --input for "
                         f"a release in {output_dir}")
    index = source.list(output_dir)
    index = require_entries(select_entries(index, ids, selection.limit), path or "the bundled sample")
    listing = listing_sha256(index.entries, index.failures)
    if state == "release":
        if _release_input_matches(output_dir, index, record):
            storage.delete_tree(storage.join(output_dir, SAMPLE_DIR))
            return BuildResult(record, dict.fromkeys(COUNTERS, 0))
        state = "other input"
    elif state == "build" and (record.input.listing_sha256 if record.input else None) != listing:
        state = "other input"
    if state == "other input":
        if not force:
            raise OutputFolderError(f"{output_dir} holds a {'release' if record.counts else 'build'} of "
                                    "another input (files added, removed or changed since); use another --output, "
                                    "or --force to remove it")
        remove_release(output_dir, keep=[SAMPLE_DIR] if path is None else [])
        state = "empty"
    for scratch in (TMP_DIR, PROGRESS_DIR):  # this build's own leftovers: half-written files, display counts
        storage.delete_tree(storage.join(output_dir, scratch))
    document = replace(document, input=ReleaseInput(kind=index.kind))
    if state == "empty":
        write_build_record(output_dir, Release(edition=identity[0], benchmark=identity[1], config=config,
                                               input=ReleaseInput(kind=index.kind, listing_sha256=listing,
                                                                  images=len(index.entries))))
    ledger = read_ledger(output_dir)
    formats = plan.formats
    sinks: Sequence[ReleaseSink] = release_sinks(formats, plan.sinks, index.entries)
    images = len(index.entries)
    entries, rejected = plan.exclusive(index.entries) if plan.exclusive else (index.entries, [])
    listing_failures = [*index.failures, *rejected]
    entry_lists, pending = _write_pending(output_dir, entries, ledger, outputs_per_image, stream)
    del index, entries  # from here on the driver holds no entry of the input (50,000 of them: some 25 MiB)
    shard_count = max(1, math.ceil(images / plan.examples_per_shard))

    local = is_local(beam_args) and storage.is_local(output_dir)
    progress_dir = output_dir if local else None
    pipeline = make_pipeline(workers, beam_args)
    read = pipeline | "ReadImageNet" >> ReadImageNet(entry_lists, progress_dir)
    outputs = read.images | plan.transform(progress_dir)
    listed = pipeline | "ListingFailures" >> beam.Create(listing_failures)
    failures = {f"failures_{name}": pcoll | f"FailureRecords_{name}" >> beam.Map(lambda f: f.to_json())
                for name, pcoll in (("listing", listed), ("read", read.failures), ("outputs", outputs.failures))}
    _ = ({"records": outputs.records, "sources": outputs.sources, **failures,
          "environments": outputs.environments}
         | "WriteRelease" >> WriteRelease(ReleaseFiles(output_dir, dataset, shard_count, formats), progress_dir,
                                          committed_names(ledger), run.part_records, run.part_seconds, sinks))

    def space_needed() -> int:
        entries = read_ledger(output_dir)
        written = sum(e.bytes for e in entries)
        outputs_done = max(1, sum(e.records for e in entries if e.bytes))
        expected = images * outputs_per_image
        return int(written / outputs_done * max(0, expected - outputs_done) * 1.5)

    progress = None
    if local:
        progress = ProgressLine(output_dir, pending * outputs_per_image, pending,
                                run.progress_interval, stream)
        progress.start()
    try:
        with stopping_cleanly(output_dir, space_needed) if local else contextlib.nullcontext():
            result = pipeline.run()
            if not local:  # the runner's own counters, or the committed parts where they say more
                committed = CommittedOutputs(output_dir, [entry.part for entry in ledger])
                progress = ProgressLine(None, pending * outputs_per_image, pending, run.progress_interval,
                                        stream, read=lambda: _remote_counts(result, committed))
                progress.start()
            if local:
                result.wait_until_finish()
            else:
                wait_watched(result, lambda: committed_files(output_dir), run.stall_seconds)
                progress.print_line()  # the counters of the finished job, as every runner reports them
            release = seal_release(output_dir, document)
            write_publication(output_dir)
    finally:
        if progress:
            progress.stop()
    return BuildResult(release, _counters(result))
