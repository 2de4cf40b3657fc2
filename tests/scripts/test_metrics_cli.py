"""``imagenet-cp metrics``: the documented input files in, the documented JSON out."""
import json

import numpy as np
import pytest

from pipelines.evaluation.metrics_files import write_flips
from schemas.baselines import ALEXNET_IMAGENET_C
from schemas.class_subsets import subset_indices
from schemas.imagenet_p import TEST_PERTURBATIONS
from scripts.cli import main


def run_cli(capsys, *argv):
    code = main(["metrics", *argv])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def test_alexnet_errors_give_100(tmp_path, capsys):
    path = tmp_path / "alexnet.json"
    corruptions = {c: list(e) for c, e in ALEXNET_IMAGENET_C.corruptions.items()}
    path.write_text(json.dumps({"clean": ALEXNET_IMAGENET_C.clean, "corruptions": corruptions}))
    code, result, _ = run_cli(capsys, "--errors", str(path))
    assert code == 0
    assert result["mCE"] == pytest.approx(100) and result["relative_mCE"] == pytest.approx(100)
    assert list(result["CE"].values()) == pytest.approx([100] * 15)
    assert set(result["extra"]["CE"]) == {"speckle_noise", "gaussian_blur", "spatter", "saturate"}
    assert result["unnormalized_mCE"] == pytest.approx(78.8993, abs=1e-4)  # mean of the 15 averages


def test_missing_corruption_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"clean": None, "corruptions": {"fog": [0.1] * 5}}))
    code, _, err = run_cli(capsys, "--errors", str(path))
    assert code == 2 and "missing: gaussian_noise" in err and "mCE" in err


def test_errors_against_a_user_baseline(tmp_path, capsys):
    errors = {c: [0.3] * 5 for c in ALEXNET_IMAGENET_C.corruptions}
    (tmp_path / "model.json").write_text(json.dumps({"clean": 0.1, "corruptions": errors}))
    (tmp_path / "base.json").write_text(json.dumps(
        {"clean": 0.2, "corruptions": {c: [0.6] * 5 for c in errors}}))
    code, result, _ = run_cli(capsys, "--errors", str(tmp_path / "model.json"),
                              "--baseline", str(tmp_path / "base.json"))
    assert code == 0 and result["baseline"] == "base"
    assert result["mCE"] == pytest.approx(50) and result["relative_mCE"] == pytest.approx(50)


def test_flips_with_a_baseline_npz(tmp_path, capsys):
    frames = np.arange(31)[None, :, None] + np.arange(5)            # top-1 changes every frame
    model = {p: np.repeat(frames, 2, axis=0) for p in TEST_PERTURBATIONS}
    baseline = {p: np.repeat(frames // 2, 2, axis=0) for p in TEST_PERTURBATIONS}
    write_flips(tmp_path / "model.npz", model)
    write_flips(tmp_path / "alexnet.npz", baseline)
    code, result, _ = run_cli(capsys, "--flips", str(tmp_path / "model.npz"),
                              "--flip-baseline", str(tmp_path / "alexnet.npz"))
    assert code == 0
    assert result["perturbations"]["rotate"]["1"]["flip_probability"] == 1.0
    assert result["FR"]["rotate"] == pytest.approx(100 / (15 / 30))   # baseline flips every 2nd frame
    assert result["mFR"] is not None and result["mT5D"] is not None
    code, result, _ = run_cli(capsys, "--flips", str(tmp_path / "model.npz"))
    assert code == 0 and result["mFR"] is None


def test_imagenet_a_and_o(tmp_path, capsys):
    a, o = subset_indices("imagenet_a"), subset_indices("imagenet_o")
    logits = np.zeros((2, 1000))
    logits[0, a[0]] = 1
    logits[1, a[5]] = 1
    np.savez(tmp_path / "a.npz", logits=logits, labels=np.array([a[0], a[1]]))
    code, result, _ = run_cli(capsys, "--imagenet-a", str(tmp_path / "a.npz"))
    assert code == 0 and result == {"accuracy_200": 50.0, "accuracy_1000": 50.0}
    confident = np.zeros((3, 1000))
    confident[:, o[0]] = 10
    np.savez(tmp_path / "o.npz", logits_o=np.zeros((2, 1000)), logits_val=confident)
    code, result, _ = run_cli(capsys, "--imagenet-o", str(tmp_path / "o.npz"))
    assert code == 0 and result == {"AUPR": 100.0, "AUROC": 100.0, "FPR95": 0.0, "FPR95_first_reaching": 0.0}
    code, _, err = run_cli(capsys, "--imagenet-o", str(tmp_path / "a.npz"))
    assert code == 2 and "missing array(s) logits_o, logits_val" in err
