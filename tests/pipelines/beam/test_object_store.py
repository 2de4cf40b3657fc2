"""Releases on an object store: build-c, verify, package and evaluate against a local S3 server.

The server is moto's (``python -m moto.server``), a real S3 HTTP API on 127.0.0.1; Beam reaches it
through its own S3 file system (``apache-beam[aws]``, boto3) with ``--s3_endpoint_url``. Every
object the commands write is compared, byte for byte, with the local files of the same commands.
"""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# apache-beam[aws] and moto[server,s3] are in the test extra: a missing one is an error, not a skip
import apache_beam.io.aws.s3io  # noqa: F401
import boto3
import moto  # noqa: F401
import pytest

from pipelines.formats import storage
from pipelines.beam.inference import Model
from pipelines.beam.runner import RunOptions
from pipelines.beam.evaluate import evaluate_release
from pipelines.release.package import package_release
from pipelines.inputs.listing import index_source, read_entry
from pipelines.release.verify import verify_release
from schemas.release import CHECKSUMS, SCRATCH_DIRS
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

BUCKET = "imagenet-cp-test"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
CORRUPTIONS, SEVERITIES = "gaussian_noise,contrast", "1,2"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """``(client, beam_args)`` of a moto S3 server on 127.0.0.1 holding an empty bucket."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto") / "server.log"  # one line per request: not a pipe, which would fill
    with open(log, "wb") as stream:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=stream, stderr=subprocess.STDOUT)
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"])
    deadline = time.monotonic() + 30
    while True:
        try:
            client.list_buckets()
            break
        except Exception as err:  # not listening yet
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.skip(f"the moto S3 server did not start on {url}: {err!r} "
                            f"{log.read_text(errors='replace')[-500:]}")
            time.sleep(0.2)
    client.create_bucket(Bucket=BUCKET)
    beam_args = [f"--s3_endpoint_url={url}", "--s3_region_name=us-east-1",
                 f"--s3_access_key_id={KEYS['AWS_ACCESS_KEY_ID']}",
                 f"--s3_secret_access_key={KEYS['AWS_SECRET_ACCESS_KEY']}"]
    yield client, beam_args
    storage.configure([])
    server.terminate()
    server.wait(10)


def objects(client, prefix: str) -> dict[str, bytes]:
    """Every object below ``s3://BUCKET/prefix/``: relative key -> bytes (read with boto3 itself)."""
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            key = item["Key"]
            found[key[len(prefix) + 1:]] = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    return found


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_tree(remote: dict, local: dict):
    assert sorted(remote) == sorted(local)
    assert [name for name in sorted(local) if remote[name] != local[name]] == []


# --- the storage layer ------------------------------------------------------------------------

def test_objects_are_written_in_place_atomically_and_listed_by_prefix(s3):
    client, beam_args = s3
    storage.configure(beam_args)
    root = f"s3://{BUCKET}/unit"
    storage.write_atomic(root, "a/one.txt", b"one")
    assert storage.write_atomic(root, "a/empty.txt", b"").size == 0  # Beam's S3 writer cannot do this alone
    storage.write_atomic(root, "b/c/chunks.txt", [b"1", b"", b"23"])
    storage.write_atomic(f"s3://{BUCKET}/unit-sibling", "x.txt", b"x")

    def failing():
        yield b"half"
        raise OSError("disk gone")
    with pytest.raises(OSError, match="disk gone"):
        storage.write_atomic(root, "a/failed.txt", failing())

    assert objects(client, "unit") == {"a/one.txt": b"one", "a/empty.txt": b"", "b/c/chunks.txt": b"123"}
    assert storage.list_tree(root) == {"a/empty.txt": 0, "a/one.txt": 3, "b/c/chunks.txt": 3}
    assert storage.list_tree(root, ["b"]) == {"a/empty.txt": 0, "a/one.txt": 3}
    assert storage.list_folders(root) == ["a", "b"] and storage.list_files(root, "a") == ["a/empty.txt", "a/one.txt"]
    assert [storage.exists(f"{root}/{p}") for p in ("a", "a/one.txt", "zz", "b/c")] == [True, True, False, True]
    assert not storage.exists(f"s3://{BUCKET}/uni") and storage.is_folder(f"{root}/b")
    assert storage.read_bytes(f"{root}/b/c/chunks.txt", 1, 2) == b"23"
    storage.delete_tree(f"{root}/b")
    storage.delete_tree(f"{root}/nothing-here")
    assert sorted(objects(client, "unit")) == ["a/empty.txt", "a/one.txt"]
    assert sorted(objects(client, "unit-sibling")) == ["x.txt"]


def test_a_failed_local_write_leaves_neither_the_file_nor_its_temporary(tmp_path):
    def failing():
        yield b"half"
        raise OSError("disk gone")
    with pytest.raises(OSError, match="disk gone"):
        storage.write_atomic(str(tmp_path), "a/failed.txt", failing())
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert storage.write_atomic(str(tmp_path), "a/ok.txt", [b"o", b"k"]).size == 2
    assert storage.list_tree(str(tmp_path), [".tmp"]) == {"a/ok.txt": 2}


def test_ranges_of_a_large_object_are_read_exactly(s3):
    client, beam_args = s3
    storage.configure(beam_args)
    data = bytes(range(256)) * 8192  # 2 MiB
    client.put_object(Bucket=BUCKET, Key="ranges/shard", Body=data)
    for offset, length in ((0, 10), (123_457, 110_000), (len(data) - 5, 5)):
        assert storage.read_bytes(f"s3://{BUCKET}/ranges/shard", offset, length) == data[offset:offset + length]
    with pytest.raises(OSError, match="expected 10 bytes"):
        storage.read_bytes(f"s3://{BUCKET}/ranges/shard", len(data) - 5, 10)


def test_tfds_and_tar_inputs_on_s3_are_listed_as_on_the_local_disk(s3, sample_tfds, sample_tar):
    client, beam_args = s3
    storage.configure(beam_args)
    for path in sorted(p for p in sample_tfds.rglob("*") if p.is_file()):
        client.upload_file(str(path), BUCKET, f"tfds-input/{path.relative_to(sample_tfds).as_posix()}")
    client.upload_file(str(sample_tar), BUCKET, "tar-input/val.tar")
    pairs = ((str(sample_tfds), f"s3://{BUCKET}/tfds-input"), (str(sample_tar), f"s3://{BUCKET}/tar-input/val.tar"))
    for local, remote in pairs:
        here, there = index_source(local), index_source(remote)
        assert there.kind == here.kind and there.failures == here.failures
        assert [(e.key, e.source) for e in there.entries] == [(e.key, e.source) for e in here.entries]
        assert [read_entry(e) for e in there.entries] == [read_entry(e) for e in here.entries]


# --- the commands -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def input_tar(tmp_path_factory, sample_folder) -> Path:
    """The sample as a flat tar laid out like ILSVRC2012_img_val.tar (another name: that one must be the official archive)."""
    path = tmp_path_factory.mktemp("s3_input") / "sample_img_val.tar"
    with tarfile.open(path, "w") as archive:
        for image in sorted(sample_folder.glob("*/*.JPEG")):
            archive.add(image, arcname=image.name)
    return path


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory) -> Path:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    spec = importlib.util.spec_from_file_location(
        "evaluate_release_helpers", Path(__file__).with_name("test_evaluate_release.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    path = tmp_path_factory.mktemp("model") / "tiny.onnx"
    helpers.write_onnx_model(path)
    return path


@pytest.fixture(scope="module")
def local_release(tmp_path_factory, input_tar, onnx_model):
    """The same commands on the local disk: release (with packages/) and its evaluation."""
    root = tmp_path_factory.mktemp("local")
    release = root / "release"
    assert cli(["build-c", "--input", str(input_tar), "--output", str(release), "--corruptions", CORRUPTIONS,
                "--severities", SEVERITIES, "--workers", "2"]) == 0
    built = files(release)
    package_release(str(release))
    evaluation = evaluate_release(str(release), Model(str(onnx_model), batch_size=4), run=RunOptions(workers=1))
    return built, files(release / "packages"), files(Path(evaluation))


def test_build_verify_package_evaluate_on_s3_match_the_local_commands(s3, input_tar, onnx_model, local_release,
                                                                      monkeypatch, capsys):
    client, beam_args = s3
    built, packages, evaluation = local_release
    client.upload_file(str(input_tar), BUCKET, "input/sample_img_val.tar")
    release = f"s3://{BUCKET}/release"

    assert cli(["build-c", "--input", f"s3://{BUCKET}/input/sample_img_val.tar", "--output", release,
                "--corruptions", CORRUPTIONS, "--severities", SEVERITIES, "--workers", "2", "--", *beam_args]) == 0
    remote = objects(client, "release")
    assert_same_tree(remote, built)  # no scratch object left either
    assert not [name for name in remote if name.split("/")[0] in SCRATCH_DIRS]

    # verify and package with the credentials in the environment, only the endpoint as an option
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    endpoint = [beam_args[0]]
    assert cli(["verify", release, "--", *endpoint]) == 0
    assert cli(["package", release, "--", *endpoint]) == 0
    assert_same_tree(objects(client, "release/packages"), packages)
    assert cli(["verify", release, "--", *endpoint]) == 0
    assert "OK:" in capsys.readouterr().out

    changed = sorted(n for n in built if n.endswith(".JPEG"))[3]
    client.put_object(Bucket=BUCKET, Key=f"release/{changed}", Body=built[changed][:-1] + b"\0")
    client.put_object(Bucket=BUCKET, Key="release/stray.txt", Body=b"x")
    storage.configure(endpoint)
    report = verify_release(release)
    assert (report.changed, report.extra, report.missing) == ([changed], ["stray.txt"], [])
    client.put_object(Bucket=BUCKET, Key=f"release/{changed}", Body=built[changed])
    client.delete_object(Bucket=BUCKET, Key="release/stray.txt")

    assert cli(["evaluate", "--release", release, "--model", str(onnx_model), "--batch-size", "4",
                "--workers", "1", "--", *beam_args]) == 0
    assert_same_tree(objects(client, "release-evaluations/tiny"), evaluation)
    # the TFDS shards hold the same JPEGs under the same keys: the same evaluation, read without TensorFlow
    assert cli(["evaluate", "--release", release, "--model", str(onnx_model), "--source", "tfds", "--output",
                f"s3://{BUCKET}/evaluation-tfds", "--batch-size", "4", "--workers", "1", "--", *beam_args]) == 0
    assert_same_tree(objects(client, "evaluation-tfds"), evaluation)
    assert CHECKSUMS in remote and os.environ["AWS_ACCESS_KEY_ID"] == "testing"


def test_portable_runner_workers_write_the_same_release_to_s3(s3, input_tar, local_release, worker_pool):
    """A Flink/Spark-style worker pool gets no pipeline options (its SDK workers start without the
    provisioning service): its workers reach the store through the environment, as on a cluster."""
    client, beam_args = s3
    built, _, _ = local_release
    endpoint = beam_args[0].split("=", 1)[1]
    port, log = worker_pool({**KEYS, "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": "us-east-1"})
    client.upload_file(str(input_tar), BUCKET, "input-portable/sample_img_val.tar")
    assert cli(["build-c", "--input", f"s3://{BUCKET}/input-portable/sample_img_val.tar",
                "--output", f"s3://{BUCKET}/portable", "--corruptions", CORRUPTIONS, "--severities", SEVERITIES,
                "--", *beam_args, "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{port}"]) == 0
    assert "Starting worker" in log.read_text()
    assert_same_tree(objects(client, "portable"), built)


def upload_tree(client, root: Path, prefix: str) -> None:
    for name, data in files(root).items():
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/{name}", Body=data)


@pytest.mark.parametrize("edition, corruptions, severities, side, classes", [
    ("cifar", "glass_blur", "1,3", 32, 10),             # CIFAR-10-C: .npy blocks, labels.npy, clean.npy
    ("tinyimagenet", "contrast", "1", 64, 200),         # Tiny-ImageNet-C: a JPEG tree of 200 classes
])
def test_an_edition_release_on_s3_evaluates_as_the_local_one(s3, tmp_path, edition, corruptions, severities,
                                                             side, classes):
    """An edition release copied to the S3 server: evaluate reads it there (tree and TFDS records)
    and writes there the very files of the local evaluation."""
    pytest.importorskip("onnxruntime")
    spec = importlib.util.spec_from_file_location(
        "evaluate_editions_helpers", Path(__file__).with_name("test_evaluate_editions.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    client, beam_args = s3
    release, model = tmp_path / "release", tmp_path / f"{edition}.onnx"
    assert cli(["build-c", "--edition", edition, "--output", str(release), "--corruptions", corruptions,
                "--severities", severities, "--workers", "1"]) == 0
    helpers.write_onnx_model(model, side, classes, 4)
    upload_tree(client, release, f"{edition}-release")
    for source in ("tree", "tfds"):
        local = tmp_path / f"eval-{source}"
        assert cli(["evaluate", "--release", str(release), "--model", str(model), "--source", source,
                    "--output", str(local), "--workers", "1"]) == 0
        remote = f"{edition}-evaluation-{source}"
        assert cli(["evaluate", "--release", f"s3://{BUCKET}/{edition}-release", "--model", str(model),
                    "--source", source, "--output", f"s3://{BUCKET}/{remote}", "--workers", "1",
                    "--", *beam_args]) == 0
        assert_same_tree(objects(client, remote), files(local))
        assert any(name.startswith("predictions/") for name in files(local))


# --- the lock of an output folder on the store ---------------------------------------------------

def test_a_second_build_into_the_same_s3_output_is_refused_by_the_lock_object(s3, input_tar, monkeypatch, capsys):
    """The lock is an object written with If-None-Match: a second holder is refused in one line,
    the lock of a build that stopped rewriting it is taken over, a release deletes it."""
    from pipelines.release import output_folder
    from pipelines.release.output_folder import FolderBusy, FolderLock

    client, beam_args = s3
    storage.configure(beam_args)
    folder = f"s3://{BUCKET}/locked"
    with FolderLock(folder, "build-c") as first:
        assert first.note is None and first.took_over is None
        held = client.get_object(Bucket=BUCKET, Key="locked/.lock")["Body"].read()
        assert set(json.loads(held)) == {"host", "pid", "command", "started", "beat"}
        with pytest.raises(FolderBusy, match=r"locked is in use by another build: pid \d+ on host .*\(build-c\)"):
            FolderLock(folder, "build-c").acquire()
        client.upload_file(str(input_tar), BUCKET, "input-locked/sample_img_val.tar")
        assert cli(["build-c", "--input", f"s3://{BUCKET}/input-locked/sample_img_val.tar", "--output", folder,
                    "--corruptions", CORRUPTIONS, "--severities", SEVERITIES, "--workers", "1",
                    "--", *beam_args]) == 2
        error = capsys.readouterr().err.strip()
        assert error.startswith(f"error: {folder} is in use by another build: pid ") and "\n" not in error
    assert "Contents" not in client.list_objects_v2(Bucket=BUCKET, Prefix="locked/")  # released: deleted

    stale = {"host": "gone", "pid": 1, "command": "build-c", "started": "2026-01-01T00:00:00+00:00", "beat": 0}
    client.put_object(Bucket=BUCKET, Key="locked/.lock", Body=json.dumps(stale).encode())
    with FolderLock(folder) as lock:
        assert lock.took_over == stale
    monkeypatch.setattr(output_folder, "LOCK_BEAT_SECONDS", 0.05)
    with FolderLock(folder) as beating:
        first_beat = json.loads(client.get_object(Bucket=BUCKET, Key="locked/.lock")["Body"].read())["beat"]
        deadline = time.monotonic() + 20
        while json.loads(client.get_object(Bucket=BUCKET, Key="locked/.lock")["Body"].read())["beat"] == first_beat:
            assert time.monotonic() < deadline, "the holder never rewrote its lock object"
            time.sleep(0.05)
        assert beating.note is None


def test_a_folder_on_a_store_without_conditional_writes_is_not_locked_and_says_so(tmp_path):
    from pipelines.release.output_folder import FolderLock

    with FolderLock("gs://bucket/release") as lock:
        assert lock.note == ("gs://bucket/release is not locked: only local folders and s3:// stores take a lock; "
                             "run one build per output folder")
