"""Interrupted builds resume to the same bytes; one build per folder; only folders the factory made.

Builds that get interrupted run in a child process (``python -c``, its own session so that the
driver and its workers can be killed together) on the bundled sample, committing a part per
output so that an interruption always falls after some committed work.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.beam.build import SourceSelection
from schemas.configs import ImageNetCConfig
from pipelines.release.output_folder import FolderBusy, FolderLock, OutputFolderError
from pipelines.release.package import package_release
from pipelines.formats.parts import LEDGER_DIR
from pipelines.beam.shutdown import RESUME_HINT, worker_pids

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

REPO = Path(__file__).resolve().parents[3]
CONFIG = ImageNetCConfig.select(["glass_blur", "zoom_blur"], [3, 5])
DRIVER = """
import sys
from dataclasses import replace
from pipelines.beam.imagenet_c import build_imagenet_c
from schemas.configs import ImageNetCConfig
from scripts.build_options import run_build
import argparse

def build(output, selection, config, run, **options):
    run = replace(run, part_records=1, part_seconds=0, progress_interval=3600)
    return build_imagenet_c(output, selection, config, run, **options)

args = argparse.Namespace(output=sys.argv[1], input=None, image_ids=None, limit=None, workers=2, beam_args=[],
                          examples_per_shard=4, force=False)
sys.exit(run_build(args, build, lambda a: ImageNetCConfig.select(["glass_blur", "zoom_blur"], [3, 5])))
"""


def tree(folder: Path) -> dict:
    """relative path -> SHA-256 of every file below ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def resume(output: Path, fast_build, **options):
    return fast_build(output, config=CONFIG, examples_per_shard=4, part_records=1, part_seconds=0, **options)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, fast_build):
    output = tmp_path_factory.mktemp("uninterrupted") / "release"
    resume(output, fast_build)
    return tree(output)


def start_driver(output: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(output)], cwd=REPO, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_parts(driver: subprocess.Popen, output: Path, count: int = 12, timeout: float = 120) -> list:
    """Wait until ``count`` parts are committed; return the driver's worker processes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ledger = output / LEDGER_DIR
        if ledger.is_dir() and len(os.listdir(ledger)) >= count:
            return worker_pids(driver.pid)
        assert driver.poll() is None, driver.communicate()
        time.sleep(0.02)
    raise AssertionError("no parts were committed")


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("how", ["sigkill", "sigterm", "sigint", "worker"])
def test_an_interrupted_build_resumes_to_the_same_bytes(how, tmp_path, fast_build, uninterrupted, capsys):
    output = tmp_path / "release"
    driver = start_driver(output)
    workers = wait_for_parts(driver, output)
    assert workers
    if how == "sigkill":  # the driver and its workers, as a crash or `kill -9` of the process group would
        os.killpg(driver.pid, signal.SIGKILL)
    elif how == "worker":
        os.kill(max(workers), signal.SIGKILL)
    else:
        driver.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    lines = [line for line in err.splitlines() if not line.startswith(("WARNING", "INFO"))]
    expected = {"sigkill": -signal.SIGKILL, "sigterm": 143, "sigint": 130, "worker": 3}[how]
    assert driver.returncode == expected, err
    if how in ("sigterm", "sigint"):
        assert lines == [f"interrupted; {RESUME_HINT}"]
        assert all(gone(pid) for pid in workers)  # stopped, not orphaned
    if how == "worker":
        assert lines[-1] == f"error: a worker process died (killed, or out of memory); {RESUME_HINT}"
        assert "Traceback" not in err
    if how == "sigkill":
        time.sleep(0.5)
    assert not (output / "release.json").exists()
    capsys.readouterr()
    resume(output, fast_build, stream=sys.stderr)
    resumed = capsys.readouterr().err
    assert "resuming: " in resumed and "resuming: 0 of" not in resumed
    assert tree(output) == uninterrupted


def test_short_tree_files_of_a_killed_build_are_written_again_on_resume(tmp_path, fast_build, uninterrupted):
    """Tree files are created in place (``storage.write_new``), so a killed worker can leave one short
    under its name; no committed part lists it, so the resumed build replaces it."""
    output = tmp_path / "release"
    driver = start_driver(output)
    wait_for_parts(driver, output)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.communicate(timeout=60)
    time.sleep(0.5)
    missing = [path for path in uninterrupted if path.startswith("ImageNet-C/") and not (output / path).exists()]
    assert missing
    for path in missing:  # what writes cut off by the kill would have left
        (output / path).parent.mkdir(parents=True, exist_ok=True)
        (output / path).write_bytes(b"\xff\xd8\xff")
    resume(output, fast_build)
    assert tree(output) == uninterrupted


def test_a_finished_release_is_not_built_again(tmp_path, fast_build):
    output = tmp_path / "release"
    fast_build(output)
    before = {p: p.stat().st_mtime_ns for p in output.rglob("*")}
    result = fast_build(output)
    assert result.counters == {"images_read": 0, "outputs_written": 0, "failures": 0}
    assert {p: p.stat().st_mtime_ns for p in output.rglob("*")} == before


def test_a_second_build_into_a_busy_folder_refuses_at_once(tmp_path, fast_build):
    output = tmp_path / "release"
    with FolderLock(str(output), "build-c"):
        start = time.monotonic()
        with pytest.raises(FolderBusy, match=rf"in use by another build: pid {os.getpid()} on host .+, started "):
            fast_build(output)
        with pytest.raises(FolderBusy, match="in use by another build"):
            package_release(str(output))
        assert time.monotonic() - start < 5
    assert os.listdir(output) == []  # the holder's folder is untouched and the lock is gone with it


def test_a_stale_lock_is_taken_over(tmp_path, fast_build, capsys):
    output = tmp_path / "release"
    output.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (output / ".lock").write_text(json.dumps({"host": os.uname().nodename, "pid": int(dead.stdout), "started": "x"}))
    fast_build(output, stream=sys.stderr)
    assert "took over the lock" in capsys.readouterr().err
    assert (output / "release.json").is_file() and not (output / ".lock").exists()


def test_a_folder_that_is_not_a_release_is_refused_and_left_alone(tmp_path, fast_build):
    output = tmp_path / "mine"
    (output / ".tmp").mkdir(parents=True)
    (output / ".tmp" / "notes").write_text("mine")
    (output / "photo.JPEG").write_bytes(b"x")
    before = tree(output)
    with pytest.raises(OutputFolderError, match="not empty and holds no imagenet-cp release"):
        fast_build(output)
    assert tree(output) == before and not (output / ".lock").exists()


def test_an_input_that_holds_the_output_is_refused(sample_folder, tmp_path, fast_build):
    with pytest.raises(OutputFolderError, match="is the input"):
        fast_build(sample_folder, SourceSelection(str(sample_folder)))
    with pytest.raises(OutputFolderError, match="inside it"):
        fast_build(sample_folder / "out", SourceSelection(str(sample_folder)))
    assert not (sample_folder / "out").exists()


def test_another_input_is_refused_unless_forced(sample_folder, tmp_path, fast_build):
    source = tmp_path / "val"
    shutil.copytree(sample_folder, source)
    output = tmp_path / "release"
    fast_build(output, SourceSelection(str(source)))
    (output / "notes.txt").write_text("the user's")
    next(source.glob("*/*.JPEG")).unlink()
    with pytest.raises(OutputFolderError, match="another input"):
        fast_build(output, SourceSelection(str(source)))
    result = fast_build(output, SourceSelection(str(source)), force=True)
    assert result.release.counts.images == 7
    assert (output / "notes.txt").read_text() == "the user's"


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_full_disk_stops_with_one_line_and_resumes(tmp_path, fast_build, uninterrupted, capsys):
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "1200k"):  # the sample (0.8 MB) fits, the release does not
        pytest.skip("needs root and tmpfs to make a small disk")
    try:
        output = disk / "release"
        driver = start_driver(output)
        _, err = driver.communicate(timeout=120)
        assert driver.returncode == 3, err
        last = err.splitlines()[-1]
        assert last.startswith(f"error: disk full: {output} has ") and last.endswith(RESUME_HINT)
        assert subprocess.run(["mount", "-o", "remount,size=50m", str(disk)]).returncode == 0
        resume(output, fast_build)
        assert tree(output) == uninterrupted
    finally:
        subprocess.run(["umount", "-l", str(disk)])


CIFAR_DRIVER = """
import argparse
import sys
from dataclasses import replace
from pipelines.beam.imagenet_c import build_imagenet_c
from pipelines.beam.imagenet_p import build_imagenet_p
from schemas.configs import ImageNetCConfig, ImageNetPConfig
from scripts.build_options import run_build

benchmark = sys.argv[2]  # the configs of cifar_config

def build(output, selection, config, run, **options):
    run = replace(run, part_records=1, part_seconds=0, progress_interval=3600)
    return (build_imagenet_c if benchmark == "c" else build_imagenet_p)(output, selection, config, run, **options)

def config(args):
    if benchmark == "c":
        return ImageNetCConfig.select(["glass_blur", "zoom_blur"], [3, 5], edition="cifar")
    return ImageNetPConfig.select(["rotate", "gaussian_noise"], [1], edition="cifar")

args = argparse.Namespace(output=sys.argv[1], input=None, image_ids=None, limit=None, workers=2, beam_args=[],
                          examples_per_shard=4, force=False)
sys.exit(run_build(args, build, config))
"""


def cifar_config(benchmark: str):
    """A CIFAR-10-C config (two corruptions at two severities, and the clean rows: five arrays' rows per
    image) or a CIFAR-10-P one (two datasets)."""
    from schemas.configs import ImageNetPConfig

    if benchmark == "c":
        return ImageNetCConfig.select(["glass_blur", "zoom_blur"], [3, 5], edition="cifar")
    return ImageNetPConfig.select(["rotate", "gaussian_noise"], [1], edition="cifar")


def cifar_build(benchmark: str):
    from pipelines.beam.imagenet_c import build_imagenet_c
    from pipelines.beam.imagenet_p import build_imagenet_p

    return build_imagenet_c if benchmark == "c" else build_imagenet_p


def committed_records(output: Path) -> tuple[int, int]:
    """Outputs in the committed parts (a part of the lists holds no output bytes), and all their records."""
    ledger = output / LEDGER_DIR
    entries = [json.loads(p.read_text()) for p in ledger.glob("*.json")] if ledger.is_dir() else []
    return sum(entry["records"] for entry in entries if entry["bytes"]), sum(entry["records"] for entry in entries)


def kill_point_reached(kill: str, output: Path, outputs: int, images: int) -> bool:
    """``half``: more than half the outputs and more than ``outputs - images`` committed (at least one
    image has every output committed: each image lacking one would leave ``images`` outputs out);
    ``all``: every output and source record committed (the rerun builds no image)."""
    committed, records = committed_records(output)
    if kill == "all":
        return records >= outputs + images
    return committed > max(outputs // 2, outputs - images)


@pytest.mark.parametrize("benchmark, kill", [("c", "half"), ("p", "half"), ("p", "all")])
def test_a_killed_cifar_build_resumes_to_the_same_bytes_keeping_its_committed_rows(benchmark, kill, tmp_path, capsys):
    """The stacked .npy arrays are assembled from the committed parts: a CIFAR build killed (SIGKILL) once
    an image's outputs are all committed resumes, builds only the images its parts miss, and writes the same
    bytes. Killed once every record is committed, the rerun builds nothing: its workers report no
    environment, and release.json still lists the encoder versions the killed run's workers reported."""
    from pipelines.beam.runner import RunOptions

    config, build = cifar_config(benchmark), cifar_build(benchmark)
    reference = tmp_path / "uninterrupted"
    build(str(reference), SourceSelection(), config, RunOptions(workers=2, progress_interval=3600),
          examples_per_shard=4)
    counts = json.loads((reference / "release.json").read_text())["counts"]
    outputs, images = counts["outputs"], counts["images"]

    output = tmp_path / "release"
    driver = subprocess.Popen([sys.executable, "-c", CIFAR_DRIVER, str(output), benchmark], cwd=REPO,
                              start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not kill_point_reached(kill, output, outputs, images):  # the rerun must keep a whole image
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "no outputs were committed"
        time.sleep(0.02)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.communicate(timeout=60)
    assert driver.returncode == -signal.SIGKILL
    time.sleep(0.5)
    assert not (output / "release.json").exists()

    capsys.readouterr()
    build(str(output), SourceSelection(), config, RunOptions(workers=2, progress_interval=3600, stream=sys.stderr),
          examples_per_shard=4)
    resumed = capsys.readouterr().err
    assert "resuming: " in resumed and "resuming: 0 of" not in resumed  # the committed rows are kept
    if kill == "all":
        assert f"resuming: {images} of {images} images are built already" in resumed
    assert tree(output) == tree(reference)


def environment_check():
    """``--formats envcheck``: writes no file; fails an output that reaches the writer before a
    worker environment is on disk. Made in a function: Beam's workers get the class itself, pickled by value."""
    from pipelines.beam.write_release import read_environments
    from pipelines.formats.release_sink import ReleaseSink

    class EnvironmentCheck(ReleaseSink):
        """Checks, per output, that the environment of the worker that made it is written down."""

        name = "envcheck"
        help = "no file: checks that each output's worker environment is on disk before the output"

        def write_output(self, release, record):
            if not read_environments(release.output_dir):
                raise RuntimeError(f"{record.key} reached the writer before its worker's environment was written")
            return None

    return EnvironmentCheck


def test_a_worker_environment_is_written_before_an_output_made_in_it(tmp_path, fast_build, monkeypatch):
    """A part that commits an output is preceded by the file of its worker's environment, so that a
    build interrupted at any point keeps the environments of the parts it keeps (a rerun that builds
    no image reports none)."""
    from pipelines.formats.release_formats import FORMATS
    from pipelines.release.versions import library_versions

    check = environment_check()
    monkeypatch.setitem(FORMATS, check.name, check)
    output = tmp_path / "release"
    fast_build(output, formats=["envcheck", "tree"], workers=1)  # fails where an output comes first
    assert json.loads((output / "release.json").read_text())["library_versions"] == library_versions()
