"""ImageNet-O end to end with the real EfficientNet-Lite0: filter-o and package-o on a synthetic
candidate pool, an ImageNet-val-style in-distribution folder, evaluate through the CLI, and
AUPR / AUROC / FPR95 recomputed by hand from the written logits and predictions."""
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import skimage.data
from PIL import Image

from metrics.detection import fpr_at_recall_closest
from pipelines.evaluation.release_inputs import in_distribution
from schemas.release import C_TREE
from schemas.wnids import imagenet_wnids
from scripts.cli import main

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

NOT_IN1K = "n00021939"   # a source synset outside ImageNet-1k (an O candidate's folder)
TENCH = "n01440764"      # an ImageNet-1k class outside ImageNet-O's 200
O_WNIDS = resources.files("schemas").joinpath("data/imagenet_o_wnids.txt").read_text().split()


def photographs():
    return {"chelsea": skimage.data.chelsea(), "coffee": skimage.data.coffee(), "astronaut": skimage.data.astronaut(),
            "rocket": skimage.data.rocket(), "camera": np.stack([skimage.data.camera()] * 3, axis=-1)}


def save(path: Path, array, size=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(array)
    (image.resize(size) if size else image).save(path, quality=92)


@pytest.fixture(scope="module")
def imagenet_o(lite0_onnx, tmp_path_factory):
    """A packaged ImageNet-O of every kept candidate of a four-photograph pool."""
    root = tmp_path_factory.mktemp("o")
    for name in ("chelsea", "coffee", "astronaut", "rocket"):
        save(root / "pool" / NOT_IN1K / f"{name}.jpg", photographs()[name])
    assert main(["filter-o", "--candidates", str(root / "pool"), "--model", str(lite0_onnx), "--output",
                 str(root / "filtered"), "--cap", "10", "--workers", "1"]) == 0
    rows = [json.loads(line) for line in (root / "filtered" / "decisions.jsonl").read_text().splitlines()]
    (root / "accepted.txt").write_text("".join(r["key"] + "\n" for r in rows if r["decision"] == "kept"))
    assert main(["package-o", "--filtered", str(root / "filtered"), "--accepted", str(root / "accepted.txt"),
                 "--output", str(root / "package")]) == 0
    return root / "package"


@pytest.fixture(scope="module")
def val_folder(tmp_path_factory):
    """Val-style ``<wnid>/<file>``: five images in three O classes, one tench (outside them), a README."""
    root = tmp_path_factory.mktemp("val") / "val"
    pictures = photographs()
    layout = [(O_WNIDS[0], "chelsea", (500, 375)), (O_WNIDS[0], "rocket", (300, 400)),
              (O_WNIDS[1], "coffee", (400, 300)), (O_WNIDS[2], "astronaut", (320, 320)),
              (O_WNIDS[2], "camera", (512, 512)), (TENCH, "chelsea", (256, 256))]
    for number, (wnid, name, size) in enumerate(layout, start=1):
        save(root / wnid / f"ILSVRC2012_val_{number:08d}.JPEG", pictures[name], size)
    (root / "README.txt").write_text("not an image\n")
    return root


def lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_imagenet_o_scored_against_val_images_of_its_classes(imagenet_o, val_folder, lite0_onnx, tmp_path, capsys):
    out = tmp_path / "evaluation"
    assert main(["evaluate", "--release", str(imagenet_o), "--in-distribution", str(val_folder), "--model",
                 str(lite0_onnx), "--output", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    stored = np.load(out / "logits.npz")
    # the selection, recomputed from the input folders
    packaged = sorted(p.relative_to(imagenet_o / "imagenet-o").as_posix()
                      for p in (imagenet_o / "imagenet-o").rglob("*.jpg"))
    selected = sorted(p.relative_to(val_folder).as_posix() for p in val_folder.glob("*/*.JPEG")
                      if p.parent.name in O_WNIDS)
    assert len(selected) == 5 and stored["keys_val"].tolist() == selected and stored["keys_o"].tolist() == packaged
    # the anomaly score -MSP over the 200 O classes, recomputed from the logits
    columns = [imagenet_wnids().index(w) for w in O_WNIDS]

    def anomaly(logits):
        sub = logits[:, columns].astype(np.float64)
        p = np.exp(sub - sub.max(axis=1, keepdims=True))
        return -(p / p.sum(axis=1, keepdims=True)).max(axis=1)
    s_o, s_in = anomaly(stored["logits_o"]), anomaly(stored["logits_val"])
    rows_o, rows_in = lines(out / "predictions" / "imagenet-o.jsonl"), lines(out / "predictions" / "in-distribution.jsonl")
    assert [r["key"] for r in rows_o] == packaged and [r["key"] for r in rows_in] == selected
    assert np.allclose([r["anomaly_score"] for r in rows_o + rows_in], np.r_[s_o, s_in], atol=1e-12)
    # AUROC: P(anomaly of an O image > that of a val image), ties 1/2; AUPR: mean precision at each positive
    auroc = np.mean([(a > b) + 0.5 * (a == b) for a in s_o for b in s_in])
    scores, positive = np.r_[s_o, s_in], np.r_[np.ones(len(s_o), bool), np.zeros(len(s_in), bool)]
    ranked = positive[np.argsort(-scores)]
    aupr = np.mean((np.cumsum(ranked) / np.arange(1, ranked.size + 1))[ranked])
    needed = int(np.ceil(0.95 * len(s_o)))  # O images flagged at the first threshold reaching 95 % recall
    first_reaching = np.mean(s_in >= np.sort(s_o)[::-1][needed - 1])
    metrics = json.loads((out / "metrics.json").read_text())["imagenet_o"]
    assert metrics["images"] == len(packaged) >= 2 and metrics["in_distribution_images"] == 5
    assert metrics["in_distribution"] == {"kind": "folder", "listed": 6, "unusable": 1, "outside_classes": 1}
    assert metrics["AUROC"] == pytest.approx(100 * auroc, abs=1e-9)
    assert metrics["AUPR"] == pytest.approx(100 * aupr, abs=1e-9)
    assert metrics["FPR95_first_reaching"] == pytest.approx(100 * first_reaching, abs=1e-9)
    assert metrics["FPR95"] == pytest.approx(100 * fpr_at_recall_closest(
        [r["anomaly_score"] for r in rows_o + rows_in], [r in rows_o for r in rows_o + rows_in], 0.95), abs=1e-9)
    chance = 100 * len(packaged) / (len(packaged) + 5)
    assert metrics["chance_AUPR"] == pytest.approx(chance)
    assert f"(chance {chance:.2f} %: {len(packaged)} ImageNet-O images of {len(packaged) + 5})" in printed
    report = (out / "report.md").read_text()
    assert "AUPR" in report and "1 images of other classes left out" in report
    # the numbers follow from the stored logits alone
    assert main(["metrics", "--imagenet-o", str(out / "logits.npz")]) == 0
    assert f"{metrics['AUPR']}" in capsys.readouterr().out


def test_in_distribution_takes_a_release_clean_config(tmp_path):
    clean = tmp_path / "release" / C_TREE / "clean"
    for wnid in (O_WNIDS[3], TENCH):
        save(clean / wnid / "ILSVRC2012_val_00000010.JPEG", photographs()["coffee"], (224, 224))
    found = in_distribution(str(tmp_path / "release"))
    assert found.kind == "clean_config" and found.listed == 2
    assert [(key, label) for key, label, _ in found.items] == [
        (f"{O_WNIDS[3]}/ILSVRC2012_val_00000010.JPEG", imagenet_wnids().index(O_WNIDS[3]))]


def test_imagenet_o_refuses_a_missing_or_empty_in_distribution(imagenet_o, lite0_onnx, tmp_path, capsys):
    assert main(["evaluate", "--release", str(imagenet_o), "--model", str(lite0_onnx), "--output",
                 str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pass --in-distribution" in err
    outside = tmp_path / "val"
    save(outside / TENCH / "ILSVRC2012_val_00000001.JPEG", photographs()["chelsea"], (256, 256))
    assert main(["evaluate", "--release", str(imagenet_o), "--in-distribution", str(outside), "--model",
                 str(lite0_onnx), "--output", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no image of the 200 ImageNet-O classes" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


DRIVER = """
import dataclasses, sys
import pipelines.beam.evaluate as evaluate
evaluate_release = evaluate.evaluate_release
evaluate.evaluate_release = lambda *args, run, **kwargs: evaluate_release(
    *args, run=dataclasses.replace(run, part_records=1, part_seconds=0, progress_interval=0.2), **kwargs)
from scripts.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""The CLI with a part committed per prediction and a progress line every 0.2 s."""
TAR_O_IMAGES = 24


@pytest.fixture(scope="module")
def val_tar(tmp_path_factory):
    """An ``ILSVRC2012_img_val.tar``-style flat tar (labels from the validation ground truth), under
    another name (the official name asks for the official size): :data:`TAR_O_IMAGES` images of
    ImageNet-O classes and two of other classes."""
    import io
    import tarfile

    from schemas.imagenet_val import validation_wnids

    truth = validation_wnids()
    o_numbers = [i + 1 for i, wnid in enumerate(truth) if wnid in set(O_WNIDS)][:TAR_O_IMAGES]
    others = [i + 1 for i, wnid in enumerate(truth) if wnid not in set(O_WNIDS)][:2]
    pictures = list(photographs().values())
    path = tmp_path_factory.mktemp("val_tar") / "val-subset.tar"
    with tarfile.open(path, "w") as tar:
        for k, number in enumerate(sorted(o_numbers + others)):
            buffer = io.BytesIO()
            image = Image.fromarray(pictures[k % len(pictures)]).resize((300 + 7 * k, 260))
            image.save(buffer, format="JPEG", quality=90)
            member = tarfile.TarInfo(f"ILSVRC2012_val_{number:08d}.JPEG")
            member.size = len(buffer.getvalue())
            tar.addfile(member, io.BytesIO(buffer.getvalue()))
    return path, sorted(f"{truth[n - 1]}/ILSVRC2012_val_{n:08d}.JPEG" for n in o_numbers)


def files_of(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.relative_to(folder).as_posix().startswith(".tmp")}


def test_an_imagenet_o_evaluation_against_a_val_tar_killed_and_rerun_gives_the_same_bytes(
        imagenet_o, val_tar, lite0_onnx, tmp_path, capsys):
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    from pipelines.beam.prediction_parts import SCRATCH_DIR
    from pipelines.formats.parts import LEDGER_DIR

    tar, selected = val_tar
    whole, out = tmp_path / "whole", tmp_path / "eval"

    def args(folder, workers):
        return ["evaluate", "--release", str(imagenet_o), "--in-distribution", str(tar), "--model", str(lite0_onnx),
                "--output", str(folder), "--workers", str(workers), "--batch-size", "1"]
    assert main(args(whole, 1)) == 0
    stored = np.load(whole / "logits.npz")
    assert stored["keys_val"].tolist() == selected
    metrics = json.loads((whole / "metrics.json").read_text())["imagenet_o"]
    assert metrics["in_distribution"] == {"kind": "tar", "listed": TAR_O_IMAGES + 2, "unusable": 0,
                                          "outside_classes": 2}
    total = metrics["images"] + TAR_O_IMAGES

    repo = Path(__file__).resolve().parents[3]
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, *args(out, 2)], cwd=repo, start_new_session=True,
                              env={**os.environ, "PYTHONPATH": str(repo)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    ledger, deadline = out / SCRATCH_DIR / LEDGER_DIR, time.monotonic() + 300
    while not (ledger.is_dir() and len(os.listdir(ledger)) >= 6):
        assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
        time.sleep(0.02)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.communicate(timeout=60)
    committed = len(os.listdir(ledger))
    assert not (out / "metrics.json").exists() and committed < total

    capsys.readouterr()
    assert main(args(out, 1)) == 0
    printed = capsys.readouterr().err
    found = re.search(r"^predicted (\d+) model inputs in .*; (\d+) images predicted before$", printed, re.M)
    assert found, printed
    assert (int(found.group(1)), int(found.group(2))) == (total - committed, committed)  # a part per image
    assert files_of(out) == files_of(whole)
    assert not (out / SCRATCH_DIR).exists()
