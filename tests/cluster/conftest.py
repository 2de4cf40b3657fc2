"""Fixtures of the cluster tests: hosts in network and mount namespaces (``harness.py``), a
deployment of store, driver and worker hosts, the input tar and the local build to compare with.

The harness needs root, ``ip netns`` and ``unshare``; without them every test here is skipped
with the one reason :func:`harness.cluster_supported` gives.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

from scripts.cli import main as cli

_SPEC = importlib.util.spec_from_file_location("cluster_harness", Path(__file__).with_name("harness.py"))
harness_module = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = harness_module  # dataclasses look their module up
_SPEC.loader.exec_module(harness_module)

CI_IMAGES = 24
"""Images of the CI run: enough that a worker host is killed while the build runs."""


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.beam)


@pytest.fixture(scope="session")
def harness():
    """The harness module (skips the test where hosts cannot be made here)."""
    reason = harness_module.cluster_supported()
    if reason:
        pytest.skip(reason)
    return harness_module


@pytest.fixture(scope="module")
def deployment(harness, tmp_path_factory):
    """A store host, a driver host and two worker hosts, the project installed from a wheel of
    the tree; every process and namespace is removed at the end, whatever happened."""
    folder = tmp_path_factory.mktemp("cluster")
    wheel = harness.build_wheel(folder / "build")
    cluster = harness.Cluster(folder / "hosts", hide=[str(tmp_path_factory.getbasetemp())])  # wherever --basetemp is
    try:
        yield harness.Deployment(cluster, wheel, workers=2)
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def cluster_input(harness, tmp_path_factory):
    """The input tar (ILSVRC2012_img_val.tar's layout) of the CI run."""
    return harness.write_input_tar(tmp_path_factory.mktemp("cluster_input") / "sample_img_val.tar", CI_IMAGES)


@pytest.fixture(scope="session")
def local_digest(cluster_input, tmp_path_factory):
    """The release digest of a single-machine local build of the same input and config, and the release."""
    output = tmp_path_factory.mktemp("cluster_local") / "release"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli(["build-c", "--input", str(cluster_input), "--output", str(output), "--corruptions",
                    harness_module.CORRUPTIONS, "--severities", harness_module.SEVERITIES, "--workers", "2"]) == 0
    return harness_module.digest_of(printed.getvalue()), output


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A small ONNX classifier (tests/pipelines/beam/test_evaluate_release.py's)."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    spec = importlib.util.spec_from_file_location(
        "evaluate_release_helpers", harness_module.REPO / "tests" / "pipelines" / "beam" / "test_evaluate_release.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    path = tmp_path_factory.mktemp("cluster_model") / "tiny.onnx"
    helpers.write_onnx_model(path)
    return path


@pytest.fixture(scope="module")
def flink(harness, tmp_path_factory):
    """A Flink session cluster across hosts: a JobManager host, two TaskManager hosts (two slots
    each, a Beam worker pool beside each), the store host and a driver host; skipped where
    ``make engines`` did not install Flink and its job server."""
    reason = harness.engine_supported("flink")
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("flink")
    wheel = harness.build_wheel(folder / "build")
    cluster = harness.Cluster(folder / "hosts", hide=[str(tmp_path_factory.getbasetemp())],
                              image=harness.FlinkDeployment.image())
    try:
        yield harness.FlinkDeployment(cluster, wheel)
    finally:
        cluster.close()
