"""Model input and pluggable Beam model handlers for ``imagenet-cp evaluate``.

The input is the reference evaluators' (``ImageNet-C/test.py``): CenterCrop(224) (a no-op on the
224 release images), ToTensor (C x H x W float32 in [0, 1]) and ImageNet mean/std normalisation.
A model maps a batch (N, 3, 224, 224) to logits (N, 1000).
"""
from __future__ import annotations

import os

import numpy as np

from schemas.baselines import MODEL_INPUT_MEAN, MODEL_INPUT_STD
from transforms.preprocess import center_crop, to_pil

FRAMEWORKS = ("onnx", "pytorch", "tensorflow")

_MEAN = np.asarray(MODEL_INPUT_MEAN, dtype=np.float32)[:, None, None]
_STD = np.asarray(MODEL_INPUT_STD, dtype=np.float32)[:, None, None]


def model_input(image) -> np.ndarray:
    """One image as the model sees it: float32 array (3, 224, 224), normalised per channel.

    Parameters
    ----------
    image : bytes, PIL.Image.Image or uint8 array (H, W, 3)
        An encoded or decoded RGB image (other modes are converted to RGB).
    """
    rgb = np.asarray(center_crop(to_pil(image).convert("RGB")), dtype=np.float32)
    return (rgb.transpose(2, 0, 1) / np.float32(255) - _MEAN) / _STD


def infer_framework(model_path: str) -> str:
    """The framework of a model file from its name: ``.onnx``, ``.pt``/``.pth`` or a SavedModel."""
    path = model_path.rstrip("/")
    if path.endswith(".onnx"):
        return "onnx"
    if path.endswith((".pt", ".pth")):
        return "pytorch"
    if path.endswith((".keras", ".h5")) or os.path.isdir(path):
        return "tensorflow"
    raise ValueError(f"cannot tell the framework of {model_path!r}: name it .onnx (ONNX), .pt or "
                     ".pth (TorchScript), .keras/.h5 or a SavedModel folder (TensorFlow), or pass "
                     f"--framework ({', '.join(FRAMEWORKS)})")


def model_handler(model_path: str, framework: str | None = None, batch_size: int = 32):
    """A keyed Beam ``ModelHandler``: ``(key, model_input array)`` in, ``(key, PredictionResult)`` out.

    ``np.asarray(result.inference)`` is the logits vector (1000,) whatever the framework.

    Parameters
    ----------
    model_path : str
        ONNX file, TorchScript file, or Keras / SavedModel path.
    framework : str, optional
        One of ``FRAMEWORKS``; inferred from ``model_path`` when None.
    batch_size : int
        Largest batch RunInference sends to the model.

    Raises
    ------
    ValueError
        On an unknown framework.
    ImportError
        When the framework's runtime (onnxruntime, torch, tensorflow) is not installed.
    """
    from apache_beam.ml.inference.base import KeyedModelHandler

    framework = framework or infer_framework(model_path)
    batching = {"min_batch_size": 1, "max_batch_size": batch_size}
    if framework == "onnx":
        import onnxruntime
        from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy

        return KeyedModelHandler(OnnxModelHandlerNumpy(
            model_path, providers=onnxruntime.get_available_providers(), **batching))
    if framework == "pytorch":
        import torch
        from apache_beam.ml.inference.pytorch_inference import PytorchModelHandlerTensor

        handler = PytorchModelHandlerTensor(torch_script_model_path=model_path, **batching)
        return KeyedModelHandler(handler).with_preprocess_fn(
            lambda keyed: (keyed[0], torch.from_numpy(keyed[1])))
    if framework == "tensorflow":
        from apache_beam.ml.inference.tensorflow_inference import TFModelHandlerNumpy

        # Keras models take channels last: (N, 224, 224, 3).
        return KeyedModelHandler(TFModelHandlerNumpy(model_path, **batching)).with_preprocess_fn(
            lambda keyed: (keyed[0], np.ascontiguousarray(keyed[1].transpose(1, 2, 0))))
    raise ValueError(f"unknown framework {framework!r}; valid: {', '.join(FRAMEWORKS)}")
