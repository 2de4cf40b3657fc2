"""``evaluate`` on the other editions: official CIFAR-10-C (.npy) and Tiny-ImageNet-C (JPEG tree)
layouts, tiny ONNX classifiers built here, edition-sized inputs, RobustBench-style mean error."""
import json

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pipelines.beam.evaluate import evaluate_release  # noqa: E402
from pipelines.beam.inference import Model  # noqa: E402
from pipelines.beam.runner import RunOptions  # noqa: E402
from pipelines.evaluation.model_input import edition_model_input as model_input  # noqa: E402
from pipelines.evaluation.scores import unnormalised_summary  # noqa: E402
from schemas.editions import EDITIONS  # noqa: E402


def write_onnx_model(path, side, classes, seed):
    """Global average pool -> flatten -> matmul: (N, 3, side, side) -> (N, classes)."""
    weights = np.random.RandomState(seed).normal(0, 1, (3, classes)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["logits"])],
        "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, side, side])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        initializer=[numpy_helper.from_array(weights, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return weights


def top1(image, edition, weights):
    return int(np.argmax(model_input(image, EDITIONS[edition]).mean(axis=(1, 2)) @ weights))


def test_cifar10_c_npy_layout(tmp_path):
    rng = np.random.RandomState(0)
    n = 6
    tree = tmp_path / "release" / "CIFAR-10-C"
    tree.mkdir(parents=True)
    labels = np.tile(rng.randint(0, 10, n).astype(np.uint8), 5)
    stacks = {c: rng.randint(0, 256, (5 * n, 32, 32, 3)).astype(np.uint8) for c in ("fog", "speckle_noise")}
    for corruption, stack in stacks.items():
        np.save(tree / f"{corruption}.npy", stack)
    np.save(tree / "labels.npy", labels)
    weights = write_onnx_model(tmp_path / "cifar.onnx", 32, 10, 1)
    out = evaluate_release(str(tmp_path / "release"), Model(str(tmp_path / "cifar.onnx")), str(tmp_path / "eval"),
                           run=RunOptions(workers=1))
    metrics = json.loads((out / "metrics.json").read_text())["imagenet_c"]
    expected = {c: {str(s): float(np.mean([top1(stack[(s - 1) * n + i], "cifar", weights) != labels[i]
                                            for i in range(n)])) for s in range(1, 6)}
                for c, stack in stacks.items()}
    assert metrics["edition"] == "cifar" and metrics["errors"] == expected
    assert metrics["summary"]["mean_error"] == pytest.approx(np.mean(list(expected["fog"].values())))
    assert metrics["summary"]["mean_accuracy"] == pytest.approx(1 - metrics["summary"]["mean_error"])
    assert metrics["summary"]["extra_mean_error"] == pytest.approx(np.mean(list(expected["speckle_noise"].values())))
    rows = [json.loads(line) for line in (out / "predictions" / "CIFAR-10-C" / "fog_2.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == labels[:n].tolist() and all(len(r["top5"]) == 5 for r in rows)
    assert "CIFAR-10-C (cifar edition)" in (out / "report.md").read_text()


def test_tiny_imagenet_c_tree_takes_64_pixel_inputs_and_200_classes(tmp_path):
    rng = np.random.RandomState(1)
    wnids = ["n01443537", "n01629819"]
    images = {}
    for severity in range(1, 6):
        for wnid in wnids:
            folder = tmp_path / "release" / "Tiny-ImageNet-C" / "frost" / str(severity) / wnid
            folder.mkdir(parents=True)
            for k in range(2):
                image = rng.randint(0, 256, (64, 64, 3)).astype(np.uint8)
                Image.fromarray(image).save(folder / f"val_{k}.JPEG", quality=85)
                images[(severity, wnid, k)] = np.asarray(Image.open(folder / f"val_{k}.JPEG"))
    weights = write_onnx_model(tmp_path / "tiny.onnx", 64, 200, 2)
    out = evaluate_release(str(tmp_path / "release"), Model(str(tmp_path / "tiny.onnx")), str(tmp_path / "eval"),
                           run=RunOptions(workers=1))
    errors = json.loads((out / "metrics.json").read_text())["imagenet_c"]["errors"]["frost"]
    for severity in range(1, 6):
        wrong = [top1(images[severity, w, k], "tinyimagenet", weights) != label
                 for label, w in enumerate(wnids) for k in range(2)]
        assert errors[str(severity)] == pytest.approx(np.mean(wrong))


def test_model_input_checks_the_edition_size():
    with pytest.raises(ValueError, match="32x32"):
        model_input(np.zeros((64, 64, 3), np.uint8), EDITIONS["cifar"])
    assert model_input(np.full((32, 32, 3), 255, np.uint8), EDITIONS["cifar"]).max() == 1.0


def test_unnormalised_summary_averages_benchmark_corruptions_only():
    summary = unnormalised_summary({"fog": {"1": 0.2, "2": 0.4}, "contrast": {"1": 0.6}, "saturate": {"1": 0.9}})
    assert summary["mean_error"] == pytest.approx(0.4) and summary["extra_mean_error"] == pytest.approx(0.9)
    assert summary["corruption_error"] == {"contrast": 0.6, "fog": pytest.approx(0.3), "saturate": 0.9}


def test_a_built_cifar_release_scores_alike_from_npy_and_from_tfds(tmp_path):
    pytest.importorskip("tensorflow_datasets")
    from pipelines.beam.build import SourceSelection
    from pipelines.beam.imagenet_c import build_imagenet_c
    from schemas.configs import ImageNetCConfig

    release = tmp_path / "release"
    build_imagenet_c(str(release), SourceSelection(), ImageNetCConfig.select(["glass_blur"], [1, 3], edition="cifar"),
                     RunOptions(workers=1, progress_interval=3600))
    weights = write_onnx_model(tmp_path / "cifar.onnx", 32, 10, 3)
    runs = {}
    for source in ("tree", "tfds"):
        out = evaluate_release(str(release), Model(str(tmp_path / "cifar.onnx")), str(tmp_path / source),
                               source=source, run=RunOptions(workers=1))
        section = json.loads((out / "metrics.json").read_text())["imagenet_c"]
        runs[source] = (section["errors"], section["clean"],
                        (out / "predictions" / "CIFAR-10-C" / "glass_blur_3.jsonl").read_text())
    assert runs["tree"] == runs["tfds"] and set(runs["tree"][0]["glass_blur"]) == {"1", "3"}
    clean, labels = np.load(release / "CIFAR-10-C" / "clean.npy"), np.load(release / "CIFAR-10-C" / "labels.npy")
    expected = float(np.mean([top1(clean[i], "cifar", weights) != labels[i] for i in range(len(clean))]))
    assert runs["tree"][1]["error"] == pytest.approx(expected)  # measured on clean.npy
