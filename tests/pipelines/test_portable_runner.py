"""The build through Beam's portable job API, as Flink and Spark job servers drive it.

``--runner=PortableRunner --job_endpoint=embed`` submits the pipeline to an in-process job service;
``--environment_type=EXTERNAL`` makes it ask a worker pool started here
(``python -m apache_beam.runners.worker.worker_pool_main``) for SDK workers, so the pipeline and
its DoFns are serialised to separate worker processes. The release must be byte-identical to the
local FnApiRunner's.
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.cli import main as cli

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    """The port of a Beam worker pool whose workers run this checkout's Python and packages."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    log = tmp_path_factory.mktemp("worker_pool") / "pool.log"  # a file: a pipe nobody reads would fill
    with open(log, "wb") as stream:
        pool = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                                 f"--service_port={port}"], env=env, start_new_session=True,
                                stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("localhost", port), timeout=1).close()
            break
        except OSError as err:
            if pool.poll() is not None or time.monotonic() > deadline:
                os.killpg(pool.pid, signal.SIGKILL)
                pytest.skip(f"the Beam worker pool did not start on port {port}: {err!r} "
                            f"{log.read_text(errors='replace')[-500:]}")
            time.sleep(0.2)
    yield port, log
    os.killpg(pool.pid, signal.SIGTERM)  # the pool and the SDK workers it started
    pool.wait(10)


def tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_portable_runner_with_a_worker_pool_builds_the_local_release(worker_pool, sample_release, tmp_path):
    local, _ = sample_release
    port, log = worker_pool
    output = tmp_path / "portable"
    assert cli(["build-c", "--output", str(output), "--corruptions", "gaussian_noise,contrast", "--severities", "1,2",
                "--", "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{port}"]) == 0
    assert "Starting worker" in log.read_text()  # the DoFns ran in the pool's worker processes
    built, expected = tree(output), tree(local)
    assert sorted(built) == sorted(expected)
    assert [name for name in sorted(expected) if built[name] != expected[name]] == []
