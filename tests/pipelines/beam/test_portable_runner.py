"""The build through Beam's portable job API, as Flink and Spark job servers drive it.

``--runner=PortableRunner --job_endpoint=embed`` submits the pipeline to an in-process job service;
``--environment_type=EXTERNAL`` makes it ask a worker pool started here (the ``worker_pool``
fixture) for SDK workers, so the pipeline and its DoFns are serialised to separate worker
processes. The release must be byte-identical to the local FnApiRunner's.
"""
from pathlib import Path

import pytest

from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def portable_args(port: int) -> list[str]:
    return ["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{port}"]


def tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_portable_runner_with_a_worker_pool_builds_the_local_release(worker_pool, sample_release, tmp_path, capsys):
    local, _ = sample_release
    port, log = worker_pool()
    output = tmp_path / "portable"
    assert cli(["build-c", "--output", str(output), "--corruptions", "gaussian_noise,contrast", "--severities", "1,2",
                "--", *portable_args(port)]) == 0
    assert "Starting worker" in log.read_text()  # the DoFns ran in the pool's worker processes
    # the progress line of a run on another runner comes from the job's Beam counters (Beam's own job
    # service reports them once the job has finished)
    assert "progress: 40/40 outputs (100.0%), 8/8 images read, 0 failures" in capsys.readouterr().err
    built, expected = tree(output), tree(local)
    assert sorted(built) == sorted(expected)
    assert [name for name in sorted(expected) if built[name] != expected[name]] == []
