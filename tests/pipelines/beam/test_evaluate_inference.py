"""Model input (the reference evaluator's ToTensor + Normalize) and the model-handler factory."""
import numpy as np
import pytest

from pipelines.beam.inference import model_handler
from pipelines.evaluation.model_input import model_input
from pipelines.evaluation.models import infer_framework
from transforms.preprocess import encode_jpeg


def test_model_input_is_totensor_then_imagenet_normalisation():
    image = np.zeros((224, 224, 3), dtype=np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 0, 128, 255
    x = model_input(image)
    assert x.dtype == np.float32 and x.shape == (3, 224, 224)
    expected = [(0 - 0.485) / 0.229, (128 / 255 - 0.456) / 0.224, (1 - 0.406) / 0.225]
    np.testing.assert_allclose(x[:, 100, 100], expected, rtol=1e-6)


def test_model_input_centre_crops_and_decodes_bytes():
    image = np.zeros((230, 240, 3), dtype=np.uint8)
    image[3:227, 8:232] = 200                       # the 224 centre crop (offsets 3 and 8)
    x = model_input(encode_jpeg(image))
    assert x.shape == (3, 224, 224)
    assert np.allclose(x, model_input(np.full((224, 224, 3), 200, np.uint8)), atol=0.1)


@pytest.mark.parametrize("path, framework", [
    ("m.onnx", "onnx"), ("m.pt", "pytorch"), ("m.pth", "pytorch"), ("m.keras", "tensorflow")])
def test_framework_from_the_file_name(path, framework):
    assert infer_framework(path) == framework


def test_unknown_frameworks_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the framework"):
        infer_framework(str(tmp_path / "model.bin"))
    assert infer_framework(str(tmp_path)) == "tensorflow"     # a SavedModel folder
    with pytest.raises(ValueError, match="valid: onnx, pytorch, tensorflow"):
        model_handler("model.bin", "caffe")
