"""``imagenet-cp evaluate``: run a model over a built release with Beam's RunInference, and score it.

One graph for every ImageNet-C edition and for ImageNet-P: the conditions and sequences are
listed by :mod:`pipelines.evaluation.release_inputs` and :mod:`pipelines.evaluation.p_sequences`
(the JPEG or ``.npy`` tree, or the TFDS records, of the edition ``release.json`` names), each
image or frame goes to the model as its edition's evaluator feeds it
(:mod:`pipelines.evaluation.model_input`), and :mod:`pipelines.evaluation.scores` writes the
files. A packaged ImageNet-A or ImageNet-O set goes to :mod:`pipelines.beam.evaluate_a_o`.

Labels are the class folder's index among the edition's classes (the sorted 1000 ImageNet wnids,
Tiny ImageNet's 200), or the ``labels.npy`` row of the ``.npy`` editions.

Outputs, under ``OUT`` (default ``DIR-evaluations/<model file stem>`` beside ``DIR``, which leaves
the release and its ``SHA256SUMS`` untouched)::

    predictions/<tree>/<corruption>_<severity>.jsonl   {"key", "label", "top5"} per image (<tree>:
                                                        imagenet-c for the 224 ImageNet-C/ tree)
    predictions/<tree>/clean.jsonl                      the same, on the clean config
    predictions/imagenet-p/<set>.jsonl                  {"key", "label", "top5": T x 5} per video
    imagenet-c-errors.json        errors per corruption and severity (``imagenet-cp metrics --errors``)
    imagenet-p-predictions.npz    top-5 classes per set, (V, T, 5) (``imagenet-cp metrics --flips``)
    metrics.json, report.md, plots/*.png

Every file is sorted by key, so equal predictions give equal bytes whatever the runner. The
release and ``OUT`` may lie on any file system :mod:`pipelines.formats.storage` reaches (a local disk,
``s3://``, ``gs://``); Beam options such as ``--s3_endpoint_url`` configure it.
"""
from __future__ import annotations

import apache_beam as beam
import numpy as np

from metrics.imagenet_p import parse_sequence_set, top_k_classes
from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.release import C_TREE, P_TREE, TFDS_DIR, json_line

from pipelines.beam.evaluate_a_o import evaluate_adversarial
from pipelines.beam.inference import PredictLogits, count_refused, model_handler, run_checked, threads_per_worker
from pipelines.beam.runner import make_pipeline
from pipelines.evaluation.model_input import frame_model_input, image_model_input, model_input
from pipelines.evaluation.models import A_CLASSES, P_TREE_CLASSES, check_model, key_text, read_item, trial_batch
from pipelines.evaluation.p_sequences import npy_sequences, p_sets, p_tree, sequence_frames
from pipelines.evaluation.release_inputs import (adversarial_tree, c_configs, c_examples, c_release,
                                                 labelled_paths, tree_labels)
from pipelines.evaluation.scores import (PREDICTIONS_DIR, default_output, model_name_of, output_path,
                                         write_evaluation)
from pipelines.formats import storage

PREDICTION_FOLDERS = {C_TREE: "imagenet-c", P_TREE: "imagenet-p"}
"""Folders below ``predictions/`` of the 224 trees: the benchmarks' names, as before the trees became
``ImageNet-C/`` and ``ImageNet-P/``; another edition's ImageNet-C predictions are named by its tree."""


class PredictTop5(beam.PTransform):
    """``(id, image)`` -> ``(id, top-5 classes)``: model input, RunInference, top-5 of the logits.

    The ids whose logits are not finite leave through :attr:`nonfinite` (a PCollection after expansion)."""

    def __init__(self, handler, to_input=model_input):
        super().__init__()
        self._handler, self._to_input = handler, to_input
        self.nonfinite = None

    def expand(self, images):
        to_input = self._to_input
        predict = PredictLogits(self._handler)
        logits = (images
                  | "ToModelInput" >> beam.MapTuple(lambda key, image: (key, to_input(image)))
                  | "RunInference" >> predict)
        self.nonfinite = predict.nonfinite
        return logits | "TopFive" >> beam.MapTuple(lambda key, row: (key, top_k_classes(row).tolist()))


class PredictImageNetC(beam.PTransform):
    """ImageNet-C conditions of any edition -> ``(config name, [(key, label, top5), ...])`` per config."""

    def __init__(self, configs, release_dir, c, handler):
        super().__init__()
        self._configs, self._release_dir, self._c, self._handler = configs, release_dir, c, handler
        self.nonfinite = None

    def expand(self, pipeline):
        labels = tree_labels(self._release_dir, self._c)
        predict = PredictTop5(self._handler, image_model_input(self._c.edition))
        top5 = (pipeline
                | "ListConfigs" >> beam.Create(self._configs)
                | "ListImages" >> beam.FlatMap(c_examples, self._release_dir, self._c, labels)
                | "Spread" >> beam.Reshuffle()
                | "ReadImages" >> beam.MapTuple(lambda key, item: (key, read_item(item)))
                | "Predict" >> predict)
        self.nonfinite = predict.nonfinite
        return (top5
                | "ByConfig" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], key[2], top5)))
                | "GroupConfigs" >> beam.GroupByKey())


def _video_frames(video):
    key, locator = video
    for index, frame in enumerate(sequence_frames(locator)):
        yield (key, index), frame


def _list_sequences(p_set, release_dir):
    """``((set, key, label), locator)`` of every sequence of ``p_set`` (a PSet, or its ``(name, path)``)."""
    name, path = p_set[:2]
    items = npy_sequences(release_dir, name, path) if path.endswith(".npy") else labelled_paths(path, ".mp4")
    return [((name, key, label), locator) for key, label, locator in items]


def _assemble_video(video_key, frames):
    top5 = [classes for _, classes in sorted(frames)]
    set_name, key, label = video_key
    return set_name, (key, label, top5)


class PredictImageNetP(beam.PTransform):
    """ImageNet-P set folders -> ``(set name, [(key, label, T x 5 classes), ...])`` per set."""

    def __init__(self, sets, handler, release_dir=""):
        super().__init__()
        self._sets, self._handler, self._release_dir = sets, handler, release_dir
        self.nonfinite = None

    def expand(self, pipeline):
        edition = self._sets[0].edition if self._sets else get_edition(DEFAULT_EDITION)
        predict = PredictTop5(self._handler, frame_model_input(edition))
        top5 = (pipeline
                | "ListSets" >> beam.Create([(p_set.name, p_set.path) for p_set in self._sets])
                | "ListVideos" >> beam.FlatMap(_list_sequences, self._release_dir)
                | "Spread" >> beam.Reshuffle()
                | "DecodeFrames" >> beam.FlatMap(_video_frames)
                | "Predict" >> predict)
        self.nonfinite = predict.nonfinite
        return (top5
                | "ByVideo" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], top5)))
                | "GroupFrames" >> beam.GroupByKey()
                | "AssembleVideos" >> beam.MapTuple(_assemble_video)
                | "GroupSets" >> beam.GroupByKey())


def write_jsonl(out_dir: str, relative: str, rows) -> None:
    """``{"key", "label", "top5"}`` rows, sorted, as one JSON-lines file written atomically."""
    text = "".join(json_line({"key": k, "label": l, "top5": t}) for k, l, t in sorted(rows))
    storage.write_atomic(out_dir, relative, text.encode("utf-8"))


class _WriteConfigPredictionsFn(beam.DoFn):
    """Sink: one sorted JSON-lines file per C config; emits ``(config, top-1 error)``."""

    def __init__(self, out_dir: str, tree: str):
        self._out_dir, self._tree = out_dir, tree

    def process(self, element, refused=0):
        if refused:  # a model that gave NaN or infinite logits: nothing is written
            return
        name, rows = element
        rows = sorted(rows)
        write_jsonl(self._out_dir, f"{PREDICTIONS_DIR}/{PREDICTION_FOLDERS.get(self._tree, self._tree)}/{name}.jsonl", rows)
        wrong = sum(top5[0] != label for _, label, top5 in rows)
        yield name, wrong / len(rows)


class _WriteSetPredictionsFn(beam.DoFn):
    """Sink: one sorted JSON-lines file per P set; emits ``(set, (V, T, 5) int array)``."""

    def __init__(self, out_dir: str):
        self._out_dir = out_dir

    def process(self, element, refused=0):
        if refused:
            return
        name, rows = element
        rows = sorted(rows)
        write_jsonl(self._out_dir, f"{PREDICTIONS_DIR}/{PREDICTION_FOLDERS[P_TREE]}/{name}.jsonl", rows)
        lengths = {len(top5) for _, _, top5 in rows}
        if len(lengths) != 1:
            raise ValueError(f"{name}: videos differ in frame count {sorted(lengths)}")
        yield name, np.asarray([top5 for _, _, top5 in rows], dtype=np.int16)


def check_evaluation_model(model_path, framework, release_dir, c, configs, sets) -> None:
    """:func:`pipelines.evaluation.models.check_model` on the first images of the run (C) or the
    first frames of its first sequence (P)."""
    if configs:
        items = c_examples(configs[0], release_dir, c, tree_labels(release_dir, c))
        trial = trial_batch(((key_text(key), item) for key, item in items), image_model_input(c.edition))
        check_model(model_path, framework, c.edition.image_size, (c.layout.num_classes,),
                    f"the {c.layout.tree} release", trial)
    if sets:
        edition = sets[0].edition
        (key, locator), = _list_sequences(sets[0], release_dir)[:1]
        frames = sequence_frames(locator)[:2]
        trial = trial_batch(((f"{key_text(key)}#{i}", frame) for i, frame in enumerate(frames)),
                            frame_model_input(edition))
        tree = p_tree(release_dir)[0]
        check_model(model_path, framework, edition.image_size, (P_TREE_CLASSES.get(tree, A_CLASSES),),
                    f"the {tree} release", trial)


def _nothing_to_evaluate(release_dir: str, c, source: str) -> str:
    if c.edition.name == DEFAULT_EDITION:
        return f"{release_dir} holds no {C_TREE}/ tree, {TFDS_DIR}/ ImageNet-C records or {P_TREE}/ tree"
    where = f"{c.layout.tree}/" if source == "tree" else f"{TFDS_DIR}/{c.layout.tfds.dataset}/"
    return f"{release_dir}: {where} holds no corruption of the {c.edition.name} edition"


def evaluate_release(release_dir: str, model_path: str, out_dir: str | None = None,
                     framework: str | None = None, source: str = "auto", clean_error=None,
                     baseline=None, flip_baseline=None, batch_size: int = 32,
                     workers: int | None = None, beam_args=(), in_distribution: str | None = None):
    """Run ``model_path`` over the release in ``release_dir`` and write predictions, metrics, report.

    Parameters
    ----------
    source : str
        ``"tree"`` (JPEG or ``.npy`` tree), ``"tfds"`` (TFDS records) or ``"auto"`` (the tree when present).
    clean_error : float, optional
        The model's clean top-1 error (fraction), for Relative CE; by default it is measured on
        the release's clean config (when it has one). ``metrics.json`` records which was used.
    baseline : schemas.baselines.ErrorBaseline, optional
        ImageNet-C normaliser (AlexNet's errors by default at 224; none by default for the other editions).
    flip_baseline : mapping, optional
        ImageNet-P baseline ``{perturbation: {"flip_probability", "top5_distance"}}``.
    workers, beam_args
        Local worker processes, and Beam options (a ``--runner`` runs elsewhere); see
        ``pipelines.beam.runner.make_pipeline``.
    in_distribution : str, optional
        ImageNet-O only (and required there): an ImageNet val folder or tar, or a release with a
        clean config, whose images of the 200 ImageNet-O classes are the negatives.

    Returns
    -------
    pathlib.Path or str
        The output folder: a Path when it is local, its URL otherwise.

    Raises
    ------
    ValueError
        When the release holds neither ImageNet-C nor ImageNet-P data, or on a bad ``source``.
    """
    from schemas.baselines import ALEXNET_IMAGENET_C

    storage.configure(beam_args)
    tree = adversarial_tree(release_dir)
    if tree is not None:  # a packaged ImageNet-A or -O set (package-a, package-o)
        return evaluate_adversarial(release_dir, tree, model_path, out_dir, framework, batch_size, workers,
                                    beam_args, in_distribution)
    if in_distribution is not None:
        raise ValueError("--in-distribution applies to ImageNet-O releases only (a package-o folder)")
    c = c_release(release_dir)
    configs = c_configs(release_dir, c, source)
    sets = p_sets(release_dir)
    for p_set in sets:
        parse_sequence_set(p_set.name)
    if not configs and not sets:
        raise ValueError(_nothing_to_evaluate(release_dir, c, "tree" if source == "tree" else "tfds"))
    if c.edition.name == DEFAULT_EDITION:
        baseline = baseline or ALEXNET_IMAGENET_C
    check_evaluation_model(model_path, framework, release_dir, c, configs, sets)
    out = str(out_dir or default_output(release_dir, model_path))
    handler = model_handler(model_path, framework, batch_size, threads_per_worker(workers, beam_args))
    pipeline = make_pipeline(workers, beam_args)
    predict_c = PredictImageNetC(configs, release_dir, c, handler)
    predict_p = PredictImageNetP(sets, handler, release_dir)
    c_rows = pipeline | "ImageNetC" >> predict_c if configs else None
    p_rows = pipeline | "ImageNetP" >> predict_p if sets else None
    refused = count_refused(pipeline, [p.nonfinite for p in (predict_c, predict_p) if p.nonfinite is not None])
    errors = (c_rows | "WriteCPredictions" >> beam.ParDo(_WriteConfigPredictionsFn(out, c.layout.tree), refused)
              | "CollectErrors" >> beam.combiners.ToList()) if configs else None
    flips = (p_rows | "WritePPredictions" >> beam.ParDo(_WriteSetPredictionsFn(out), refused)
             | "CollectSets" >> beam.combiners.ToList()) if sets else None
    (pipeline
     | "Output" >> beam.Create([out])
     | "WriteMetricsAndReport" >> beam.Map(
         _write_unless_refused,
         config_errors=beam.pvalue.AsSingleton(errors) if errors is not None else [],
         set_predictions=beam.pvalue.AsSingleton(flips) if flips is not None else [],
         refused=refused, model_name=model_name_of(model_path), clean_error=clean_error, baseline=baseline,
         flip_baseline=flip_baseline, edition=c.edition, layout=c.layout))
    run_checked(pipeline, model_path)
    return output_path(out)


def _write_unless_refused(out, refused, **outputs):
    if not refused:
        write_evaluation(out, **outputs)
