"""How fast ``evaluate`` runs a model, next to a plain onnxruntime loop over the same images.

:func:`run_evaluate_bench` writes a 224 ImageNet-C release of ``images`` JPEGs
(:func:`write_bench_release`: the synthetic ImageNet photographs of :mod:`pipelines.bench.scaling`,
preprocessed and encoded as a build does), then times, on the same model, images and cores:

- the plain loop (:func:`plain_loop`): Pillow decode, the evaluation's normalisation, batches of
  ``batch_size``, one onnxruntime session with ``threads`` intra-op threads, one process;
- :func:`pipelines.beam.evaluate.evaluate_release` with each worker count of ``workers``, from the
  call to the written ``metrics.json`` (pipeline start, model loads and the sinks included).

The result holds images per second of each and the ratio evaluate / loop.
"""
from __future__ import annotations

import os
import tempfile
import time
from typing import Sequence

import numpy as np

from schemas.release import C_TREE
from schemas.wnids import imagenet_wnids
from transforms.preprocess import encode_jpeg, preprocess

from pipelines.bench.corruptions import machine_info
from pipelines.bench.scaling import synthetic_image

__all__ = ["EVALUATE_IMAGES", "EVALUATE_WORKERS", "LOOP_THREADS", "BENCH_CONDITION", "write_bench_release",
           "plain_loop", "timed_evaluate", "run_evaluate_bench", "format_evaluate_table"]

EVALUATE_IMAGES = 640
"""Images of the bench release (20 batches of 32)."""
EVALUATE_WORKERS = (1, 2)
"""Worker counts ``evaluate`` is timed with."""
LOOP_THREADS = 2
"""Intra-op threads of the plain loop's onnxruntime session."""
BENCH_CONDITION = "contrast/1"
"""The condition folder the bench release's images lie in."""


def write_bench_release(folder: str, images: int) -> list[str]:
    """A 224 ImageNet-C tree of ``images`` JPEGs under ``<folder>/ImageNet-C/contrast/1/``; returns
    the files in key order."""
    wnids = imagenet_wnids()
    paths = []
    for index in range(images):
        wnid = wnids[index % len(wnids)]
        path = os.path.join(folder, C_TREE, BENCH_CONDITION, wnid, f"ILSVRC2012_val_{index + 1:08d}.JPEG")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as stream:
            stream.write(encode_jpeg(preprocess(synthetic_image(index))))
        paths.append(path)
    return sorted(paths, key=lambda p: os.path.relpath(p, os.path.join(folder, C_TREE, BENCH_CONDITION)))


def plain_loop(model_path: str, paths: Sequence[str], batch_size: int = 32, threads: int = LOOP_THREADS) -> dict:
    """Time the plain loop over ``paths``; ``seconds`` from the session's creation to the last batch."""
    import onnxruntime
    from PIL import Image

    from pipelines.evaluation.model_input import model_input

    start = time.perf_counter()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    top1 = []
    for first in range(0, len(paths), batch_size):
        batch = np.stack([model_input(Image.open(p)) for p in paths[first:first + batch_size]])
        top1 += np.argmax(session.run(None, {name: batch})[0], axis=1).tolist()
    seconds = time.perf_counter() - start
    return {"images": len(paths), "seconds": seconds, "images_per_second": len(paths) / seconds,
            "threads": threads, "batch_size": batch_size, "top1": top1}


def timed_evaluate(release: str, model_path: str, workers: int, batch_size: int = 32) -> dict:
    """Time one ``evaluate`` of the bench release; ``top1`` in key order, read from its predictions."""
    import json

    from pipelines.beam.evaluate import PREDICTION_FOLDERS, evaluate_release
    from pipelines.beam.inference import Model
    from pipelines.beam.runner import RunOptions
    from pipelines.formats.predictions import read_predictions

    with tempfile.TemporaryDirectory(prefix="imagenet-cp-bench-eval-") as out:
        start = time.perf_counter()
        evaluate_release(release, Model(model_path, batch_size=batch_size), out, run=RunOptions(workers=workers))
        seconds = time.perf_counter() - start
        name = BENCH_CONDITION.replace("/", "_")
        path = os.path.join(out, "predictions", PREDICTION_FOLDERS[C_TREE], f"{name}.jsonl")
        top1 = [row.top5[0] for row in read_predictions(path)]
    return {"workers": workers, "seconds": seconds, "top1": top1}


def run_evaluate_bench(model_path: str, images: int = EVALUATE_IMAGES, workers: Sequence[int] = EVALUATE_WORKERS,
                       batch_size: int = 32) -> dict:
    """Images per second of ``evaluate`` (per worker count) and of the plain loop, and their ratio.

    Raises
    ------
    ValueError
        When evaluate and the loop disagree on a prediction (they must see the same inputs).
    """
    if images < 1 or any(count < 1 for count in workers):
        raise ValueError(f"--evaluate-images and --workers must be >= 1, got {images} and {list(workers)}")
    if not os.path.isfile(model_path):
        raise ValueError(f"--evaluate {model_path}: no such model file (imagenet-cp fetch-model efficientnet-lite0)")
    with tempfile.TemporaryDirectory(prefix="imagenet-cp-bench-release-") as release:
        paths = write_bench_release(release, images)
        load_before = os.getloadavg()
        loop = plain_loop(model_path, paths, batch_size)
        runs = []
        for count in workers:
            run = timed_evaluate(release, model_path, count, batch_size)
            if run["top1"] != loop["top1"]:
                raise ValueError(f"evaluate with {count} workers and the plain loop disagree on the top-1 classes")
            runs.append({"workers": count, "seconds": run["seconds"], "images_per_second": images / run["seconds"],
                         "ratio_to_loop": loop["seconds"] / run["seconds"]})
        load_after = os.getloadavg()
    del loop["top1"]
    return {"model": os.path.basename(model_path), "images": images, "loop": loop, "evaluate": runs,
            "load_average_before": list(load_before), "load_average_after": list(load_after),
            "machine": machine_info()}


def format_evaluate_table(result: dict) -> str:
    """The bench result as a few lines of text."""
    loop = result["loop"]
    lines = [f"evaluate vs a plain onnxruntime loop: {result['model']}, {result['images']} images of 224x224, "
             f"{result['machine']['usable_cores']} usable cores, load average before "
             f"{result['load_average_before'][0]:.2f}, after {result['load_average_after'][0]:.2f}",
             f"  plain loop ({loop['threads']} intra-op threads, batches of {loop['batch_size']}): "
             f"{loop['images_per_second']:.1f} images/s ({loop['seconds']:.1f} s)"]
    for run in result["evaluate"]:
        lines.append(f"  evaluate --workers {run['workers']}: {run['images_per_second']:.1f} images/s "
                     f"({run['seconds']:.1f} s), ratio to the loop {run['ratio_to_loop']:.2f}")
    return "\n".join(lines)
