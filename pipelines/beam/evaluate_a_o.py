"""``imagenet-cp evaluate`` on a packaged ImageNet-A set (``imagenet-a/<wnid>/<file>``): the Beam graph.

The reference evaluation (``natural-adv-examples/eval.py``): Resize(256), CenterCrop(224),
ImageNet mean/std (:func:`pipelines.evaluation.model_input.model_input_a`), one prediction per
image, through the same pluggable Beam model handlers as the C/P evaluation; the files are
those of :mod:`pipelines.evaluation.imagenet_a`, on any file system.
"""
from __future__ import annotations

from typing import Optional, Sequence

import apache_beam as beam

from pipelines.beam.inference import PredictLogits, count_refused, model_handler, run_checked, threads_per_worker
from pipelines.beam.runner import make_pipeline
from pipelines.evaluation.imagenet_a import write_a_outputs
from pipelines.evaluation.model_input import A_SIDE, model_input_a
from pipelines.evaluation.models import A_CLASSES, check_model, trial_batch
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
    check_model(model_path, framework, A_SIDE, (A_CLASSES,), "the imagenet-a set",
                trial_batch(((key, path) for key, _, path in files), model_input_a))
    model_name = model_name_of(model_path)
    out = str(out_dir or default_output(release_dir, model_path))
    pipeline = make_pipeline(workers, beam_args)
    predict = PredictLogits(model_handler(model_path, framework, batch_size, threads_per_worker(workers, beam_args)))
    logits = (pipeline
              | "ListImages" >> beam.Create(files)
              | "Spread" >> beam.Reshuffle()
              | "ModelInput" >> beam.Map(_read)
              | "Predict" >> predict)
    refused = count_refused(pipeline, [predict.nonfinite])
    (logits
     | "Collect" >> beam.combiners.ToList()
     | "WriteMetrics" >> beam.Map(lambda results, refused: refused or write_a_outputs(out, results, model_name),
                                  refused))
    run_checked(pipeline, model_path)
    return output_path(out)
