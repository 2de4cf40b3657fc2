"""Predictions committed in parts: an interrupted ``imagenet-cp evaluate`` reruns only what is missing.

The ImageNet-C / ImageNet-P evaluation does not shuffle its predictions into the sinks: the
worker that predicts an image commits its prediction in a *part* (:mod:`pipelines.formats.parts`,
as a build's workers commit their outputs), in the evaluation's scratch folder ``OUT/.evaluation/``::

    evaluation.json      what is evaluated (model SHA-256, release, source, framework, configs, sets)
    .parts/ledger/, .parts/runs/   the committed parts
    .progress/           the workers' counts, for the progress line
    .lists/              the images and videos to predict, per table (listed again by a rerun)

Each output file is a *table* of the parts: ``C/<config>`` holds one line per image (key -> its
``predictions/`` JSON line), ``P/<set>`` one line per frame (video key -> ``[frame, frames,
label, top5]``). Only the parts' names cross a shuffle; one task per table then merges its runs
(:func:`pipelines.formats.parts.merge_runs`, memory of one chunk per run) into the sorted
prediction file. A record that two parts hold (an image predicted again after an interruption) is
kept once: the first in sort order of its line, whatever the parts' names, worker count or order.

A rerun into the same ``--output`` reads the ledger (:func:`open_scratch`); the listing workers
skip, per config, the images already committed and, per set, the videos whose every frame is
(:func:`pending_images`, :func:`pending_videos`). A scratch folder of another evaluation (another
model file, release or option that changes the predictions) is refused in one line, or removed with
``force``. The evaluation's last step removes the scratch folder.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import sys
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam

from schemas.release import RELEASE_JSON

from pipelines.beam.inference import beam_counters, mark_time, marked_times, run_checked
from pipelines.beam.progress import ProgressCounter, ProgressLine, format_duration
from pipelines.beam.runner import is_local
from pipelines.beam.shutdown import stopping_cleanly
from pipelines.beam.write_release import global_windowed
from pipelines.evaluation.models import ModelError
from pipelines.formats import storage
from pipelines.formats.predictions import (FramePrediction, PredictionRecord, frame_line, logits_line,
                                           parse_frame_line, parse_logits_line, parse_prediction_line,
                                           prediction_line)
from pipelines.formats.parts import (PART_RECORDS, PART_SECONDS, LedgerEntry, PartWriter, iter_file_chunks, ledger_runs,
                                     merge_runs, read_ledger)
from pipelines.formats.scratch_files import identity_bytes, parse_identity
from pipelines.release.output_folder import FolderLock, OutputFolderError, WorkerLock, wait_for_orphan_workers

__all__ = ["SCRATCH_DIR", "IDENTITY_FILE", "LISTS_DIR", "C_TABLE", "P_TABLE", "A_TABLE", "EVALUATION_COUNTERS",
           "scratch_dir", "model_sha256", "evaluation_identity", "local_place", "open_scratch", "table_runs", "committed_names",
           "pending_images", "complete_videos", "pending_videos", "c_record", "p_record", "a_record", "read_logits",
           "committed_keys", "CommitPredictionsFn", "write_config_file", "write_set_file", "prediction_progress_text",
           "finished_text", "run_resumable"]

SCRATCH_DIR = ".evaluation"
"""The evaluation's scratch folder inside ``OUT``: removed when the evaluation completes."""
IDENTITY_FILE = "evaluation.json"
LISTS_DIR = ".lists"
"""Folder of the scratch folder where the listing workers write the images and videos to predict,
one file per table (:func:`pipelines.beam.evaluate.write_listed`); a rerun lists them again."""
C_TABLE, P_TABLE, A_TABLE = "C/", "P/", "A/"
"""Table-name prefixes of the ImageNet-C configs, the ImageNet-P sets (a P set may be named like a
C config) and the parts of an ImageNet-A / -O evaluation (the set, and ``in-distribution``)."""
EVALUATION_COUNTERS = ("images_listed", "images_skipped", "videos_listed", "videos_skipped", "videos_decoded",
                       "frames_decoded", "predicted")
"""Progress counts of an evaluation: C images and P videos to predict and already predicted, the
frames decoded so far (to estimate the frames still to come), and model inputs predicted."""
_HASH_CHUNK = 1 << 20


def scratch_dir(out_dir: str) -> str:
    """``OUT/.evaluation``."""
    return storage.join(out_dir, SCRATCH_DIR)


def model_sha256(model_path: str) -> str:
    """SHA-256 of a model file; of a model folder (a SavedModel), over its files' relative paths and bytes.

    Examples
    --------
    >>> import hashlib, tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "m.onnx")
    >>> _ = open(path, "wb").write(b"weights")
    >>> model_sha256(path) == hashlib.sha256(b"weights").hexdigest()
    True
    """
    digest = hashlib.sha256()
    if not storage.is_folder(model_path):
        for chunk in iter_file_chunks(model_path, chunk=_HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    for relative in storage.list_tree(model_path):
        digest.update(relative.encode("utf-8") + b"\0")
        file_digest = hashlib.sha256()
        for chunk in iter_file_chunks(storage.join(model_path, relative), chunk=_HASH_CHUNK):
            file_digest.update(chunk)
        digest.update(file_digest.digest())
    return digest.hexdigest()


def evaluation_identity(release_dir: str, model_path: str, framework: str, **evaluated) -> dict:
    """What makes two evaluations' predictions the same: the model's bytes, the release (its
    ``release.json``, or its place when it has none), the framework, and ``evaluated`` (JSON-ready:
    the source, configs and sets of a C / P evaluation; the tree and in-distribution input of an
    A / O one). Options that only change the scores (``--clean-error``, the baselines) or the speed
    (``--batch-size``, ``--workers``) are not part of it."""
    release_json = storage.join(release_dir, RELEASE_JSON)
    release = (hashlib.sha256(storage.read_bytes(release_json)).hexdigest() if storage.exists(release_json)
               else None)
    return {"model_sha256": model_sha256(model_path), "release_json_sha256": release,
            "release": None if release else local_place(release_dir), "framework": framework, **evaluated}


def local_place(path: str) -> str:
    """An absolute path for a local path, the URL otherwise."""
    return os.path.abspath(path) if storage.is_local(path) else path


_SHOWN = {"model_sha256": "model file", "release_json_sha256": "release", "release": "release folder",
          "source": "--source", "framework": "--framework", "configs": "ImageNet-C configs", "sets": "ImageNet-P sets",
          "tree": "set", "in_distribution": "--in-distribution", "in_distribution_images": "in-distribution images"}


def _difference(there: Mapping[str, Any], here: Mapping[str, Any]) -> str:
    def shown(key, value):
        if key.endswith("sha256") and isinstance(value, str):
            return f"sha256 {value[:12]}"
        if isinstance(value, list):
            return f"{len(value)} ({', '.join(value[:3])}{', ...' if len(value) > 3 else ''})"
        return "none" if value is None else str(value)
    return "; ".join(f"{_SHOWN.get(key, key)}: {shown(key, there.get(key))} there, {shown(key, here.get(key))} here"
                     for key in sorted(set(there) | set(here)) if there.get(key) != here.get(key))


def open_scratch(out_dir: str, identity: Mapping[str, Any], force: bool = False) -> list:
    """Prepare ``OUT/.evaluation`` for this evaluation; return the ledger of the parts an
    interrupted run of the same evaluation committed (empty when there is none).

    Raises
    ------
    OutputFolderError
        When the scratch folder belongs to another evaluation and ``force`` is false (one line).
    """
    scratch = scratch_dir(out_dir)
    path = storage.join(scratch, IDENTITY_FILE)
    if storage.exists(path):
        try:
            there = parse_identity(storage.read_bytes(path))
        except ValueError:
            there = {}
        if there == dict(identity):
            for leftover in (".progress", ".tmp", LISTS_DIR):  # counts, half-written files, lists of the killed run
                storage.delete_tree(storage.join(scratch, leftover))
            return read_ledger(scratch)
        if not force:
            raise OutputFolderError(
                f"{out_dir} holds an interrupted evaluation of something else ({_difference(there, identity)}); "
                "use another --output, or --force to discard it")
    storage.delete_tree(scratch)
    storage.write_atomic(scratch, IDENTITY_FILE, identity_bytes(identity))
    return []


def table_runs(ledger: Iterable[LedgerEntry]) -> dict:
    """table -> the ``(part, offset, length)`` of its committed runs."""
    return dict(ledger_runs(ledger))


def committed_names(ledger: Iterable[LedgerEntry]) -> list:
    """``(table, (part, offset, length))`` of every committed run."""
    return [(table, run) for table, runs in ledger_runs(ledger).items() for run in runs]


def _committed_records(scratch: str, table: str, runs) -> Iterator[tuple]:
    for key, line, _ in merge_runs(scratch, table, runs):
        yield key, line


def _not_done(items: Iterable[tuple], done: set, progress, unit: str) -> Iterator[tuple]:
    """The ``items`` (``((table name, key, label), ...)``) whose key is not in ``done``; counts
    ``<unit>_listed`` and ``<unit>_skipped`` for the progress line."""
    listed = skipped = 0
    for item in items:
        if item[0][1] in done:
            skipped += 1
        else:
            listed += 1
            yield item
    progress.add(**{f"{unit}_listed": listed, f"{unit}_skipped": skipped})
    progress.flush()


def pending_images(examples: Iterable[tuple], scratch: str, config: str, runs, progress) -> Iterator[tuple]:
    """The ``((config, key, label), item)`` of ``examples`` whose prediction no committed run of
    the config holds (memory: the committed keys of one config)."""
    done = {key for key, _ in _committed_records(scratch, C_TABLE + config, runs)} if runs else set()
    return _not_done(examples, done, progress, "images")


def complete_videos(scratch: str, set_name: str, runs) -> set:
    """Keys of the videos of a set all of whose frames are committed."""
    frames: dict = collections.defaultdict(set)
    totals = {}
    for key, line in _committed_records(scratch, P_TABLE + set_name, runs) if runs else ():
        frame = parse_frame_line(line)
        frames[key].add(frame.index)
        totals[key] = frame.total
    return {key for key, indices in frames.items() if len(indices) == totals[key]}


def pending_videos(videos: Iterable[tuple], scratch: str, set_name: str, runs, progress) -> Iterator[tuple]:
    """The ``((set, key, label), locator)`` of ``videos`` that some frame of is not committed."""
    return _not_done(videos, complete_videos(scratch, set_name, runs), progress, "videos")


def c_record(element) -> tuple:
    """``((config, key, label), top5)`` -> ``(table, key, prediction file line)``."""
    (config, key, label), top5 = element
    return C_TABLE + config, key, prediction_line(PredictionRecord(key, label, top5))


def p_record(element) -> tuple:
    """``(((set, key, label), frame, frames), top5)`` -> ``(table, video key, [frame, frames, label, top5])``."""
    ((set_name, key, label), index, total), top5 = element
    return P_TABLE + set_name, key, frame_line(FramePrediction(index, total, label, top5))


def a_record(element) -> tuple:
    """``((part, key, label), logits)`` -> ``(table, key, [label, base64 of the float32 logits])``
    (ImageNet-A / -O: the writers need the logits, kept to the bit)."""
    (part, key, label), logits = element
    return A_TABLE + part, key, logits_line(label, logits)


def read_logits(scratch: str, names: Iterable[tuple]) -> list:
    """``[((part, key, label), float32 logits)]`` of every image the committed runs ``names``
    (``(table, (part, offset, length))``) hold, each once."""
    tables = collections.defaultdict(set)
    for table, run in names:
        tables[table].add(tuple(run))
    results = []
    for table in sorted(tables):
        for key, line in _first_per_key(_committed_records(scratch, table, sorted(tables[table]))):
            label, logits = parse_logits_line(line)
            results.append(((table[len(A_TABLE):], key, label), logits))
    return results


def committed_keys(scratch: str, ledger: Sequence[LedgerEntry], prefix: str = A_TABLE) -> set:
    """``(table name after prefix, key)`` of every prediction the committed parts' tables named
    ``prefix...`` hold: ``(part, key)`` of an A / O evaluation (``A/``), ``(group, key)`` of VCR (``C/``)."""
    return {(table[len(prefix):], key) for table, runs in ledger_runs(ledger).items() if table.startswith(prefix)
            for key, _ in _committed_records(scratch, table, runs)}


class CommitPredictionsFn(beam.DoFn):
    """Sink: each prediction goes, as ``to_record(element)`` = ``(table, key, line)``, to this
    worker's current part; emits ``(table, (part, offset, length))`` of each run it commits."""

    def __init__(self, scratch: str, to_record: Callable, progress_dir: Optional[str],
                 part_records: int = PART_RECORDS, part_seconds: float = PART_SECONDS):
        self._scratch, self._to_record, self._progress_dir = scratch, to_record, progress_dir
        self._part_limits = (part_records, part_seconds)

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir, counters=EVALUATION_COUNTERS)
        self._lock = WorkerLock(self._progress_dir)
        self._first = True

    def start_bundle(self):
        self._parts = PartWriter(self._scratch, *self._part_limits)
        self._predicted = False

    def _committed(self):
        return [(run[0], run[1:]) for run in self._parts.commit()]

    def process(self, element):
        if self._first:  # the worker's first prediction (the steps of --verbose)
            self._first = False
            mark_time("first_prediction_ms")
        self._predicted = True
        table, key, line = self._to_record(element)
        self._parts.add_line(table, key, line)
        self._progress.add(predicted=1)
        if self._parts.due():
            yield from self._committed()

    def finish_bundle(self):
        if self._predicted:
            mark_time("last_prediction_ms")
        return global_windowed(self._committed())

    def teardown(self):
        self._progress.flush()


def _first_per_key(records: Iterable[tuple]) -> Iterator[tuple]:
    """``(key, line)`` in sort order, each key once (the first line)."""
    previous = None
    for key, line in records:
        if key != previous:
            previous = key
            yield key, line


def _check_count(relative: str, predicted: int, listed: Optional[int], unit: str) -> None:
    """Refuse a prediction file of other than the ``listed`` images or videos (None: not checked)."""
    if listed is not None and predicted != listed:
        raise ValueError(f"{relative}: {predicted} {unit} predicted of the {listed} listed; the evaluation lost "
                         "work: rerun it (it resumes from what it committed)")


def write_config_file(scratch: str, out_dir: str, relative: str, table: str, runs,
                      listed: Optional[int] = None) -> float:
    """Merge a C config's runs into its prediction file (sorted by key); return its top-1 error.

    Raises
    ------
    ValueError
        When the file would hold other than ``listed`` images (the config's, committed or not).
    """
    counts = [0, 0]

    def lines():
        for _, line in _first_per_key(_committed_records(scratch, table, runs)):
            row = parse_prediction_line(line)
            counts[0] += 1
            counts[1] += row.top5[0] != row.label
            yield line.encode("utf-8")
        _check_count(relative, counts[0], listed, "images")  # before the file is moved into place

    storage.write_atomic(out_dir, relative, lines())
    return counts[1] / counts[0]


def _videos(records: Iterable[tuple]) -> Iterator[tuple]:
    """``(key, label, [top5 per frame])`` of each video, from its frames' records in sort order."""
    def assembled(key, frames):
        total = frames[min(frames)][0]
        if sorted(frames) != list(range(total)):
            raise ValueError(f"video {key}: frames {sorted(frames)} committed, {total} expected")
        return key, frames[0][1], [frames[i][2] for i in range(total)]

    key, frames = None, {}
    for video, line in records:
        if video != key and frames:
            yield assembled(key, frames)
            frames = {}
        key = video
        index, total, label, top5 = parse_frame_line(line)
        frames.setdefault(index, (total, label, top5))  # a frame held twice: the first in line order
    if frames:
        yield assembled(key, frames)


def write_set_file(scratch: str, out_dir: str, relative: str, table: str, runs,
                   listed: Optional[int] = None) -> int:
    """Merge a P set's runs into its prediction file (one line per video, sorted by key); return
    its count of videos. Its ``(V, T, 5)`` top-5 classes are read back from the file where they are
    needed (:func:`pipelines.formats.predictions.read_set_predictions`): no array of a set is held
    here or handed on through the pipeline.

    Raises
    ------
    ValueError
        When the file would hold other than ``listed`` videos (the set's, committed or not), or
        videos of different lengths (nothing is written then).
    """
    lengths = collections.Counter()  # frame count -> videos

    def lines():
        for key, label, top5 in _videos(_committed_records(scratch, table, runs)):
            lengths[len(top5)] += 1
            yield prediction_line(PredictionRecord(key, label, top5)).encode("utf-8")
        _check_count(relative, sum(lengths.values()), listed, "videos")
        if len(lengths) != 1:
            raise ValueError(f"{relative}: videos differ in frame count {sorted(lengths)}")

    storage.write_atomic(out_dir, relative, lines())
    return sum(lengths.values())


def prediction_progress_text(counts: Mapping[str, int], elapsed: float) -> str:
    """An evaluation's progress line: model inputs (C images, P frames) predicted of those to
    predict, the rate and the time left; the P frames still to decode are estimated from the
    videos decoded so far.

    Examples
    --------
    >>> prediction_progress_text({"images_listed": 100, "predicted": 25, "images_skipped": 50}, 10.0)
    '25/100 images predicted (25.0%), 2.5/s, 0:10 elapsed, ~0:30 left; 50 images predicted before'
    """
    images, videos = counts.get("images_listed", 0), counts.get("videos_listed", 0)
    decoded = counts.get("videos_decoded", 0)
    estimated = videos > decoded
    frames = (counts.get("frames_decoded", 0) + round((videos - decoded) * counts.get("frames_decoded", 0) / decoded)
              if decoded else 0)
    total, done = images + frames, counts.get("predicted", 0)
    what = "images" if not videos else "frames" if not images else "images and frames"
    if not images and not videos:
        text = f"listing what to predict, {format_duration(elapsed)} elapsed"
        before = counts.get("images_skipped", 0) + counts.get("videos_skipped", 0)
        return text + (f"; {before} predicted before" if before else "")
    if videos and not decoded:
        text = f"{done} {what} predicted ({images} images and {videos} videos to predict)"
    else:
        fraction = done / total if total else 1.0
        text = f"{done}/{'~' * estimated}{total} {what} predicted ({100 * min(fraction, 1):.1f}%)"
    rate = done / elapsed if elapsed > 0 else 0.0
    text += f", {rate:.1f}/s, {format_duration(elapsed)} elapsed"
    if total and 0 < done < total and not (videos and not decoded):
        text += f", ~{format_duration((total - done) / rate)} left"
    before = [f"{counts[name]} {name.split('_')[0]}" for name in ("images_skipped", "videos_skipped")
              if counts.get(name)]
    if before:
        text += "; " + " and ".join(before) + " predicted before"
    return text


def finished_text(counts: Mapping[str, int], elapsed: float) -> str:
    """The evaluation's last progress line, e.g. ``'predicted 40 model inputs in 0:12 (3.3/s);
    60 images predicted before'``."""
    done = counts.get("predicted", 0)
    text = f"predicted {done} model inputs in {format_duration(elapsed)} ({done / max(elapsed, 1e-9):.1f}/s)"
    before = [f"{counts[name]} {name.split('_')[0]}" for name in ("images_skipped", "videos_skipped")
              if counts.get(name)]
    return text + ("; " + " and ".join(before) + " predicted before" if before else "")


def _remove_if_empty(folder: str) -> None:
    """Remove a local folder this evaluation made and left empty (its atomic writes' empty temp folder aside)."""
    if storage.is_local(folder):
        for path in (os.path.join(folder, ".tmp"), folder):
            try:
                os.rmdir(path)
            except OSError:  # not empty, or not there
                pass


def run_resumable(out_dir: str, identity: Mapping[str, Any], model_path: str, beam_args: Sequence[str],
                  make_pipeline: Callable[[str, list, Optional[str]], tuple], force: bool = False,
                  progress_interval: float = 10.0, stream=None) -> tuple:
    """Run an evaluation's pipeline with its predictions in parts: lock ``out_dir``, open the
    scratch folder (:func:`open_scratch`), build the pipeline with ``make_pipeline(scratch,
    ledger, progress_dir)`` (it returns the pipeline and the counts the driver made itself, e.g.
    the images it listed), run it with a progress line (local runs) and stop cleanly on a
    signal, then print the last line and remove the scratch folder. Returns the run's ``(start,
    end)`` and the times its workers marked (:func:`pipelines.beam.inference.marked_times`), in
    seconds since the epoch.

    Raises
    ------
    OutputFolderError
        On a busy folder, or a scratch folder of another evaluation (without ``force``).
    pipelines.evaluation.models.ModelError
        On NaN or infinite logits (the scratch folder is removed: a rerun would be refused again).
    pipelines.beam.shutdown.BuildInterrupted, pipelines.beam.shutdown.BuildStopped
        On SIGINT / SIGTERM or a dead worker of a local run (the parts are kept).
    """
    local = is_local(beam_args) and storage.is_local(out_dir)
    stream = stream or sys.stderr
    made = storage.is_local(out_dir) and not os.path.exists(out_dir)
    try:
        with FolderLock(out_dir, "evaluate"):
            scratch = scratch_dir(out_dir)
            wait_for_orphan_workers(scratch)
            ledger = open_scratch(out_dir, identity, force)
            if ledger:
                print(f"resuming: {sum(e.records for e in ledger)} predictions in {len(ledger)} parts of an "
                      "interrupted run are kept", file=stream)
            pipeline, driver_counts = make_pipeline(scratch, ledger, scratch if local else None)
            started, run_start = time.monotonic(), time.time()
            result = _run_watched(pipeline, model_path, out_dir, local, progress_interval, stream)
            run_end = time.time()
            counts = collections.Counter(beam_counters(result, EVALUATION_COUNTERS)) + collections.Counter(
                driver_counts)
            print(finished_text(counts, time.monotonic() - started), file=stream)
            storage.delete_tree(scratch)
            return (run_start, run_end), marked_times(result)
    except ModelError:
        if made:  # the folder this run made, left empty
            _remove_if_empty(out_dir)
        raise


def _run_watched(pipeline, model_path: str, out_dir: str, local: bool, interval: float, stream):
    """:func:`pipelines.beam.inference.run_checked`, with a progress line and a clean stop on a
    signal or a dead worker for a local run; a refused model's scratch folder is removed."""
    scratch = scratch_dir(out_dir)
    progress = ProgressLine(scratch, 0, 0, interval, stream, prediction_progress_text) if local else None
    if progress:
        progress.start()
    try:
        with stopping_cleanly(out_dir) if local else contextlib.nullcontext():
            return run_checked(pipeline, model_path)
    except ModelError:  # refused: nothing was written, and a rerun would be refused again
        storage.delete_tree(scratch)
        raise
    finally:
        if progress:
            progress.stop()
