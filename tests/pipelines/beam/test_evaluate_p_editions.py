"""``evaluate`` on the other ImageNet-P editions: a CIFAR-10-P ``.npy`` release and a Tiny-ImageNet-P MP4
release (one or two sample images), with a tiny ONNX model of any input size built here; the MP4
predictions equal those of the TFDS frames of the same release."""
import json

import numpy as np
import pytest

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from metrics.imagenet_p import top_k_classes  # noqa: E402
from pipelines.beam.inference import Model  # noqa: E402
from pipelines.beam.runner import RunOptions  # noqa: E402
from pipelines.beam.build import SourceSelection  # noqa: E402
from pipelines.beam.evaluate import evaluate_release  # noqa: E402
from pipelines.evaluation.model_input import frame_model_input  # noqa: E402
from pipelines.evaluation.p_sequences import p_sets  # noqa: E402
from schemas.editions import get_edition  # noqa: E402
from schemas.configs import ImageNetPConfig  # noqa: E402
from pipelines.beam.imagenet_p import build_imagenet_p  # noqa: E402

W = (0.5 * np.cos(np.arange(3)[:, None] * 1.7 + np.arange(1000)[None, :] * 0.37)).astype(np.float32)


def write_model(path, classes):
    """Global average pool -> matmul by the first ``classes`` columns of W, for (N, 3, H, W) inputs
    of any size (evaluate checks the width: 10 on CIFAR-10-P, 200 on Tiny-ImageNet-P)."""
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["logits"])],
        "any_size", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        initializer=[numpy_helper.from_array(np.ascontiguousarray(W[:, :classes]), "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def expected_top5(frames, edition, model):
    """The model's top-5 per frame, run here with onnxruntime on the edition's model input."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    to_input = frame_model_input(get_edition(edition))
    batch = np.stack([to_input(frame) for frame in frames])
    return [top_k_classes(logits).tolist() for logits in session.run(None, {"input": batch})[0]]


def predictions(out, name):
    return {row["key"]: row for row in map(json.loads, (out / "predictions" / "imagenet-p" / f"{name}.jsonl")
                                           .read_text().splitlines())}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("model")
    return {classes: write_model(root / f"any_{classes}.onnx", classes) or root / f"any_{classes}.onnx"
            for classes in (10, 200)}


def build(output, edition, perturbations, limit):
    config = ImageNetPConfig.select(perturbations, [1], preset="ultrafast", edition=edition)
    result = build_imagenet_p(str(output), SourceSelection(limit=limit), config,
                              RunOptions(workers=1, progress_interval=3600))
    assert result.failures == 0


def test_cifar_npy_release_is_evaluated_row_by_row(tmp_path, models):
    model = models[10]
    release = tmp_path / "cifar"
    build(release, "cifar", ["translate"], limit=2)
    assert [(s.name, s.edition.name) for s in p_sets(str(release))] == [("translate", "cifar")]
    out = evaluate_release(str(release), Model(str(model), batch_size=8), out_dir=str(tmp_path / "out"),
                           run=RunOptions(workers=1))
    array = np.load(release / "CIFAR-10-P" / "translate.npy")
    rows = [json.loads(line) for line in (release / "manifest" / "translate.jsonl").read_text().splitlines()]
    got = predictions(out, "translate")
    assert sorted(got) == [row["image_key"] for row in rows]
    for sequence, row in zip(array, rows):
        assert got[row["image_key"]]["top5"] == expected_top5(sequence, "cifar", model)  # 16 frames x 5
    metrics = json.loads((out / "metrics.json").read_text())
    assert "translate" in json.dumps(metrics["imagenet_p"])


def test_tinyimagenet_mp4_and_tfds_frames_give_identical_predictions(tmp_path, models):
    model = models[200]
    tfds = pytest.importorskip("tensorflow_datasets")
    release = tmp_path / "tiny"
    build(release, "tinyimagenet", ["rotate"], limit=1)
    out = evaluate_release(str(release), Model(str(model), batch_size=8), out_dir=str(tmp_path / "out"),
                           run=RunOptions(workers=1))
    (key, row), = predictions(out, "rotate").items()
    example, = tfds.builder_from_directory(str(release / "tfds" / "tiny_imagenet_p" / "rotate" / "1.0.0")).as_dataset(
        split="validation")
    assert key.endswith(".mp4") and len(row["top5"]) == 31
    assert row["top5"] == expected_top5(example["video"].numpy(), "tinyimagenet", model)
