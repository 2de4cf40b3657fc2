"""``make build-imagenet-c BEAM_ARGS='...'`` (and build-imagenet-p, build-vcr) hands the Beam options to
the command after ``--``, where ``imagenet-cp`` reads them; without BEAM_ARGS there is no ``--``."""
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "--runner=FlinkRunner --flink_master=localhost:8081 --environment_type=LOOPBACK"


def _command_line(target: str, *assignments: str) -> list[str]:
    """The ``imagenet-cp`` line that ``make -n TARGET`` would run, as argv."""
    result = subprocess.run(["make", "-n", "-C", str(REPO), target, *assignments], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "imagenet-cp build-" in line]
    assert len(lines) == 1, result.stdout
    return shlex.split(lines[0])


@pytest.mark.parametrize("target,command", [("build-imagenet-c", "build-c"), ("build-imagenet-p", "build-p"),
                                            ("build-vcr", "build-vcr")])
def test_beam_args_follow_the_double_dash(target, command):
    argv = _command_line(target, f"BEAM_ARGS={CLUSTER}", "INPUT=/data/val", "OUTPUT=/data/out")
    assert argv[1] == command
    dashes = argv.index("--")
    assert argv[dashes + 1:] == CLUSTER.split()
    assert argv[argv.index("--input") + 1] == "/data/val" and argv.index("--output") < dashes


@pytest.mark.parametrize("target", ["build-imagenet-c", "build-imagenet-p", "build-vcr"])
def test_no_double_dash_without_beam_args(target):
    assert "--" not in _command_line(target)
