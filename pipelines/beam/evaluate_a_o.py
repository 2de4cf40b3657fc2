"""``imagenet-cp evaluate`` on a packaged ImageNet-A set (``imagenet-a/<wnid>/<file>``): the Beam graph.

The reference evaluation (``natural-adv-examples/eval.py``): Resize(256), CenterCrop(224),
ImageNet mean/std (:func:`pipelines.evaluation.model_input.model_input_a`), one prediction per
image, through the same pluggable Beam model handlers as the C/P evaluation; the files are
those of :mod:`pipelines.evaluation.imagenet_a`, on any file system.
"""
from __future__ import annotations

from typing import Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import RunInference

from pipelines.beam.inference import model_handler
from pipelines.beam.runner import make_pipeline
from pipelines.evaluation.imagenet_a import write_a_outputs
from pipelines.evaluation.model_input import model_input_a
from pipelines.evaluation.release_inputs import a_tree_files
from pipelines.evaluation.scores import default_output, model_name_of, output_path
from pipelines.formats import storage


def _read(item):
    key, label, path = item
    return (key, label), model_input_a(storage.read_bytes(path))


def evaluate_imagenet_a(release_dir: str, model_path: str, out_dir: Optional[str] = None,
                        framework: Optional[str] = None, batch_size: int = 32, workers: Optional[int] = None,
                        beam_args: Sequence[str] = ()):
    """Run ``model_path`` over the packaged ImageNet-A set in ``release_dir``; return the output folder."""
    files = a_tree_files(release_dir)
    model_name = model_name_of(model_path)
    out = str(out_dir or default_output(release_dir, model_path))
    handler = model_handler(model_path, framework, batch_size)
    with make_pipeline(workers, beam_args) as pipeline:
        (pipeline
         | "ListImages" >> beam.Create(files)
         | "Spread" >> beam.Reshuffle()
         | "ModelInput" >> beam.Map(_read)
         | "Predict" >> RunInference(handler)
         | "Logits" >> beam.MapTuple(lambda key, result: (key, np.asarray(result.inference, dtype=np.float32)))
         | "Collect" >> beam.combiners.ToList()
         | "WriteMetrics" >> beam.Map(lambda results: write_a_outputs(out, results, model_name)))
    return output_path(out)
