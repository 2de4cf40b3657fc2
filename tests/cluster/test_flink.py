"""A release built on a Flink cluster: Beam's FlinkRunner, its job spread over two TaskManager hosts.

The deployment (``conftest.py``, ``harness.FlinkDeployment``): a JobManager host, two TaskManager
hosts each with a Beam worker pool beside it (``--environment_type=EXTERNAL``: the TaskManager
asks the pool on its own host for SDK workers), the store host, and a driver host whose CLI runs
``--runner=FlinkRunner``; Flink and Beam's job server come from ``make engines``.
"""
from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

from pipelines.beam.evaluate import evaluate_release
from pipelines.beam.inference import Model
from pipelines.beam.runner import RunOptions
from scripts.cli import main as cli

CLUSTER = sys.modules["cluster_harness"]  # the harness, loaded by conftest.py
errors, digest_of = CLUSTER.errors, CLUSTER.digest_of


def build_args(flink, output: str) -> list[str]:
    return ["build-c", "--input", f"s3://{flink.bucket}/input/sample_img_val.tar", "--output",
            f"s3://{flink.bucket}/{output}", "--corruptions", CLUSTER.CORRUPTIONS, "--severities", CLUSTER.SEVERITIES,
            "--commit-every", "5", "--", *flink.beam_options()]


@pytest.fixture(scope="module")
def flink_release(flink, cluster_input):
    """A release built on the Flink cluster into ``s3://BUCKET/release``: the finished command,
    the outputs of the committed parts by host and the records Flink's subtasks read by host."""
    flink.s3().upload_file(str(cluster_input), flink.bucket, "input/sample_img_val.tar")
    outputs = flink.tar_images(cluster_input) * CLUSTER.OUTPUTS_PER_IMAGE
    _, done = flink.build_with_a_fault(build_args(flink, "release"), "release", outputs, None, timeout=600)
    return done, flink.committed_split, flink.engine_split()


def test_a_release_built_on_flink_is_made_by_both_taskmanager_hosts_and_has_the_local_digest(
        flink_release, cluster_input, local_digest):
    digest, _ = local_digest
    done, parts, engine = flink_release
    assert done.returncode == 0, done.stderr[-1500:]
    assert digest_of(done.stdout) == digest
    # the committed parts: each TaskManager host made at least a quarter of the outputs
    outputs = CLUSTER.Deployment.tar_images(cluster_input) * CLUSTER.OUTPUTS_PER_IMAGE
    assert sorted(parts) == ["taskmanager1", "taskmanager2"] and sum(parts.values()) == outputs, parts
    assert min(parts.values()) >= outputs / 4, parts
    # the engine: the job's subtasks ran on both TaskManagers, each reading at least a quarter of the records
    assert sorted(engine) == ["taskmanager1", "taskmanager2"], engine
    assert min(engine.values()) >= sum(engine.values()) / 4, engine


def test_a_taskmanager_host_killed_at_a_third_the_build_finishes_or_resumes_to_the_local_digest(
        flink, cluster_input, local_digest):
    """Every process of one TaskManager host is SIGKILLed once a third of the outputs is committed.
    Flink restarts the job (its fixed-delay strategy) in the slots left on the other host; should
    the job fail instead, the build stops in one line and the rerun resumes."""
    digest, _ = local_digest
    flink.s3().upload_file(str(cluster_input), flink.bucket, "input/sample_img_val.tar")
    outputs = flink.tar_images(cluster_input) * CLUSTER.OUTPUTS_PER_IMAGE
    args = build_args(flink, "release-kill")

    def kill(host):
        host.killed_processes = host.kill()

    killed, first = flink.build_with_a_fault(args, "release-kill", outputs, kill, timeout=600,
                                             target=lambda: flink.workers[0])
    try:
        assert killed is flink.workers[0], f"the build ended before a TaskManager was killed: {first.stderr[-500:]}"
        assert killed.killed_processes >= 3  # the TaskManager, the worker pool and its SDK worker at least
        if first.returncode:
            lines = errors(first.stderr)
            assert len(lines) == 1 and lines[0].startswith("error: "), first.stderr[-1500:]
            flink.restart_worker(killed)
            killed = None
            first = flink.cli(args)
            resumed = [line for line in first.stderr.splitlines() if line.startswith("resuming:")]
            assert len(resumed) == 1, first.stderr[-800:]
        assert first.returncode == 0, first.stderr[-1500:]
        assert digest_of(first.stdout) == digest
    finally:
        if killed is not None:
            flink.restart_worker(killed)


def test_an_evaluation_and_an_imagenet_p_build_on_flink_have_the_bytes_of_local_runs(
        flink, flink_release, cluster_input, local_digest, tiny_model, tmp_path):
    _, local_release = local_digest
    bucket, (built, _, _) = flink.bucket, flink_release
    assert built.returncode == 0, built.stderr[-1500:]
    release = f"s3://{bucket}/release"

    # evaluate: the model reaches the TaskManagers' workers through the store
    flink.s3().upload_file(str(tiny_model), bucket, "models/tiny.onnx")
    evaluated = flink.cli(["evaluate", "--release", release, "--model", f"s3://{bucket}/models/tiny.onnx",
                           "--batch-size", "4", "--", *flink.beam_options()])
    assert evaluated.returncode == 0, evaluated.stderr[-1500:]
    local_evaluation = evaluate_release(str(local_release), Model(str(tiny_model), batch_size=4),
                                        run=RunOptions(workers=1))
    expected, remote = CLUSTER.files(Path(local_evaluation)), flink.objects("release-evaluations/tiny")
    assert sorted(remote) == sorted(expected)
    assert [name for name in sorted(expected) if remote[name] != expected[name]] == []

    # build-p: a few images' sequences, MP4s and all
    config = ["--perturbations", "brightness", "--preset", "ultrafast", "--limit", "3"]
    local_p = tmp_path / "release-p"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli(["build-p", "--input", str(cluster_input), "--output", str(local_p), *config]) == 0
    remote_p = flink.cli(["build-p", "--input", f"s3://{bucket}/input/sample_img_val.tar", "--output",
                          f"s3://{bucket}/release-p", *config, "--", *flink.beam_options()])
    assert remote_p.returncode == 0, remote_p.stderr[-1500:]
    assert digest_of(remote_p.stdout) == digest_of(printed.getvalue())
    expected, remote = CLUSTER.files(local_p), flink.objects("release-p")
    assert sorted(remote) == sorted(expected)
    assert [name for name in sorted(expected) if remote[name] != expected[name]] == []
