"""Progress of a running build: Beam counters, and a progress line the driver prints.

Workers count what they did (images read, outputs written, failures) in Beam metrics, which
every runner reports, and, every few seconds, in one small JSON file per DoFn instance under
``DIR/.progress/``. The driver's :class:`ProgressLine` sums those files while the pipeline runs,
because a local runner reports metrics only at the end. The counts are for display only: a
retried bundle counts twice there, never in the release.
"""
from __future__ import annotations

import math
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Callable, Mapping, Optional, TextIO

from apache_beam.metrics import Metrics

from schemas.release import PROGRESS_DIR

from pipelines.formats import storage
from pipelines.formats.scratch_files import counts_bytes, parse_counts

__all__ = ["NAMESPACE", "COUNTERS", "IMAGE_WORK_COUNTER", "WorkClock", "ProgressCounter", "read_progress",
           "runner_counters", "format_duration", "progress_text", "ProgressLine"]

NAMESPACE = "imagenet-cp"
COUNTERS = ("images_read", "outputs_written", "failures")
IMAGE_WORK_COUNTER = "image_work_cpu_us"
"""An ImageNet-C build's Beam counter of the CPU time its workers spent making the outputs' bytes
from the sources' (decode, preprocess, corrupt, encode; :class:`WorkClock`): the work that
``imagenet-cp bench`` times, against which ``bench --scaling`` sets the build's whole cost."""


class WorkClock:
    """CPU time of the calling thread inside ``with clock:`` blocks (``time.thread_time_ns``), so
    that what the rest of a worker does between them (records, files, parts, Beam, other
    threads) is not counted. ``ns``: the nanoseconds counted so far."""

    def __init__(self):
        self.ns = 0
        self._start = 0

    def __enter__(self) -> "WorkClock":
        self._start = time.thread_time_ns()
        return self

    def __exit__(self, *exc) -> None:
        self.ns += time.thread_time_ns() - self._start


class ProgressCounter:
    """Counters of one DoFn instance, mirrored to ``DIR/.progress/<random>.json``.

    Parameters
    ----------
    output_dir : str, optional
        The release directory; None keeps the counts in Beam metrics only (remote runs, where
        thousands of workers would otherwise write progress files).
    interval : float
        Seconds between two writes of the progress file; the first count is written at once, so
        the progress line moves as soon as a worker has done anything.
    counters : tuple of str
        The names :meth:`add` accepts (a build's :data:`COUNTERS` by default; an evaluation's are
        :data:`pipelines.beam.prediction_parts.EVALUATION_COUNTERS`).
    """

    def __init__(self, output_dir: Optional[str], interval: float = 2.0, counters: tuple = COUNTERS):
        self._output_dir = output_dir
        self._relative = f"{PROGRESS_DIR}/{uuid.uuid4().hex}.json"
        self._interval = interval
        self._counts: Counter = Counter()
        self._written = -math.inf
        self._metrics = {name: Metrics.counter(NAMESPACE, name) for name in counters}  # made once: 20 us each

    def add(self, **counts: int) -> None:
        """Add to named counters (a subset of the instance's counter names)."""
        for name, value in counts.items():
            metric = self._metrics.get(name)
            if metric is None:
                raise ValueError(f"unknown counter {name!r}; valid counters: {', '.join(self._metrics)}")
            metric.inc(value)
            self._counts[name] += value
        if time.monotonic() - self._written >= self._interval:
            self.flush()

    def flush(self) -> None:
        """Write the counts so far to this instance's progress file."""
        if self._counts and self._output_dir is not None:
            try:
                storage.write_atomic(self._output_dir, self._relative, counts_bytes(self._counts))
            except OSError:  # display only: a full disk is reported by the writes that matter
                pass
        self._written = time.monotonic()


def read_progress(output_dir: str) -> Counter:
    """Sum of all progress files of a build in ``output_dir``."""
    total: Counter = Counter()
    for path in storage.match(storage.join(output_dir, f"{PROGRESS_DIR}/*.json")):
        try:
            total.update(parse_counts(storage.read_bytes(path)))
        except (OSError, ValueError):  # a file being replaced right now: it is counted next time
            continue
    return total


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_text(counts: Mapping[str, int], expected_outputs: int, expected_images: int, elapsed: float) -> str:
    """One progress line, e.g. ``'120/1140 outputs (10.5%), 12/12 images read, 0 failures, 0:35 elapsed'``."""
    done = counts.get("outputs_written", 0)
    fraction = done / expected_outputs if expected_outputs else 1.0
    text = (f"{done}/{expected_outputs} outputs ({100 * fraction:.1f}%), "
            f"{counts.get('images_read', 0)}/{expected_images} images read, "
            f"{counts.get('failures', 0)} failures, {format_duration(elapsed)} elapsed")
    if 0 < fraction < 1:
        text += f", ~{format_duration(elapsed * (1 - fraction) / fraction)} left"
    return text


def runner_counters(result) -> Counter:
    """The build's Beam counters (:data:`NAMESPACE`) as the runner reports them now: committed
    values, else attempted ones; empty while the runner reports none.

    Dataflow reports counters while a job runs; Beam's job servers for Flink and Spark, its own
    job service and the FnApiRunner only once it has finished (a build follows its committed
    parts meanwhile). Beam's ``PortableRunner`` result keeps its first answer, so it is asked
    afresh each time."""
    from apache_beam.metrics.metric import MetricsFilter

    if hasattr(result, "_metrics"):  # PortableRunner's PipelineResult caches the first metrics response
        result._metrics = None
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    except Exception:  # a runner that cannot say yet (the job is starting, its service is busy): display only
        return Counter()
    totals: Counter = Counter()
    for counter in found:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] += value or 0
    return totals


class ProgressLine(threading.Thread):
    """A daemon thread printing :func:`progress_text` every ``interval`` seconds until stopped.

    ``describe(counts, elapsed)``, when given, makes the line instead (an evaluation's,
    :func:`pipelines.beam.prediction_parts.prediction_progress_text`). ``read()``, when given,
    gives the counts instead of the progress files of ``output_dir`` (a remote run's
    :func:`runner_counters`)."""

    def __init__(self, output_dir: Optional[str], expected_outputs: int, expected_images: int,
                 interval: float = 10.0, stream: TextIO = sys.stderr,
                 describe: Optional[Callable[[Mapping[str, int], float], str]] = None,
                 read: Optional[Callable[[], Mapping[str, int]]] = None):
        super().__init__(daemon=True)
        self._args = (output_dir, expected_outputs, expected_images)
        self._describe = describe
        self._read = read if read is not None else (lambda: read_progress(output_dir))
        self._interval = interval
        self._stream = stream
        self._stop_event = threading.Event()
        self._start = time.monotonic()
        self._counts: Counter = Counter()

    def run(self) -> None:
        while not self._stop_event.wait(self._interval):
            self.print_line()

    def print_line(self) -> None:
        """Print one progress line now."""
        _, outputs, images = self._args
        # the highest count seen: the seal removes the progress files before the line stops
        latest, elapsed = Counter(self._read()), time.monotonic() - self._start
        counts = self._counts
        self._counts = counts = Counter({name: max(counts[name], latest[name]) for name in counts.keys() | latest.keys()})
        text = (self._describe(counts, elapsed) if self._describe is not None
                else progress_text(counts, outputs, images, elapsed))
        print(f"progress: {text}", file=self._stream, flush=True)

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join()
