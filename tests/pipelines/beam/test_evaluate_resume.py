"""An interrupted ``evaluate`` reruns only what is missing, to the same bytes; progress line; another
evaluation's leftovers refused. The bundled sample built with two corruptions plus a small ImageNet-P
tree of synthetic videos, EfficientNet-Lite0 from ``fetch-model``; the evaluation that gets killed
runs the CLI in a child process (its own session, so that the driver and its workers die together),
committing a part per prediction so that the kill always falls after some committed work."""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.beam  # runs Beam pipelines: `pytest -m "not beam"` leaves it out

pytest.importorskip("onnxruntime")

from pipelines.beam.prediction_parts import (C_TABLE, P_TABLE, SCRATCH_DIR, complete_videos,  # noqa: E402
                                             open_scratch, scratch_dir, write_config_file, write_set_file)
from pipelines.formats.parts import LEDGER_DIR, PartWriter, ledger_runs, read_ledger  # noqa: E402
from pipelines.formats.predictions import read_set_predictions  # noqa: E402
from pipelines.release.output_folder import OutputFolderError  # noqa: E402
from schemas.wnids import imagenet_wnids  # noqa: E402
from scripts.cli import main as cli  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
C_IMAGES = 8 * (1 + 2)  # the sample's 8 images: clean, and contrast at severities 1 and 2
P_FRAMES = 2 * 2 * 6  # 2 sets x 2 videos x 6 frames
DRIVER = """
import dataclasses, sys
import pipelines.beam.evaluate as evaluate
evaluate_release = evaluate.evaluate_release
evaluate.evaluate_release = lambda *args, run, **kwargs: evaluate_release(
    *args, run=dataclasses.replace(run, part_records=1, part_seconds=0, progress_interval=0.2), **kwargs)
from scripts.cli import main
sys.exit(main(sys.argv[1:]))
"""


def tree(folder: Path) -> dict:
    """relative path -> SHA-256 of every file below ``folder`` but the atomic writes' temp folder."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not str(p.relative_to(folder)).startswith(".tmp")}


def write_videos(root: Path):
    import imageio_ffmpeg

    for s_index, name in enumerate(("rotate", "gaussian_noise")):
        for w_index, wnid in enumerate(imagenet_wnids()[:2]):
            folder = root / "ImageNet-P" / name / wnid
            folder.mkdir(parents=True)
            writer = imageio_ffmpeg.write_frames(str(folder / "vid.mp4"), (224, 224), fps=1,
                                                 codec="libx264", output_params=["-crf", "20"])
            writer.send(None)
            rng = np.random.default_rng(10 * s_index + w_index)
            for _ in range(6):
                writer.send(rng.integers(0, 256, (224, 224, 3)).astype(np.uint8))
            writer.close()


def evaluate_args(release, model, out, workers=1):
    return ["evaluate", "--release", str(release), "--model", str(model), "--output", str(out), "--workers",
            str(workers), "--batch-size", "4"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, lite0_onnx):
    root = tmp_path_factory.mktemp("resume_eval")
    release, out = root / "sample", root / "whole"
    assert cli(["build-c", "--output", str(release), "--workers", "2", "--corruptions", "contrast",
                "--severities", "1,2"]) == 0
    write_videos(release)
    assert cli(evaluate_args(release, lite0_onnx, out)) == 0
    return release, out, tree(out)


def start_driver(args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, *args], cwd=REPO, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_after_parts(driver: subprocess.Popen, out: Path, count: int, timeout: float = 300) -> str:
    """SIGKILL the driver's process group once ``count`` parts are committed; return its stderr."""
    ledger = out / SCRATCH_DIR / LEDGER_DIR
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ledger.is_dir() and len(os.listdir(ledger)) >= count:
            os.killpg(driver.pid, signal.SIGKILL)
            return driver.communicate(timeout=60)[1]
        assert driver.poll() is None, driver.communicate()
        time.sleep(0.02)
    raise AssertionError("no parts were committed")


def test_a_killed_evaluation_reruns_only_what_is_missing_to_the_same_bytes(uninterrupted, lite0_onnx, tmp_path,
                                                                            capsys):
    release, whole, expected = uninterrupted
    assert "metrics.json" in expected and "imagenet-p-predictions.npz" in expected
    assert "predictions/imagenet-c/contrast_2.jsonl" in expected and "predictions/imagenet-p/rotate.jsonl" in expected
    out = tmp_path / "eval"
    err = kill_after_parts(start_driver(evaluate_args(release, lite0_onnx, out, workers=2)), out, 12)
    # before the first video is decoded the line counts what is listed; after it, a share of the total
    assert re.search(r"^progress: \d+(/~?\d+ .*predicted \(\d+\.\d%\)| .*predicted \(\d+ images and \d+ videos "
                     r"to predict\)), \d+\.\d/s, ", err, re.M), err
    assert not (out / "metrics.json").exists()
    committed = sum(entry.records for entry in read_ledger(str(out / SCRATCH_DIR)))
    assert 12 <= committed < C_IMAGES + P_FRAMES

    # another model into the same folder: one line, exit 2, the interrupted run's parts untouched
    import onnx

    other = tmp_path / "other.onnx"  # the same graph in another file: other bytes, another model
    model = onnx.load(str(lite0_onnx))
    model.doc_string = "another model"
    onnx.save(model, str(other))
    before = tree(out / SCRATCH_DIR)
    capsys.readouterr()
    assert cli(evaluate_args(release, other, out)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"imagenet-cp evaluate: {out} holds an interrupted evaluation "
                                                   "of something else (model file: sha256 "), lines
    assert lines[0].endswith("use another --output, or --force to discard it")
    assert tree(out / SCRATCH_DIR) == before

    # the command again (one worker: the bytes do not depend on it) resumes, predicts only the rest
    # and writes the uninterrupted run's bytes
    assert cli(evaluate_args(release, lite0_onnx, out)) == 0
    printed = capsys.readouterr().err
    assert re.search(r"^resuming: \d+ predictions in \d+ parts of an interrupted run are kept$", printed, re.M)
    predicted = int(re.search(r"^predicted (\d+) model inputs in ", printed, re.M).group(1))
    # only what was missing: a video the kill cut (one per worker at most) is predicted again whole
    assert 0 < predicted <= C_IMAGES + P_FRAMES - committed + 2 * 6
    assert re.search(r"; (\d+ images( and \d+ videos)?|\d+ videos) predicted before$", printed, re.M), printed
    assert tree(out) == expected
    assert not (out / SCRATCH_DIR).exists() and not (out / ".lock").exists()


def test_a_scratch_folder_of_another_evaluation_is_refused_or_forced(tmp_path):
    identity = {"model_sha256": "a" * 64, "release_json_sha256": "b" * 64, "release": None, "source": "auto",
                "framework": "onnx", "configs": ["fog_1"], "sets": []}
    out = str(tmp_path / "eval")
    assert open_scratch(out, identity) == []
    writer = PartWriter(scratch_dir(out))
    writer.add_line(C_TABLE + "fog_1", "n01440764/a.JPEG", '{"key":"n01440764/a.JPEG","label":0,"top5":[0]}\n')
    writer.commit()
    assert len(open_scratch(out, dict(identity))) == 1  # the same evaluation: its part is kept
    other = dict(identity, model_sha256="c" * 64, source="tfds")
    with pytest.raises(OutputFolderError, match=r"model file: sha256 aaaaaaaaaaaa there, sha256 cccccccccccc here; "
                                                r"--source: auto there, tfds here\); use another --output"):
        open_scratch(out, other)
    assert len(read_ledger(scratch_dir(out))) == 1
    assert open_scratch(out, other, force=True) == []
    assert json.loads((tmp_path / "eval" / SCRATCH_DIR / "evaluation.json").read_text()) == other


def _runs(scratch: str, parts) -> dict:
    for records in parts:
        writer = PartWriter(scratch)
        for table, key, line in records:
            writer.add_line(table, key, line)
        writer.commit()
    return dict(ledger_runs(read_ledger(scratch)))


def test_what_two_parts_hold_is_kept_once_whatever_the_parts(tmp_path):
    scratch, out = str(tmp_path / "scratch"), str(tmp_path / "out")

    def line(key, label, top1):
        return json.dumps({"key": key, "label": label, "top5": [top1, 9, 8, 7, 6]}, sort_keys=True,
                          separators=(",", ":")) + "\n"
    a, b, c = (("C/fog_1", k, line(k, 1, t)) for k, t in (("w/a", 1), ("w/b", 2), ("w/c", 1)))
    runs = _runs(scratch, [[b, a], [c, a], [b]])
    assert write_config_file(scratch, out, "fog_1.jsonl", "C/fog_1", runs["C/fog_1"]) == pytest.approx(1 / 3)
    assert (tmp_path / "out" / "fog_1.jsonl").read_text() == a[2] + b[2] + c[2]

    def frame(key, index, total, top1):
        return P_TABLE + "rotate", key, json.dumps([index, total, 3, [top1, 0, 1, 2, 4]], separators=(",", ":"))
    frames = [frame("w/v1", i, 3, i) for i in range(3)] + [frame("w/v2", i, 3, 5) for i in range(3)]
    runs = _runs(str(tmp_path / "p"), [frames[:2] + frames[3:], frames[1:3], [frames[0]]])
    assert complete_videos(str(tmp_path / "p"), "rotate", runs["P/rotate"]) == {"w/v1", "w/v2"}
    assert write_set_file(str(tmp_path / "p"), out, "rotate.jsonl", "P/rotate", runs["P/rotate"]) == 2
    array = read_set_predictions(str(tmp_path / "out" / "rotate.jsonl"))
    assert array.shape == (2, 3, 5) and array[0, :, 0].tolist() == [0, 1, 2] and array[1, :, 0].tolist() == [5] * 3
    rows = [json.loads(text) for text in (tmp_path / "out" / "rotate.jsonl").read_text().splitlines()]
    assert [r["key"] for r in rows] == ["w/v1", "w/v2"] and rows[0]["top5"][2] == [2, 0, 1, 2, 4]
    partial = _runs(str(tmp_path / "q"), [frames[:2]])
    assert complete_videos(str(tmp_path / "q"), "rotate", partial["P/rotate"]) == set()


def test_a_prediction_file_of_fewer_images_or_videos_than_listed_is_refused(tmp_path):
    """A run that lost a listed image or video (a runner that dropped an element) writes no file:
    the rerun resumes and predicts what is missing."""
    scratch, out = str(tmp_path / "scratch"), tmp_path / "out"
    line = json.dumps({"key": "w/a", "label": 1, "top5": [1, 9, 8, 7, 6]}, separators=(",", ":")) + "\n"
    runs = _runs(scratch, [[("C/fog_1", "w/a", line)]])["C/fog_1"]
    with pytest.raises(ValueError, match=r"fog_1.jsonl: 1 images predicted of the 2 listed; the evaluation lost work"):
        write_config_file(scratch, str(out), "fog_1.jsonl", "C/fog_1", runs, listed=2)
    assert not (out / "fog_1.jsonl").exists()
    assert write_config_file(scratch, str(out), "fog_1.jsonl", "C/fog_1", runs, listed=1) == 0.0
    frames = [(P_TABLE + "rotate", "w/v1", json.dumps([i, 2, 3, [0, 1, 2, 3, 4]])) for i in range(2)]
    runs = _runs(str(tmp_path / "p"), [frames])["P/rotate"]
    with pytest.raises(ValueError, match=r"rotate.jsonl: 1 videos predicted of the 3 listed"):
        write_set_file(str(tmp_path / "p"), str(out), "rotate.jsonl", "P/rotate", runs, listed=3)
    assert not (out / "rotate.jsonl").exists()


def test_an_evaluation_that_lost_a_whole_config_writes_no_metrics(tmp_path):
    from pipelines.beam.evaluate import _write_unless_refused

    listed = {"C/fog_1": 2, "C/fog_2": 0, P_TABLE + "rotate": 3}
    with pytest.raises(ValueError, match=r"no prediction of P/rotate was committed, of the 3 listed"):
        _write_unless_refused(str(tmp_path), 0, listed, [], config_errors=[("fog_1", 0.5)])
    assert os.listdir(tmp_path) == []


def test_a_set_file_of_videos_of_different_lengths_is_refused_unwritten(tmp_path):
    frames = [(P_TABLE + "rotate", key, json.dumps([i, total, 3, [0, 1, 2, 3, 4]]))
              for key, total in (("w/v1", 2), ("w/v2", 3)) for i in range(total)]
    runs = _runs(str(tmp_path / "p"), [frames])["P/rotate"]
    with pytest.raises(ValueError, match=r"rotate.jsonl: videos differ in frame count \[2, 3\]"):
        write_set_file(str(tmp_path / "p"), str(tmp_path / "out"), "rotate.jsonl", "P/rotate", runs)
    assert not (tmp_path / "out" / "rotate.jsonl").exists()
