"""``imagenet-cp evaluate`` on a VCR release: predictions, curves against Delta v, areas, HMRI / MRSI.

Flow: the release's manifest lists every example (and its clean crop); Beam RunInference predicts
every PNG (:class:`pipelines.beam.evaluate.PredictTop5`); :mod:`pipelines.evaluation.vcr_scores`
turns the predictions into curves, areas and HMRI / MRSI (refused without a human file).

Outputs under ``OUT`` (default ``DIR-evaluations/<model file stem>``)::

    predictions/vcr/<group>.jsonl   {"key", "label", "top5"} per example (group: corruption or clean)
    metrics.json                    settings, formulas, per-corruption bins, spline knots, areas
    curves.npz                      the monotone curves on the 10,000-point grid
    report.md, plots/vcr_*.png
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import apache_beam as beam
import numpy as np

from metrics.vcr import curve_grid
from transforms import preprocess
from schemas.release import RELEASE_JSON, Release, VcrSettings, dumps
from schemas.vcr import CLEAN, FORMULAS, SPLINE_DEGREE, CURVE_POINTS, VCR_TREE

from pipelines.beam.evaluate import PredictTop5
from pipelines.beam.inference import Model, count_refused, model_handler, threads_per_worker
from pipelines.beam.prediction_parts import (C_TABLE, EVALUATION_COUNTERS, CommitPredictionsFn, c_record,
                                             committed_keys, committed_names, evaluation_identity, run_resumable,
                                             write_config_file)
from pipelines.beam.progress import ProgressCounter
from pipelines.beam.runner import RunOptions, make_pipeline
from pipelines.evaluation.model_input import A_SIDE, model_input
from pipelines.evaluation.models import IMAGENET_CLASSES, check_model, infer_framework, trial_batch
from pipelines.evaluation.release_inputs import release_document
from pipelines.evaluation.scores import (METRICS_FILE, PREDICTIONS_DIR, default_output, model_name_of,
                                         move_to_output, output_path)
from pipelines.evaluation.vcr_human import HumanFile, load_human
from pipelines.evaluation.vcr_scores import (CURVES_FILE, REFUSED, analyse, analysis_settings, is_vcr_release,
                                             plot_curves, read_predictions,
                                             read_vcr_manifest, write_report)
from pipelines.formats import storage
from pipelines.formats.parts import PART_RECORDS, PART_SECONDS

__all__ = ["PredictVcr", "evaluate_vcr"]


class _WriteGroupPredictionsFn(beam.DoFn):
    """Sink: ``(table, [runs])`` of a group -> ``predictions/vcr/<group>.jsonl`` sorted by key,
    merged from the committed runs (:mod:`pipelines.beam.prediction_parts`); emits the group."""

    def __init__(self, scratch: str, out_dir: str):
        self._scratch, self._out_dir = scratch, out_dir

    def process(self, element, refused=0):
        table, runs = element
        runs = sorted({tuple(run) for run in runs})
        if refused or not runs:  # a model that gave NaN or infinite logits: nothing is written
            return
        group = table[len(C_TABLE):]
        write_config_file(self._scratch, self._out_dir, f"{PREDICTIONS_DIR}/{VCR_TREE}/{group}.jsonl", table, runs)
        yield group


class PredictVcr(beam.PTransform):
    """``[(group, key, label, path)]`` -> predictions files, one per group; emits the group names.

    Each prediction is committed in a part in ``scratch`` (the examples ``committed`` already
    holds are left out of ``examples`` by the caller)."""

    def __init__(self, examples, handler, out_dir: str, native: bool = False, scratch: str = "",
                 committed=(), progress_dir=None, part_limits=(PART_RECORDS, PART_SECONDS)):
        super().__init__()
        self._examples, self._handler, self._out_dir = examples, handler, out_dir
        self._native, self._scratch, self._committed = native, scratch, list(committed)
        self._progress_dir, self._part_limits = progress_dir, part_limits

    def expand(self, pipeline):
        images = (pipeline
                  | "ListExamples" >> beam.Create(self._examples)
                  | "Spread" >> beam.Reshuffle()
                  | "ReadPngs" >> beam.Map(lambda e: ((e[0], e[1], e[2]), storage.read_bytes(e[3]))))
        if self._native:  # native-size images: the model sees Resize(256) + CenterCrop(224), as in VCR
            images = images | "Resize256Crop224" >> beam.MapTuple(lambda key, data: (key, preprocess(data)))
        predict = PredictTop5(self._handler)
        top5 = images | "Predict" >> predict
        refused = count_refused(pipeline, [predict.nonfinite])
        names = top5 | "CommitPredictions" >> beam.ParDo(
            CommitPredictionsFn(self._scratch, c_record, self._progress_dir, *self._part_limits))
        earlier = pipeline | "CommittedParts" >> beam.Create(self._committed, reshuffle=False)
        return ((names, earlier)
                | "AllParts" >> beam.Flatten()
                | "GroupPartsByGroup" >> beam.GroupByKey()
                | "WritePredictions" >> beam.ParDo(_WriteGroupPredictionsFn(self._scratch, self._out_dir), refused))


def _dv_resolution(release: Release) -> Optional[str]:
    """``config.dv_resolution`` of a VCR release (None where it records none)."""
    return release.config.dv_resolution if isinstance(release.config, VcrSettings) else None


def evaluate_vcr(release_dir: str, model: Model, out_dir: Optional[str] = None,
                 human_file: HumanFile = HumanFile(),
                 settings: Optional[dict] = None, run: RunOptions = RunOptions()) -> Path:
    """Evaluate a model on a VCR release; see the module docstring for the outputs.

    The predictions are committed in parts (:mod:`pipelines.beam.prediction_parts`): the same call
    after an interruption predicts only the examples that are missing; ``run`` is that of
    :func:`pipelines.beam.evaluate.evaluate_release`. ``human_file``: the human file to compare with
    (none by default); ``settings``: :func:`pipelines.evaluation.vcr_scores.analysis_settings`'s by default.

    Raises
    ------
    ValueError
        When ``release_dir`` is no VCR release, on bad settings, or on a bad human file (checked
        before any prediction is made).
    """
    model_path, framework, batch_size = model.path, model.framework, model.batch_size
    workers, beam_args, part_records, part_seconds = run.workers, run.beam_args, run.part_records, run.part_seconds
    human_path, human_meta, min_trials = human_file.path, human_file.meta, human_file.min_trials
    stream = run.out
    if not is_vcr_release(release_dir):
        raise ValueError(f"{release_dir} is not a VCR release (its {RELEASE_JSON} does not name edition 'vcr')")
    release = release_document(release_dir)
    settings = settings or analysis_settings()
    human = (load_human(human_path, _dv_resolution(release), settings, human_meta, min_trials)
             if human_path else None)
    rows = read_vcr_manifest(release_dir)
    if human:
        built = {r.corruption for r in rows}
        unused = sorted(set(human.curves) - built)
        if unused:
            human.warnings.append(f"curves for {', '.join(unused)} left unused: the release has no such examples")
    for warning in human.warnings if human else ():
        print(f"warning: human file: {warning}", file=stream)
    if not rows:
        raise ValueError(f"{release_dir}: the manifest lists no example")
    examples = [(r.corruption, r.key, r.label, storage.join(release_dir, r.path)) for r in rows]
    model_name = model_name_of(model_path)
    out = str(out_dir or default_output(release_dir, model_path))
    native = _dv_resolution(release) == "native"
    to_input = (lambda data: model_input(preprocess(data))) if native else model_input
    check_model(model_path, framework, A_SIDE, (IMAGENET_CLASSES,), "the VCR release",
                trial_batch(((key, path) for _, key, _, path in examples), to_input))
    identity = evaluation_identity(release_dir, model_path, framework or infer_framework(model_path), tree=VCR_TREE,
                                   examples=len(examples))

    def make(scratch, ledger, progress_dir):
        done = committed_keys(scratch, ledger, C_TABLE)
        pending = [example for example in examples if example[:2] not in done]
        counts = {"images_listed": len(pending), "images_skipped": len(examples) - len(pending)}
        listed = ProgressCounter(progress_dir, counters=EVALUATION_COUNTERS)  # for the progress line
        listed.add(**counts)
        listed.flush()
        handler = model_handler(model_path, framework, batch_size, threads_per_worker(workers, beam_args))
        pipeline = make_pipeline(workers, beam_args)
        _ = pipeline | "Vcr" >> PredictVcr(pending, handler, out, native, scratch, committed_names(ledger),
                                           progress_dir, (part_records, part_seconds))
        return pipeline, counts

    run_resumable(out, identity, model_path, beam_args, make, run.force, run.progress_interval, stream)
    groups = sorted({r.corruption for r in rows})
    predictions = read_predictions(out, groups)
    section, curves = analyse(rows, predictions, settings, human)
    clean = [r for r in rows if r.corruption == CLEAN]
    deviations = [f"empty_bin={settings['empty_bin']}"] * (settings["empty_bin"] != "zero") + \
                 [f"knots={settings['knots']}"] * (settings["knots"] != "left")
    document = {
        "model": model_name, "release": str(release_dir), "edition": VCR_TREE,
        "release_config": release.config.to_json() if release.config else None,
        "settings": {**settings, "degree": SPLINE_DEGREE, "curve_points": CURVE_POINTS,
                     "grid": f"j / {CURVE_POINTS}, j = 0..{CURVE_POINTS - 1}", "bin_rule": "i/n < delta_v < (i+1)/n",
                     "deviations": deviations},
        "formulas": dict(FORMULAS),
        "clean_accuracy": float(np.mean([predictions[r.key] == r.label for r in clean])) if clean else None,
        "clean_examples": len(clean),
        "human": human.describe() if human else None,
        "human_relative": "computed" if human else REFUSED,
        "corruptions": section,
    }
    with tempfile.TemporaryDirectory() as local:
        staged = Path(local)
        (staged / METRICS_FILE).write_text(dumps(document), encoding="utf-8")
        np.savez(staged / CURVES_FILE, t=curve_grid(), **curves)
        write_report(document, plot_curves(section, curves, human, settings, staged), staged)
        move_to_output(staged, out)
    return output_path(out)
