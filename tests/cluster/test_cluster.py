"""A release built across hosts that share only a network and the object store.

The deployment (``conftest.py``, ``harness.py``): a store host running moto's S3 server, a driver
host running Beam's job service started on its own and the CLI, two worker hosts running Beam
worker pools; each host has its own network, mount and UTS namespaces and the project only as the
wheel built from the tree. Beam's local job service runs a job on one SDK worker (its
``FnApiRunner.run_via_runner_api`` never reads ``--direct_num_workers``), so each run uses one
worker host; the driver's worker pool front hands the next run's worker to the next host.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from pipelines.beam.evaluate import evaluate_release
from pipelines.beam.inference import Model
from pipelines.beam.runner import RunOptions

CLUSTER = sys.modules["cluster_harness"]  # the harness, loaded by conftest.py
errors, digest_of, files = CLUSTER.errors, CLUSTER.digest_of, CLUSTER.files
CORRUPTIONS, SEVERITIES, OUTPUTS_PER_IMAGE = CLUSTER.CORRUPTIONS, CLUSTER.SEVERITIES, CLUSTER.OUTPUTS_PER_IMAGE
DIED = "error: a worker process died (killed, or out of memory); rerun the same command to resume"


def test_a_release_built_across_hosts_with_a_killed_worker_host_has_the_local_digest(deployment, cluster_input,
                                                                                     local_digest, tiny_model, harness):
    digest, local_release = local_digest
    bucket, images = deployment.bucket, deployment.tar_images(cluster_input)
    deployment.s3().upload_file(str(cluster_input), bucket, "input/sample_img_val.tar")
    release = f"s3://{bucket}/release"
    args = ["build-c", "--input", f"s3://{bucket}/input/sample_img_val.tar", "--output", release,
            "--corruptions", CORRUPTIONS, "--severities", SEVERITIES, "--commit-every", "5",
            "--", *deployment.beam_options()]

    # the first run: its worker host is killed (every process of it) once a third of the outputs is committed
    killed, first = deployment.build_killing_a_worker_host(args, "release", images * OUTPUTS_PER_IMAGE)
    assert killed is not None, f"the build ended before a worker host was killed: {first.stderr[-500:]}"
    assert killed.killed_processes >= 2  # the worker pool and the SDK worker at least
    assert (first.returncode, errors(first.stderr)) == (3, [DIED])

    # the rerun resumes from the committed parts, on the other worker host
    rerun = deployment.cli(args)
    assert rerun.returncode == 0, rerun.stderr[-1500:]
    resumed = [line for line in rerun.stderr.splitlines() if line.startswith("resuming:")]
    assert len(resumed) == 1, rerun.stderr[-800:]
    done = int(resumed[0].split()[1])
    assert 0 < done < images, resumed
    pending = (images - done) * OUTPUTS_PER_IMAGE  # the job's own Beam counters, reported as it ends
    assert f"progress: {pending}/{pending} outputs (100.0%)" in rerun.stderr, rerun.stderr[-800:]
    others = [host for host in deployment.workers if host is not killed]
    assert any(deployment.runs_a_worker(host, ever=True) for host in others)
    assert digest_of(rerun.stdout) == digest
    deployment.restart_worker(killed)

    # evaluate from the driver host: the model must reach the workers through the store, not the driver's disk
    bucket_model = f"s3://{bucket}/models/tiny.onnx"
    deployment.s3().upload_file(str(tiny_model), bucket, "models/tiny.onnx")
    shutil.copy2(tiny_model, deployment.driver.home / "tiny.onnx")
    evaluate = ["evaluate", "--release", release, "--batch-size", "4", "--", *deployment.beam_options()]
    driver_only = deployment.cli([*evaluate[:3], "--model", f"{harness.HOME}/tiny.onnx", *evaluate[3:]])
    assert driver_only.returncode != 0 and errors(driver_only.stderr) == [
        f"imagenet-cp evaluate: error: ModelError: model {harness.HOME}/tiny.onnx: no such file "
        "(rerun with --debug for the traceback)"], driver_only.stderr[-1500:]
    evaluated = deployment.cli([*evaluate[:3], "--model", bucket_model, *evaluate[3:]])
    assert evaluated.returncode == 0, evaluated.stderr[-1500:]
    local_evaluation = evaluate_release(str(local_release), Model(str(tiny_model), batch_size=4),
                                        run=RunOptions(workers=1))
    expected, remote = files(Path(local_evaluation)), deployment.objects("release-evaluations/tiny")
    assert sorted(remote) == sorted(expected)
    assert [name for name in sorted(expected) if remote[name] != expected[name]] == []

    # verify, package and publish against the store, from the driver host
    outcomes = []
    for command in (["verify", release], ["package", release], ["publish", release], ["verify", release]):
        done = deployment.cli([*command, "--", *deployment.store_options()])
        assert done.returncode == 0, f"{command}: {done.stderr[-1500:]}"
        outcomes.append(digest_of(done.stdout))
    assert outcomes[:2] == [digest, digest] and outcomes[2] == outcomes[3]  # the last verify: publish's release
    assert any(name.startswith("packages/") for name in deployment.objects("release"))


PROBE = """import sys
for path in sys.argv[1:]:
    try:
        open(path, "rb").close()
        print("opened", path)
    except OSError as err:
        print(type(err).__name__, path)
"""


def test_a_worker_host_sees_neither_the_checkout_nor_the_drivers_files(deployment, harness, local_digest):
    """The paths the console opens (the checkout, the local release, the driver host's files as
    the console sees them) are not there on a worker host, and its project is the installed wheel."""
    _, local_release = local_digest
    repo = Path(harness.REPO)
    paths = [repo / "setup.py", repo / "pipelines" / "beam" / "build.py", repo / "transforms" / "_assets" / "frost",
             local_release / "SHA256SUMS", deployment.driver.home / "dispatch.py",
             deployment.driver.home / "job-service.log"]
    if harness.editable_project():
        paths.append(Path(harness.editable_project()) / "setup.py")
    assert all(path.exists() for path in paths)  # the console sees every one
    files = [str(path) for path in paths if path.is_file()]
    for host in (*deployment.workers, deployment.store):
        seen = host.run(["python", "-c", PROBE, *files], check=True).stdout.splitlines()
        assert seen == [f"FileNotFoundError {path}" for path in files], (host.name, seen)
        listed = host.run(["python", "-c", "import os, sys; print(os.path.exists(sys.argv[1]), "
                           "os.listdir(sys.argv[2]) if os.path.isdir(sys.argv[2]) else [])",
                           str(repo / "transforms" / "_assets" / "frost"), str(repo)], check=True).stdout
        # the checkout: an empty file system there, or no such folder (a clone under /tmp: the host's own /tmp)
        assert listed.split() == ["False", "[]"], (host.name, listed)
    where = deployment.workers[0].run(["python", "-c", "import importlib.metadata as m, pipelines, transforms.assets as a; "
                                       "print(pipelines.__file__); print(a.find_frost_dir()); "
                                       "print(m.distribution('imagenet-cp').locate_file(''))"], check=True).stdout.split()
    assert [w.startswith(f"{harness.VENV}/lib/") for w in where] == [True, True, True], where


CUT_SECONDS = 25
"""Longer than the 20 s keepalive interval of Beam's gRPC channels (their timeout, 300 s more, is
for a run by hand: ``harness.py --cut 330``)."""


def test_a_worker_host_cut_off_the_network_finishes_or_stops_in_one_line_and_the_rerun_resumes(
        deployment, cluster_input, local_digest):
    digest, _ = local_digest
    bucket, images = deployment.bucket, deployment.tar_images(cluster_input)
    deployment.s3().upload_file(str(cluster_input), bucket, "input/sample_img_val.tar")
    args = ["build-c", "--input", f"s3://{bucket}/input/sample_img_val.tar", "--output", f"s3://{bucket}/release-cut",
            "--corruptions", CORRUPTIONS, "--severities", SEVERITIES, "--commit-every", "5",
            "--", *deployment.beam_options()]
    cut, first = deployment.build_with_a_cut(args, "release-cut", images * OUTPUTS_PER_IMAGE, CUT_SECONDS)
    assert cut is not None, f"the build ended before the network was cut: {first.stderr[-500:]}"
    if first.returncode == 0:
        assert digest_of(first.stdout) == digest
        return
    lines = errors(first.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), first.stderr[-1500:]
    rerun = deployment.cli(args)
    assert rerun.returncode == 0, rerun.stderr[-1500:]
    resumed = [line for line in rerun.stderr.splitlines() if line.startswith("resuming:")]
    assert len(resumed) == 1 and 0 < int(resumed[0].split()[1]) < images, rerun.stderr[-800:]
    assert digest_of(rerun.stdout) == digest


STALL_MINUTES = 0.5
"""The builds' ``--stall-minutes`` where a worker host is lost for good (the CLI's default is 30)."""
STALLED = ("error: no part was committed for 0.5 min (a worker lost with its host or its network, which the runner "
           "did not notice); the job was told to cancel; rerun the same command to resume")


def test_a_worker_host_lost_for_good_stops_the_build_in_one_line_and_the_rerun_resumes(
        deployment, cluster_input, local_digest):
    """A worker host drops off the network and never comes back: Beam's job service waits for it
    for ever (it notices no silent peer), so the CLI stops the job once no part was committed for
    ``--stall-minutes``. (A cut that ends after Beam's 320 s of gRPC timeouts leaves the same
    state, a worker whose streams are dead: ``harness.py --cut 330 --stall-minutes 3`` runs it,
    too long for CI.)"""
    digest, _ = local_digest
    bucket, images = deployment.bucket, deployment.tar_images(cluster_input)
    deployment.s3().upload_file(str(cluster_input), bucket, "input/sample_img_val.tar")
    args = ["build-c", "--input", f"s3://{bucket}/input/sample_img_val.tar", "--output", f"s3://{bucket}/release-lost",
            "--corruptions", CORRUPTIONS, "--severities", SEVERITIES, "--commit-every", "5",
            "--stall-minutes", f"{STALL_MINUTES:g}", "--", *deployment.beam_options()]
    lost, first = deployment.build_with_a_fault(args, "release-lost", images * OUTPUTS_PER_IMAGE,
                                                lambda host: host.cut(), timeout=600)
    try:
        assert lost is not None, f"the build ended before the network was cut: {first.stderr[-500:]}"
        assert (first.returncode, errors(first.stderr)) == (3, [STALLED]), first.stderr[-1500:]
    finally:
        if lost is not None:
            deployment.lose_for_good(lost)
    rerun = deployment.cli(args)
    assert rerun.returncode == 0, rerun.stderr[-1500:]
    resumed = [line for line in rerun.stderr.splitlines() if line.startswith("resuming:")]
    assert len(resumed) == 1 and 0 < int(resumed[0].split()[1]) < images, rerun.stderr[-800:]
    assert digest_of(rerun.stdout) == digest


def test_a_worker_host_without_the_frost_textures_fails_in_one_line_naming_the_file(deployment, cluster_input):
    """The wheel carries the textures; a worker image that lost one fails with one line naming it."""
    bucket = deployment.bucket
    deployment.s3().upload_file(str(cluster_input), bucket, "input/sample_img_val.tar")
    moved = []
    try:
        for host in deployment.workers:
            texture = next(host.home.glob("venv/lib/python*/site-packages/transforms/_assets/frost/frost1.png"))
            texture.rename(texture.with_suffix(".moved"))
            moved.append(texture)
        done = deployment.cli(["build-c", "--input", f"s3://{bucket}/input/sample_img_val.tar", "--output",
                               f"s3://{bucket}/release-frost", "--corruptions", "frost", "--severities", "1",
                               "--limit", "2", "--", *deployment.beam_options()])
    finally:
        for texture in moved:
            texture.with_suffix(".moved").rename(texture)
    lines = errors(done.stderr)
    assert done.returncode != 0 and len(lines) == 1, done.stderr[-1500:]
    assert lines[0].startswith("error: ") and "frost1.png" in lines[0] and "Traceback" not in lines[0], lines
