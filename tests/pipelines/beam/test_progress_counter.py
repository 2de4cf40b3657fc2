"""Progress counters: the driver's progress line sees a worker's first count at once."""
from pipelines.beam.progress import ProgressCounter, read_progress


def test_first_count_is_written_at_once_then_every_interval(tmp_path):
    counter = ProgressCounter(str(tmp_path), interval=3600)
    counter.add(images_read=1)
    assert read_progress(str(tmp_path))["images_read"] == 1
    counter.add(images_read=1)
    assert read_progress(str(tmp_path))["images_read"] == 1  # the next write waits for the interval
    counter.flush()
    assert read_progress(str(tmp_path))["images_read"] == 2
