"""Pluggable Beam model handlers for ``imagenet-cp evaluate``: ONNX, TorchScript, TensorFlow.

A model maps a batch (N, 3, S, S) of :mod:`pipelines.evaluation.model_input` arrays to logits (N, K).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Optional

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from pipelines.beam.progress import NAMESPACE as PROGRESS_NAMESPACE
from pipelines.evaluation.models import (FRAMEWORKS, ModelError, infer_framework, key_text, local_model_file,
                                        nonfinite_message)

BEAM_MODEL_MANAGER = "apache_beam.ml.inference.model_manager"
"""Beam's multi-model manager, which ``apache_beam.ml.inference.base`` imports when it is imported
(in a ``try``), and which imports ``torch`` and ``scipy.optimize``: seconds of start-up and exit in
the driver and every worker process, for a feature (``use_model_manager``) evaluate never asks
for. Beam imports it itself, on first use, when a pipeline does."""


def _import_base_without_model_manager():
    """``apache_beam.ml.inference.base``, imported with :data:`BEAM_MODEL_MANAGER` left out (a
    ``None`` entry in ``sys.modules`` makes its import fail, as Beam's ``try`` allows: its
    ``ModelManager`` is None until a pipeline asks for it). The ``except`` branch of that ``try``
    also sets the module's ``resource`` to None, which only Beam's memory metric of a model load
    reads: it is given back. Where Beam's inference or the model manager is already imported,
    nothing changes."""
    import resource
    import sys

    blocked = "apache_beam.ml.inference.base" not in sys.modules and BEAM_MODEL_MANAGER not in sys.modules
    if blocked:
        sys.modules[BEAM_MODEL_MANAGER] = None
    try:
        from apache_beam.ml.inference import base
    finally:
        if blocked:
            del sys.modules[BEAM_MODEL_MANAGER]
    if getattr(base, "resource", resource) is None:
        base.resource = resource
    return base


_BASE = _import_base_without_model_manager()
RunInference, ModelHandler, PredictionResult = _BASE.RunInference, _BASE.ModelHandler, _BASE.PredictionResult

__all__ = ["BEAM_MODEL_MANAGER", "METRICS_NAMESPACE", "NONFINITE_COUNTER", "NONFINITE_KEYS", "STEP_TIMES", "mark_time",
           "marked_times", "step_seconds", "PredictLogits", "Model", "count_refused", "nonfinite_found", "run_checked", "beam_counters", "threads_per_worker", "model_handler"]

METRICS_NAMESPACE = "imagenet-cp evaluate"
NONFINITE_COUNTER = "nonfinite_logits"
NONFINITE_KEYS = "nonfinite_keys"
STEP_TIMES = ("first_prediction_ms", "last_prediction_ms", "written_ms")
"""Beam distributions of wall-clock times (Unix epoch, ms) the workers mark: a worker's first
prediction, the end of each bundle of predictions, the end of the evaluation's files (prediction
files, metrics, report): their minimum and maximum date the steps of :func:`step_seconds`."""


def mark_time(name: str) -> None:
    """Add the time now to the distribution ``name`` of :data:`STEP_TIMES` (in a worker)."""
    Metrics.distribution(METRICS_NAMESPACE, name).update(int(time.time() * 1000))


def marked_times(result) -> dict:
    """``{name: (earliest, latest)}`` in seconds since the epoch, of each of :data:`STEP_TIMES` a
    finished run marked."""
    found = {}
    for record in result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))["distributions"]:
        value = record.committed if record.committed is not None else record.attempted
        if record.key.metric.name in STEP_TIMES and value is not None and value.count:
            earliest, latest = found.get(record.key.metric.name, (value.min, value.max))
            found[record.key.metric.name] = (min(earliest, value.min), max(latest, value.max))
    return {name: (low / 1000, high / 1000) for name, (low, high) in found.items()}


def step_seconds(started: float, entered: float, run: tuple, marked: dict, ended: float) -> list:
    """``[(step, seconds)]`` of an evaluation, from epoch times: the command's start, the call of
    the evaluation (its imports done), the pipeline's run ``(start, end)``, the workers' marks
    (:func:`marked_times`) and the end; a step whose marks are missing is left out (merged into
    the next). The steps: the imports; the driver's checks (configs, the model's trial batch, the
    pipeline's graph); the workers' start, the listing, the model loads and the first batch, until
    the first prediction; the predictions, until the last; the prediction files, the metrics and
    the report; the workers' shutdown; the total.

    Examples
    --------
    >>> step_seconds(0.0, 1.5, (2.5, 40.0), {"first_prediction_ms": (6.0, 7.0),
    ...     "last_prediction_ms": (30.0, 35.0), "written_ms": (36.0, 36.0)}, 40.5)  # doctest: +NORMALIZE_WHITESPACE
    [('imports', 1.5), ('checks', 1.0), ('to the first prediction', 3.5), ('predictions', 29.0),
     ('files and report', 1.0), ('shutdown', 4.0), ('total', 40.5)]
    """
    first, last, written = (marked.get(name) for name in STEP_TIMES)
    points = [("imports", entered), ("checks", run[0]), ("to the first prediction", first and first[0]),
              ("predictions", last and last[1]), ("files and report", written and written[1]),
              ("shutdown", run[1])]
    steps, previous = [], started
    for name, point in points:
        if point is not None:
            steps.append((name, round(point - previous, 1)))
            previous = point
    return steps + [("total", round(ended - started, 1))]


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


class _OnnxHandler(ModelHandler):
    """An ONNX model handler (Beam's ``OnnxModelHandlerNumpy``, whose module imports the ``onnx``
    package, which evaluate does not need): the session's threads set on purpose (``threads``
    intra-op threads, sequential execution; the options are made on the worker: a
    ``SessionOptions`` does not pickle), a batch stacked and run as Beam's runs it, one
    ``PredictionResult`` per input."""

    def __init__(self, model_path: str, threads: int, **batching):
        import onnxruntime

        super().__init__(**batching)
        self._model_uri, self._threads = model_path, threads
        self._providers = onnxruntime.get_available_providers()

    def load_model(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # a model on an object store is copied to the worker's temporary folder: the runtime opens a path
        return onnxruntime.InferenceSession(local_model_file(self._model_uri), options, providers=self._providers)

    def run_inference(self, batch, model, inference_args=None):
        logits = model.run(None, {model.get_inputs()[0].name: np.stack(batch, axis=0)})[0]
        return [PredictionResult(example, row) for example, row in zip(batch, logits)]

    def get_num_bytes(self, batch) -> int:
        return sum(array.nbytes for array in batch)

    def get_metrics_namespace(self) -> str:
        return "BeamML_Onnx"


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
