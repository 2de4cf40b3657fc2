"""A job run elsewhere is stopped when its committed work stops growing (``wait_watched``).

The cluster tests show it on a real job service (a worker host cut off for good); these pin its
rules with a job that never finishes, one that finishes and one that fails.
"""
import threading
import time

import pytest

from pipelines.beam.shutdown import RESUME_HINT, BuildStopped, wait_watched


class Job:
    """A job result: ``wait_until_finish`` blocks until :attr:`done` is set (then raises ``error``)."""

    def __init__(self, error=None):
        self.done, self.error, self.cancelled = threading.Event(), error, threading.Event()

    def wait_until_finish(self):
        self.done.wait()
        if self.error:
            raise self.error
        return "DONE"

    def cancel(self):
        self.cancelled.set()


def test_a_job_that_commits_nothing_for_the_limit_is_cancelled_and_stops_in_one_line():
    job, started = Job(), time.monotonic()
    with pytest.raises(BuildStopped) as stopped:
        wait_watched(job, lambda: 7, stall_seconds=0.3, poll=0.05)
    assert 0.3 <= time.monotonic() - started < 5
    assert job.cancelled.is_set()
    assert str(stopped.value).startswith("no part was committed for 0.005 min") and str(stopped.value).endswith(RESUME_HINT)
    assert "\n" not in str(stopped.value)


def test_a_job_whose_parts_keep_coming_is_waited_for_to_its_end():
    job, counts = Job(), iter(range(1000))
    threading.Timer(0.8, job.done.set).start()  # longer than the limit, with a part every poll
    wait_watched(job, lambda: next(counts), stall_seconds=0.3, poll=0.05)
    assert not job.cancelled.is_set()


def test_a_store_that_cannot_be_read_counts_as_no_change_and_a_limit_of_0_never_stops():
    def unreadable():
        raise OSError("the store does not answer")

    job = Job()
    with pytest.raises(BuildStopped):
        wait_watched(job, unreadable, stall_seconds=0.2, poll=0.05)
    job = Job()
    threading.Timer(0.5, job.done.set).start()
    wait_watched(job, lambda: 0, stall_seconds=0, poll=0.05)
    assert not job.cancelled.is_set()


def test_a_job_that_fails_raises_its_own_error():
    job = Job(RuntimeError("the runner says no"))
    job.done.set()
    with pytest.raises(RuntimeError, match="the runner says no"):
        wait_watched(job, lambda: 0, stall_seconds=10, poll=0.05)
