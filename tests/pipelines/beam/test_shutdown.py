"""A pipeline error as one line (``explain_failure``), whatever its chain of causes."""
from pipelines.beam.shutdown import RESUME_HINT, explain_failure


def test_a_dead_worker_is_named_even_when_the_chain_of_causes_loops():
    """Beam's thread pool can hand back a worker's failure whose ``__context__`` chain loops."""
    closed, grpc = RuntimeError("Channel closed prematurely."), ConnectionError("the stream was reset")
    closed.__context__, grpc.__context__ = grpc, closed
    stopped = explain_failure(closed, "/nonexistent", lambda: 0)
    assert str(stopped) == f"a worker process died (killed, or out of memory); {RESUME_HINT}"
    assert stopped.exit_code == 3


def test_an_error_that_is_none_of_ours_is_left_to_the_caller():
    assert explain_failure(KeyError("x"), "/nonexistent", lambda: 0) is None
