"""Pluggable Beam model handlers for ``imagenet-cp evaluate``: ONNX, TorchScript, TensorFlow.

A model maps a batch (N, 3, S, S) of :mod:`pipelines.evaluation.model_input` arrays to logits (N, K).
"""
from __future__ import annotations

import numpy as np

from pipelines.evaluation.models import FRAMEWORKS, infer_framework


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
