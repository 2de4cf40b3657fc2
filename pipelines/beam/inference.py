"""Pluggable Beam model handlers for ``imagenet-cp evaluate``: ONNX, TorchScript, TensorFlow.

A model maps a batch (N, 3, S, S) of :mod:`pipelines.evaluation.model_input` arrays to logits (N, K).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.ml.inference.base import RunInference

try:  # onnxruntime is optional (TorchScript or TensorFlow models run without it)
    from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy
except ImportError:
    OnnxModelHandlerNumpy = None

from pipelines.beam.progress import NAMESPACE as PROGRESS_NAMESPACE
from pipelines.evaluation.models import FRAMEWORKS, ModelError, infer_framework, key_text, nonfinite_message

__all__ = ["METRICS_NAMESPACE", "NONFINITE_COUNTER", "NONFINITE_KEYS", "PredictLogits", "Model", "count_refused",
           "nonfinite_found", "run_checked", "beam_counters", "threads_per_worker", "model_handler"]

METRICS_NAMESPACE = "imagenet-cp evaluate"
NONFINITE_COUNTER = "nonfinite_logits"
NONFINITE_KEYS = "nonfinite_keys"


@dataclass(frozen=True)
class Model:
    """A model file to evaluate, and how it runs.

    Attributes
    ----------
    path : str
        ONNX file (TorchScript or TensorFlow SavedModel when installed).
    framework : str, optional
        ``onnx``, ``torch`` or ``tensorflow``; None: inferred from the file
        (:func:`pipelines.evaluation.models.infer_framework`).
    batch_size : int
        Images per RunInference batch.
    """

    path: str
    framework: Optional[str] = None
    batch_size: int = 32


class _KeepFiniteFn(beam.DoFn):
    """``(id, PredictionResult)`` -> ``(id, logits)``; an id whose logits hold NaN or infinity goes
    to the ``nonfinite`` output instead, and is counted (every batch, every image)."""

    def __init__(self):
        self._count = Metrics.counter(METRICS_NAMESPACE, NONFINITE_COUNTER)
        self._keys = Metrics.string_set(METRICS_NAMESPACE, NONFINITE_KEYS)

    def process(self, element):
        key, result = element
        logits = np.asarray(result.inference, dtype=np.float32)
        if not np.isfinite(logits).all():
            self._count.inc()
            self._keys.add(key_text(key))
            yield beam.pvalue.TaggedOutput("nonfinite", key)
            return
        yield key, logits


class PredictLogits(beam.PTransform):
    """``(id, model input)`` -> ``(id, float32 logits)`` with RunInference; the ids whose logits
    are not finite leave through :attr:`nonfinite` (set when the transform is applied)."""

    def __init__(self, handler):
        super().__init__()
        self._handler = handler
        self.nonfinite = None

    def expand(self, inputs):
        outputs = (inputs
                   | "RunInference" >> RunInference(self._handler)
                   | "KeepFinite" >> beam.ParDo(_KeepFiniteFn()).with_outputs("nonfinite", main="logits"))
        self.nonfinite = outputs.nonfinite
        return outputs.logits


def count_refused(pipeline, nonfinite):
    """``AsSingleton`` side input: how many predictions were refused (0 lets the sinks write)."""
    return beam.pvalue.AsSingleton(
        (list(nonfinite) or [pipeline | "NoRefusals" >> beam.Create([])]) | "AllRefused" >> beam.Flatten()
        | "CountRefused" >> beam.combiners.Count.Globally())


def nonfinite_found(result) -> tuple[int, list]:
    """``(count, sorted keys)`` of the predictions :class:`PredictLogits` refused in a finished run."""
    found = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    count = sum(r.committed or 0 for r in found.get("counters", []) if r.key.metric.name == NONFINITE_COUNTER)
    keys = sorted({k for r in found.get("string_sets", []) if r.key.metric.name == NONFINITE_KEYS
                   for k in (r.committed or ())})
    return count, keys


def run_checked(pipeline, model_path: str):
    """Run ``pipeline`` to the end and return its result; refuse the run (one :class:`ModelError`
    line) when some logits were NaN or infinite, after sinks that wrote nothing."""
    result = pipeline.run()
    result.wait_until_finish()
    count, keys = nonfinite_found(result)
    if count:
        raise ModelError(nonfinite_message(model_path, count, None, keys))
    return result


def beam_counters(result, names, namespace: str = PROGRESS_NAMESPACE) -> dict:
    """The finished run's totals of the counters ``names`` (of :class:`pipelines.beam.progress.ProgressCounter`)."""
    totals = dict.fromkeys(names, 0)
    for counter in result.metrics().query(MetricsFilter().with_namespace(namespace))["counters"]:
        if counter.key.metric.name in totals:
            value = counter.committed if counter.committed is not None else counter.attempted
            totals[counter.key.metric.name] += value or 0
    return totals


def threads_per_worker(workers: int | None, beam_args=()) -> int:
    """Intra-op threads each worker's model session gets: the usable cores shared out among the
    local workers (one each when there are as many workers as cores, the default), so that
    workers and model threads do not fight over cores; 0 (the runtime's own choice) on a remote runner."""
    from pipelines.beam.runner import is_local

    if not is_local(beam_args):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // (workers or cores))


class _OnnxHandler(OnnxModelHandlerNumpy if OnnxModelHandlerNumpy else object):
    """Beam's ONNX handler with the session's threads set on purpose (``threads`` intra-op threads,
    sequential execution); the options are made on the worker (a ``SessionOptions`` does not pickle)."""

    def __init__(self, model_path: str, threads: int, **batching):
        import onnxruntime

        super().__init__(model_path, providers=onnxruntime.get_available_providers(), **batching)
        self._threads = threads

    def load_model(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        return onnxruntime.InferenceSession(self._model_uri, options, providers=self._providers)


def model_handler(model_path: str, framework: str | None = None, batch_size: int = 32, threads: int = 0):
    """A keyed Beam ``ModelHandler``: ``(key, model_input array)`` in, ``(key, PredictionResult)`` out.

    ``np.asarray(result.inference)`` is the logits vector (K,) whatever the framework. Batches
    hold ``batch_size`` inputs (fewer only at the end of a bundle).

    Parameters
    ----------
    model_path : str
        ONNX file, TorchScript file, or Keras / SavedModel path.
    framework : str, optional
        One of ``FRAMEWORKS``; inferred from ``model_path`` when None.
    batch_size : int
        Inputs per model call.
    threads : int
        ONNX Runtime intra-op threads per worker (0: its default), see :func:`threads_per_worker`.

    Raises
    ------
    ValueError
        On an unknown framework.
    ImportError
        When the framework's runtime (onnxruntime, torch, tensorflow) is not installed.
    """
    from apache_beam.ml.inference.base import KeyedModelHandler

    framework = framework or infer_framework(model_path)
    batching = {"min_batch_size": batch_size, "max_batch_size": batch_size}
    if framework == "onnx":
        return KeyedModelHandler(_OnnxHandler(model_path, threads, **batching))
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
