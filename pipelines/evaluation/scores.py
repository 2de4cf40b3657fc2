"""The scores and files of an evaluation, from its predictions: ``metrics.json``, the errors and
flips files, ``report.md``; and where an evaluation goes by default.

ImageNet-C at 224 is scored against a baseline (AlexNet's errors by default: CE, mCE, Relative
mCE). The other editions have no AlexNet baseline at their sizes, so their summary is the
unnormalised mean error and accuracy over the benchmark corruptions and severities, as
RobustBench reports them; with an explicit baseline the CE/mCE summary is added. Every file is
written in a local folder, then moved to the output folder atomically, wherever it lies.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from metrics.imagenet_c import summarize_imagenet_c
from metrics.imagenet_p import flip_probability_by_offset, parse_sequence_set, summarize_imagenet_p
from schemas.baselines import ErrorBaseline
from schemas.edition import Edition, Layout
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, SEVERITIES
from schemas.release import CLEAN, dumps

from pipelines.evaluation.metrics_files import ERRORS_FILE, FLIPS_FILE, write_errors, write_flips
from pipelines.evaluation.release_inputs import parse_config
from pipelines.evaluation.report import REPORT_FILE, clean_error_text, write_report
from pipelines.formats import storage

__all__ = ["EVALUATIONS_SUFFIX", "METRICS_FILE", "PREDICTIONS_DIR", "CLEAN_SOURCES", "default_output",
           "model_name_of", "output_path", "choose_clean_error", "imagenet_c_section", "unnormalised_summary",
           "edition_c_section", "edition_report", "imagenet_p_section", "move_to_output", "ScoreBaselines", "write_evaluation"]

EVALUATIONS_SUFFIX = "-evaluations"
METRICS_FILE = "metrics.json"
PREDICTIONS_DIR = "predictions"

CLEAN_SOURCES = ("given", "clean_config")
"""Where an evaluation's clean error comes from: given by the caller (``--clean-error``), or
measured on the release's clean config."""


def default_output(release_dir: str, model_path: str) -> str:
    """``DIR-evaluations/<model file stem>``, beside the release directory ``DIR`` (an absolute
    path for a local release, a URL on an object store)."""
    if storage.is_local(release_dir):
        release = Path(os.path.abspath(release_dir))
        return str(release.with_name(release.name + EVALUATIONS_SUFFIX) / model_name_of(model_path))
    return storage.join(release_dir.rstrip("/") + EVALUATIONS_SUFFIX, model_name_of(model_path))


def model_name_of(model_path: str) -> str:
    """A model's name: its file name without the extension."""
    return Path(storage.basename(model_path.rstrip("/"))).stem


def output_path(out_dir: str):
    """The output folder as evaluate returns it: a ``pathlib.Path`` when local, its URL otherwise."""
    return Path(out_dir) if storage.is_local(out_dir) else out_dir


def choose_clean_error(given, measured) -> dict:
    """The clean error Relative CE uses: ``given`` when not None, else ``measured``.

    Parameters
    ----------
    given : float or None
        The caller's clean error (fraction), e.g. ``--clean-error``.
    measured : float or None
        The model's top-1 error on the release's clean config (fraction), None without one.

    Returns
    -------
    dict
        ``error`` (the chosen fraction or None), ``source`` (one of :data:`CLEAN_SOURCES`, or None
        when there is no clean error) and ``measured``.
    """
    source = "given" if given is not None else ("clean_config" if measured is not None else None)
    return {"error": given if given is not None else measured, "source": source, "measured": measured}


def _split_errors(config_errors) -> tuple[dict, object]:
    """``{corruption: {"severity": error}}`` and the clean config's error (None without one)."""
    errors: dict = {}
    measured = None
    for name, error in config_errors:
        if name == CLEAN:
            measured = error
            continue
        corruption, severity = parse_config(name)
        errors.setdefault(corruption, {})[str(severity)] = error
    return errors, measured


def _complete(errors: dict) -> dict:
    """The corruptions with all 5 severities: ``{corruption: [error per severity]}``."""
    return {c: [e[str(s)] for s in SEVERITIES] for c, e in errors.items() if len(e) == len(SEVERITIES)}


def imagenet_c_section(config_errors, clean_error, baseline):
    """Errors per corruption and severity, the clean error (given, else measured on the clean
    config), and the summary over corruptions with all 5 severities."""
    errors, measured = _split_errors(config_errors)
    clean = choose_clean_error(clean_error, measured)
    complete = _complete(errors)
    summary = (summarize_imagenet_c(complete, clean["error"], baseline, allow_incomplete=True)
               if complete else None)
    return {"errors": {c: dict(sorted(e.items())) for c, e in sorted(errors.items())},
            "clean": clean, "summary": summary}, complete


def unnormalised_summary(errors: dict) -> dict:
    """Mean top-1 error and accuracy over the benchmark corruptions and severities present
    (RobustBench's corruption accuracy), per corruption too, and the extras' mean apart."""
    per_corruption = {c: float(np.mean(list(e.values()))) for c, e in errors.items()}
    benchmark = [e for c, es in errors.items() if c in BENCHMARK_CORRUPTIONS for e in es.values()]
    extra = [e for c, es in errors.items() if c not in BENCHMARK_CORRUPTIONS for e in es.values()]
    mean_error = float(np.mean(benchmark)) if benchmark else None
    return {"mean_error": mean_error, "mean_accuracy": None if mean_error is None else 1 - mean_error,
            "benchmark_corruptions": sorted(c for c in errors if c in BENCHMARK_CORRUPTIONS),
            "extra_mean_error": float(np.mean(extra)) if extra else None,
            "corruption_error": dict(sorted(per_corruption.items()))}


def edition_c_section(config_errors, edition: Edition, layout: Layout, clean_error=None, baseline=None):
    """The ``imagenet_c`` section of an edition other than 224 (unnormalised summary; the CE/mCE
    summary too with an explicit ``baseline``), and the complete corruptions."""
    errors, measured = _split_errors(config_errors)
    errors = {c: dict(sorted(errors[c].items())) for c in CORRUPTIONS if c in errors}
    clean = choose_clean_error(clean_error, measured)
    section = {"edition": edition.name, "tree": layout.tree, "errors": errors, "clean": clean,
               "summary": unnormalised_summary(errors)}
    complete = _complete(errors)
    if baseline is not None and complete:
        section["normalised_summary"] = summarize_imagenet_c(complete, clean["error"], baseline,
                                                             allow_incomplete=True)
    return section, complete


def edition_report(document: dict) -> str:
    """``report.md`` of an edition's ImageNet-C evaluation."""
    section = document["imagenet_c"]
    summary = section["summary"]

    def percent(value):
        return "—" if value is None else f"{100 * value:.2f}"

    lines = [f"# {document['model']} on {section['tree']} ({section['edition']} edition)", "",
             f"Mean corruption error (unnormalised, benchmark corruptions): {percent(summary['mean_error'])} %; "
             f"accuracy {percent(summary['mean_accuracy'])} %.", "",
             f"Clean error: {clean_error_text(section['clean'])}.",
             "", "| corruption | " + " | ".join(f"s{s}" for s in SEVERITIES) + " | mean |",
             "|---|" + "---|" * (len(SEVERITIES) + 1)]
    for corruption, by_severity in section["errors"].items():
        cells = [f"{100 * by_severity[str(s)]:.1f}" if str(s) in by_severity else "—" for s in SEVERITIES]
        lines.append(f"| {corruption} | " + " | ".join(cells) + f" | {100 * summary['corruption_error'][corruption]:.1f} |")
    return "\n".join(lines) + "\n"


def imagenet_p_section(set_predictions, flip_baseline):
    """Unnormalised and normalised ImageNet-P metrics, plus flip probability per frame offset."""
    predictions = dict(set_predictions)
    offsets = {name: flip_probability_by_offset(array, parse_sequence_set(name)[0]).tolist()
               for name, array in sorted(predictions.items())}
    summary = summarize_imagenet_p(predictions, flip_baseline, allow_incomplete=True)
    return {"summary": summary, "flip_probability_by_offset": offsets}, predictions


def move_to_output(local: Path, out_dir: str) -> None:
    """Move every file below the local folder ``local`` to ``out_dir`` (any file system), each atomically."""
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        storage.write_atomic(out_dir, path.relative_to(local).as_posix(), path.read_bytes())


@dataclass(frozen=True)
class ScoreBaselines:
    """What a C / P evaluation's scores are measured against.

    Attributes
    ----------
    clean_error : float, optional
        The model's clean top-1 error (fraction), for Relative CE; None: measured on the release's
        clean config (when it has one).
    baseline : ErrorBaseline, optional
        ImageNet-C normaliser: it normalises the 224 edition's errors (AlexNet's when None there);
        for the other editions it is used only when given (see the module docstring).
    flip_baseline : mapping, optional
        ImageNet-P baseline ``{perturbation: {"flip_probability", "top5_distance"}}``.
    """

    clean_error: Optional[float] = None
    baseline: Optional[ErrorBaseline] = None
    flip_baseline: Optional[Mapping[str, Any]] = None


def write_evaluation(out_dir: str, config_errors, set_predictions, model_name: str, baselines: ScoreBaselines,
                     edition: Edition, layout: Layout) -> None:
    """Sink: the errors and flips files, ``metrics.json`` and the report of a C / P evaluation
    (``baselines``: see :class:`ScoreBaselines`)."""
    clean_error, baseline, flip_baseline = baselines.clean_error, baselines.baseline, baselines.flip_baseline
    document = {"model": model_name}
    with tempfile.TemporaryDirectory() as local:
        out = Path(local)
        if edition.scoring.paper_metrics:
            if config_errors:
                document["imagenet_c"], complete = imagenet_c_section(config_errors, clean_error, baseline)
                write_errors(out / ERRORS_FILE, complete, document["imagenet_c"]["clean"]["error"])
            if set_predictions:
                document["imagenet_p"], predictions = imagenet_p_section(set_predictions, flip_baseline)
                write_flips(out / FLIPS_FILE, predictions)
            (out / METRICS_FILE).write_text(dumps(document))
            write_report(document, out, baseline)
        else:
            document["imagenet_c"], complete = edition_c_section(config_errors, edition, layout, clean_error,
                                                                 baseline)
            if complete:
                write_errors(out / ERRORS_FILE, complete, document["imagenet_c"]["clean"]["error"])
            (out / METRICS_FILE).write_text(dumps(document))
            (out / REPORT_FILE).write_text(edition_report(document))
        move_to_output(out, out_dir)
