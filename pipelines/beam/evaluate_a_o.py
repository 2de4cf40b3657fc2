"""``imagenet-cp evaluate`` on a packaged ImageNet-A or ImageNet-O set (``imagenet-a/<wnid>/<file>``,
``imagenet-o/<wnid>/<file>``): the Beam graph.

The reference evaluation (``natural-adv-examples/eval.py``): Resize(256), CenterCrop(224),
ImageNet mean/std (:func:`pipelines.evaluation.model_input.model_input_a`), one prediction per
image, through the same pluggable Beam model handlers as the C/P evaluation; the files are
those of :mod:`pipelines.evaluation.imagenet_a`, on any file system.

ImageNet-O adds its negatives, the ImageNet validation images of its 200 classes
(:func:`pipelines.evaluation.release_inputs.in_distribution`): val images go through the same
Resize(256), CenterCrop(224); a release's clean config, already resized and cropped to 224, through
:func:`pipelines.evaluation.model_input.model_input` (CenterCrop(224), a no-op, and the same
mean/std). Each element is ``((part, key, label), item, input kind)``.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import apache_beam as beam

from schemas.adversarial import O_TREE
from schemas.records import SourceEntry

from pipelines.beam.inference import Model, PredictLogits, count_refused, model_handler, threads_per_worker
from pipelines.beam.prediction_parts import (EVALUATION_COUNTERS, CommitPredictionsFn, a_record, committed_keys,
                                             committed_names, evaluation_identity, local_place, read_logits,
                                             run_resumable)
from pipelines.beam.progress import ProgressCounter
from pipelines.beam.runner import RunOptions, make_pipeline
from pipelines.evaluation.imagenet_a import IN_DISTRIBUTION, write_a_outputs, write_o_outputs
from pipelines.evaluation.model_input import A_SIDE, model_input, model_input_a
from pipelines.evaluation.models import A_CLASSES, check_model, infer_framework, read_item, trial_batch
from pipelines.evaluation.release_inputs import adversarial_files, in_distribution
from pipelines.evaluation.scores import default_output, model_name_of, output_path
from pipelines.inputs.listing import read_entry

__all__ = ["MODEL_INPUTS", "evaluate_adversarial"]

MODEL_INPUTS = {"resize_crop": model_input_a, "clean_config": model_input}
"""How each kind of image becomes model input: raw images (the packaged set, ImageNet val) are
resized and cropped; a release's clean config is 224 already."""


def _read(element):
    part_key, item, kind = element
    data = read_entry(item) if isinstance(item, SourceEntry) else read_item(item)
    return part_key, MODEL_INPUTS[kind](data)


def _elements(files, part: str, kind: str) -> list:
    return [((part, key, label), item, kind) for key, label, item in files]


def _o_negatives(tree: str, in_distribution_path: Optional[str]):
    """ImageNet-O's in-distribution images, or a one-line ValueError when they do not apply."""
    if tree != O_TREE:
        if in_distribution_path is not None:
            raise ValueError(f"--in-distribution applies to ImageNet-O releases only; this one holds {tree}/")
        return None
    if in_distribution_path is None:
        raise ValueError("an ImageNet-O release is scored against ImageNet validation images of its 200 classes: "
                         "pass --in-distribution (an ImageNet val folder or tar, or a release with a clean config)")
    return in_distribution(in_distribution_path)


def evaluate_adversarial(release_dir: str, tree: str, model: Model, out_dir: Optional[str] = None,
                         in_distribution_path: Optional[str] = None, run: RunOptions = RunOptions()):
    """Run ``model`` over the packaged ImageNet-A or -O set ``tree`` in ``release_dir`` (and,
    for ImageNet-O, over the in-distribution images of ``in_distribution_path``); return the output folder.

    The logits are committed in parts as they are made (:mod:`pipelines.beam.prediction_parts`):
    the same call after an interruption predicts only the images that are missing. ``run`` is
    that of :func:`pipelines.beam.evaluate.evaluate_release`.

    Raises
    ------
    ValueError
        On an empty or foreign tree, a missing or unusable ``in_distribution_path`` (one line), or
        an output folder that holds an interrupted evaluation of something else.
    pipelines.evaluation.models.ModelError
        When the model does not fit the set.
    """
    model_path, framework, batch_size = model.path, model.framework, model.batch_size
    workers, beam_args, part_records, part_seconds = run.workers, run.beam_args, run.part_records, run.part_seconds
    files = adversarial_files(release_dir, tree)
    negatives = _o_negatives(tree, in_distribution_path)
    check_model(model_path, framework, A_SIDE, (A_CLASSES,), f"the {tree} set",
                trial_batch(((key, path) for key, _, path in files), model_input_a))
    elements = _elements(files, tree, "resize_crop")
    if negatives is not None:
        kind = "clean_config" if negatives.kind == "clean_config" else "resize_crop"
        elements += _elements(negatives.items, IN_DISTRIBUTION, kind)
    model_name = model_name_of(model_path)
    out = str(out_dir or default_output(release_dir, model_path))
    identity = evaluation_identity(
        release_dir, model_path, framework or infer_framework(model_path), tree=tree, images=len(files),
        in_distribution=None if negatives is None else local_place(in_distribution_path),
        in_distribution_images=None if negatives is None else len(negatives.items))
    write = write_a_outputs if negatives is None else partial(write_o_outputs, in_distribution={
        "kind": negatives.kind, "listed": negatives.listed, "unusable": negatives.unusable})

    def make(scratch, ledger, progress_dir):
        done = committed_keys(scratch, ledger)
        pending = [element for element in elements if element[0][:2] not in done]
        counts = {"images_listed": len(pending), "images_skipped": len(elements) - len(pending)}
        listed = ProgressCounter(progress_dir, counters=EVALUATION_COUNTERS)  # for the progress line
        listed.add(**counts)
        listed.flush()
        pipeline = make_pipeline(workers, beam_args, in_threads=True)
        predict = PredictLogits(model_handler(model_path, framework, batch_size,
                                              threads_per_worker(workers, beam_args)))
        names = (pipeline
                 | "ListImages" >> beam.Create(pending)
                 | "Spread" >> beam.Reshuffle()
                 | "ModelInput" >> beam.Map(_read)
                 | "Predict" >> predict
                 | "CommitPredictions" >> beam.ParDo(CommitPredictionsFn(scratch, a_record, progress_dir,
                                                                         part_records, part_seconds)))
        refused = count_refused(pipeline, [predict.nonfinite])
        earlier = pipeline | "CommittedParts" >> beam.Create(committed_names(ledger), reshuffle=False)
        ((names, earlier)
         | "AllParts" >> beam.Flatten()
         | "CollectParts" >> beam.combiners.ToList()
         | "WriteMetrics" >> beam.Map(lambda runs, refused: refused or write(out, read_logits(scratch, runs),
                                                                            model_name), refused))
        return pipeline, counts

    run_resumable(out, identity, model_path, beam_args, make, run.force, run.progress_interval, run.out)
    return output_path(out)
