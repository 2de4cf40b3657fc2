"""Progress counters: the driver's progress line sees a worker's first count at once, and keeps
its counts once the seal has removed the progress files."""
import io
import shutil
import time

from pipelines.beam.progress import ProgressCounter, ProgressLine, WorkClock, read_progress
from schemas.release import PROGRESS_DIR


def test_first_count_is_written_at_once_then_every_interval(tmp_path):
    counter = ProgressCounter(str(tmp_path), interval=3600)
    counter.add(images_read=1)
    assert read_progress(str(tmp_path))["images_read"] == 1
    counter.add(images_read=1)
    assert read_progress(str(tmp_path))["images_read"] == 1  # the next write waits for the interval
    counter.flush()
    assert read_progress(str(tmp_path))["images_read"] == 2


def test_the_line_keeps_the_counts_when_the_progress_files_are_removed(tmp_path):
    ProgressCounter(str(tmp_path)).add(images_read=3, outputs_written=12)
    stream = io.StringIO()
    line = ProgressLine(str(tmp_path), expected_outputs=12, expected_images=3, interval=0.05, stream=stream)
    line.start()
    deadline = time.monotonic() + 30
    while "12/12 outputs" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(tmp_path / PROGRESS_DIR)  # what the seal does while the line still runs
    printed = len(stream.getvalue().splitlines())
    while len(stream.getvalue().splitlines()) < printed + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    line.stop()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= printed + 2
    assert all(text.startswith("progress: 12/12 outputs (100.0%), 3/3 images read") for text in lines), lines


def test_work_clock_counts_its_thread_inside_its_blocks_only():
    clock = WorkClock()
    with clock:
        sum(i * i for i in range(200_000))  # CPU work inside
    inside = clock.ns
    time.sleep(0.05)  # no CPU, and outside
    sum(i * i for i in range(200_000))  # CPU work outside
    assert inside > 0 and clock.ns == inside
    with clock:
        sum(i * i for i in range(200_000))
    assert clock.ns > inside  # blocks add up
