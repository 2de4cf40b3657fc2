"""``imagenet-cp evaluate`` on a VCR release: predictions, curves against Delta v, areas, HMRI / MRSI.

Flow: the release's manifest lists every example (and its clean crop); Beam RunInference predicts
every PNG (:class:`pipelines.beam.evaluate.PredictTop5`); per corruption, accuracy (top-1 == label) and
prediction consistency (top-1 == the top-1 on the clean crop) are binned by the manifest's
``delta_v`` and turned into curves by :mod:`metrics.vcr`. With a human file
(:mod:`pipelines.evaluation.vcr_human`) the human curves are fitted the same way and HMRI / MRSI are derived,
their formulas written beside them; without one they are refused, never estimated.

Outputs under ``OUT`` (default ``DIR-evaluations/<model file stem>``)::

    predictions/vcr/<group>.jsonl   {"key", "label", "top5"} per example (group: corruption or clean)
    metrics.json                    settings, formulas, per-corruption bins, spline knots, areas
    curves.npz                      the monotone curves on the 10,000-point grid
    report.md, plots/vcr_*.png
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import apache_beam as beam
import numpy as np

from metrics.vcr import compare_curves, curve_grid, performance_curve
from transforms import preprocess
from schemas.editions import release_identity
from schemas.release import RELEASE_JSON, VCR_BENCHMARK, dumps, json_line
from schemas.vcr import BINS, CLEAN, FORMULAS, SMOOTHING, SPLINE_DEGREE, CURVE_POINTS, VCR_TREE

from pipelines.beam.evaluate import METRICS_FILE, PREDICTIONS_DIR, PredictTop5, default_output, read_bytes
from pipelines.beam.inference import model_handler
from pipelines.beam.runner import make_pipeline
from pipelines.beam.vcr import read_manifest
from pipelines.evaluation.vcr_human import HumanCurves, load_human

CURVES_FILE = "curves.npz"
REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
REFUSED = ("refused: no human file was given (--human); HMRI and MRSI compare the model with human curves "
           "and are never estimated without them")
PROPERTIES = ("accuracy", "consistency")


def is_vcr_release(release_dir: str) -> bool:
    """True when ``release_dir/release.json`` names the VCR benchmark (new and old releases)."""
    try:
        document = json.loads(Path(release_dir, RELEASE_JSON).read_text(encoding="utf-8"))
        return release_identity(document).benchmark == VCR_BENCHMARK
    except (OSError, ValueError, AttributeError):
        return False


def analysis_settings(bins: int = BINS, smoothing: float = SMOOTHING, empty_bin: str = "zero",
                      knots: str = "left") -> dict:
    """The fit settings (keyword arguments of :func:`metrics.vcr.performance_curve`), validated."""
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < SPLINE_DEGREE + 1:
        raise ValueError(f"bins must be an int >= {SPLINE_DEGREE + 1}, got {bins!r}")
    if not smoothing >= 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    from schemas.vcr import EMPTY_BIN_MODES, KNOT_MODES

    if empty_bin not in EMPTY_BIN_MODES:
        raise ValueError(f"empty_bin must be one of {', '.join(EMPTY_BIN_MODES)}; got {empty_bin!r}")
    if knots not in KNOT_MODES:
        raise ValueError(f"knots must be one of {', '.join(KNOT_MODES)}; got {knots!r}")
    return {"bins": bins, "smoothing": float(smoothing), "empty_bin": empty_bin, "knots": knots}


class _WriteGroupPredictionsFn(beam.DoFn):
    """Sink: ``(group, [(key, label, top5)])`` -> ``predictions/vcr/<group>.jsonl`` sorted by key."""

    def __init__(self, out_dir: str):
        self._out_dir = out_dir

    def process(self, element):
        group, rows = element
        path = Path(self._out_dir, PREDICTIONS_DIR, VCR_TREE, f"{group}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json_line({"key": k, "label": l, "top5": t}) for k, l, t in sorted(rows))
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        yield group


class PredictVcr(beam.PTransform):
    """``[(group, key, label, path)]`` -> predictions files, one per group; emits the group names."""

    def __init__(self, examples, handler, out_dir: str, native: bool = False):
        super().__init__()
        self._examples, self._handler, self._out_dir = examples, handler, out_dir
        self._native = native

    def expand(self, pipeline):
        images = (pipeline
                  | "ListExamples" >> beam.Create(self._examples)
                  | "Spread" >> beam.Reshuffle()
                  | "ReadPngs" >> beam.Map(lambda e: ((e[0], e[1], e[2]), read_bytes(e[3]))))
        if self._native:  # native-size images: the model sees Resize(256) + CenterCrop(224), as in VCR
            images = images | "Resize256Crop224" >> beam.MapTuple(lambda key, data: (key, preprocess(data)))
        return (images
                | "Predict" >> PredictTop5(self._handler)
                | "ByGroup" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], key[2], top5)))
                | "GroupPredictions" >> beam.GroupByKey()
                | "WritePredictions" >> beam.ParDo(_WriteGroupPredictionsFn(self._out_dir)))


def _read_predictions(out: Path, groups) -> dict:
    predictions = {}
    for group in groups:
        path = out / PREDICTIONS_DIR / VCR_TREE / f"{group}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            predictions[row["key"]] = row["top5"][0]
    return predictions


def _json_values(array) -> list:
    return [None if isinstance(v, float) and np.isnan(v) else v for v in np.asarray(array).tolist()]


def analyse(rows, predictions: dict, settings: dict, human: Optional[HumanCurves] = None) -> tuple[dict, dict]:
    """Per corruption: bins, spline knots, monotone curves and areas; human-relative values when given.

    Returns
    -------
    (dict, dict)
        The ``corruptions`` section of ``metrics.json`` and ``{name: curve}`` for ``curves.npz``.
    """
    clean_top1 = {r["image_key"]: predictions[r["key"]] for r in rows if r["corruption"] == CLEAN}
    by_corruption: dict = {}
    for row in rows:
        if row["corruption"] != CLEAN:
            by_corruption.setdefault(row["corruption"], []).append(row)
    section, curves = {}, {}
    for corruption, examples in sorted(by_corruption.items()):
        dv = np.asarray([r["delta_v"] for r in examples])
        top1 = np.asarray([predictions[r["key"]] for r in examples])
        outcomes = {"accuracy": top1 == np.asarray([r["label"] for r in examples]),
                    "consistency": top1 == np.asarray([clean_top1[r["image_key"]] for r in examples])}
        entry = {"examples": len(examples)}
        for prop in PROPERTIES:
            try:
                fit = performance_curve(dv, outcomes[prop], **settings)
            except ValueError as err:
                entry[prop] = {"error": str(err)}
                continue
            result = {"bins": {"values": _json_values(fit["values"]), "counts": fit["counts"].tolist()},
                      "spline_tck": fit["tck"]}
            curves[f"{corruption}/{prop}/model"] = fit["curve"]
            human_curve = None
            if human is not None and corruption in human.curves:
                human_curve = human.curves[corruption][prop]
            if human is None:
                result.update(compare_curves(fit["curve"]), human_relative=REFUSED)
            elif human_curve is None:
                result.update(compare_curves(fit["curve"]),
                              human_relative=f"not computed: the human file has no {prop} curve for {corruption}")
            else:
                curves[f"{corruption}/{prop}/human"] = human_curve
                result.update(compare_curves(fit["curve"], human_curve))
            entry[prop] = result
        section[corruption] = entry
    return section, curves


def _plot(section: dict, curves: dict, human: Optional[HumanCurves], settings: dict, out: Path) -> list[str]:
    """One PNG per corruption (accuracy and consistency against Delta v, model vs human) and an overview."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = out / PLOTS_DIR
    plots.mkdir(parents=True, exist_ok=True)
    t = curve_grid()
    positions = (np.arange(settings["bins"]) + (0.5 if settings["knots"] == "centre" else 0)) / settings["bins"]
    written = []
    for corruption, entry in section.items():
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
        for ax, prop in zip(axes, PROPERTIES):
            result = entry.get(prop, {})
            if f"{corruption}/{prop}/model" in curves:
                values = np.asarray([np.nan if v is None else v for v in result["bins"]["values"]])
                ax.scatter(positions, values, s=12 + 2 * np.sqrt(result["bins"]["counts"]), color="tab:blue",
                           alpha=0.5, label="model, per bin")
                ax.plot(t, curves[f"{corruption}/{prop}/model"], color="tab:blue",
                        label=f"model (A_m {result['A_m']:.3f})")
            if f"{corruption}/{prop}/human" in curves:
                ax.plot(t, curves[f"{corruption}/{prop}/human"], "--", color="tab:orange",
                        label=f"human (A_h {result['A_h']:.3f}; HMRI {result['HMRI']:.3f})")
            ax.set_title(f"{corruption}: {prop}", fontsize=9)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("Δv = 1 − VIF")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower left")
        axes[0].set_ylabel("rate")
        fig.tight_layout()
        name = f"vcr_{corruption}.png"
        fig.savefig(plots / name, dpi=110)
        plt.close(fig)
        written.append(name)
    fig, ax = plt.subplots(figsize=(6, 4))
    for corruption in section:
        if f"{corruption}/accuracy/model" in curves:
            ax.plot(t, curves[f"{corruption}/accuracy/model"], label=corruption)
    ax.set_xlabel("Δv = 1 − VIF")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plots / "vcr_accuracy_overview.png", dpi=110)
    plt.close(fig)
    return ["vcr_accuracy_overview.png", *written]


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def write_report(document: dict, plots: list[str], out: Path) -> None:
    """``report.md``: settings, the areas table, the formulas and the plots."""
    settings = document["settings"]
    lines = [f"# VCR evaluation: {document['model']}", "",
             f"Release `{document['release']}`; clean accuracy {_fmt(document['clean_accuracy'])} "
             f"on {document['clean_examples']} crops.", "",
             f"Settings: {settings['bins']} bins, UnivariateSpline k={settings['degree']} s={settings['smoothing']}, "
             f"{settings['curve_points']}-point grid, clip, running minimum, trapezoid; empty bins "
             f"`{settings['empty_bin']}`, bin positions `{settings['knots']}`"
             + (f" (deviations from VCR's code: {', '.join(settings['deviations'])})" if settings["deviations"] else "")
             + ".", ""]
    human = document["human"]
    lines += [f"Human reference: `{human['file']}` ({human['form']}, source {human['meta'].get('source')!r}, "
              f"licence {human['meta'].get('licence')!r})." if human else f"Human reference: none. HMRI / MRSI {REFUSED}.",
              ""]
    header = "| corruption | examples | property | A_m | A_h | A_m-h | A_h-m | HMRI | MRSI |"
    lines += [header, "|" + "---|" * 9]
    for corruption, entry in document["corruptions"].items():
        for prop in PROPERTIES:
            r = entry.get(prop, {})
            if "error" in r:
                lines.append(f"| {corruption} | {entry['examples']} | {prop} | {r['error']} |||||||")
                continue
            lines.append(f"| {corruption} | {entry['examples']} | {prop} | {_fmt(r.get('A_m'))} | {_fmt(r.get('A_h'))} | "
                         f"{_fmt(r.get('A_m-h'))} | {_fmt(r.get('A_h-m'))} | {_fmt(r.get('HMRI'))} | "
                         f"{_fmt(r.get('MRSI'))} |")
    lines += ["", "Formulas:", ""] + [f"- {k}: {v}" for k, v in document["formulas"].items()]
    if human and human["warnings"]:
        lines += ["", "Human-file warnings:", ""] + [f"- {w}" for w in human["warnings"]]
    lines += [""] + [f"![{p}]({PLOTS_DIR}/{p})" for p in plots] + [""]
    (out / REPORT_FILE).write_text("\n".join(lines), encoding="utf-8")


def evaluate_vcr(release_dir: str, model_path: str, out_dir: Optional[str] = None, framework: Optional[str] = None,
                 human_path: Optional[str] = None, human_meta: Optional[str] = None, settings: Optional[dict] = None,
                 min_trials: int = 10, batch_size: int = 32, workers: Optional[int] = None, beam_args=(),
                 stream=sys.stderr) -> Path:
    """Evaluate a model on a VCR release; see the module docstring for the outputs.

    Raises
    ------
    ValueError
        When ``release_dir`` is no VCR release, on bad settings, or on a bad human file (checked
        before any prediction is made).
    """
    if not is_vcr_release(release_dir):
        raise ValueError(f"{release_dir} is not a VCR release (its {RELEASE_JSON} does not name edition 'vcr')")
    release = json.loads(Path(release_dir, RELEASE_JSON).read_text(encoding="utf-8"))
    settings = settings or analysis_settings()
    human = (load_human(human_path, release["config"]["dv_resolution"], settings, human_meta, min_trials)
             if human_path else None)
    rows = read_manifest(release_dir)
    if human:
        built = {r["corruption"] for r in rows}
        unused = sorted(set(human.curves) - built)
        if unused:
            human.warnings.append(f"curves for {', '.join(unused)} left unused: the release has no such examples")
    for warning in human.warnings if human else ():
        print(f"warning: human file: {warning}", file=stream)
    if not rows:
        raise ValueError(f"{release_dir}: the manifest lists no example")
    examples = [(r["corruption"], r["key"], r["label"], str(Path(release_dir, r["path"]))) for r in rows]
    model_name = Path(model_path.rstrip("/")).stem
    out = Path(out_dir) if out_dir else default_output(release_dir, model_path)
    out.mkdir(parents=True, exist_ok=True)
    handler = model_handler(model_path, framework, batch_size)
    with make_pipeline(workers, beam_args) as pipeline:
        _ = pipeline | "Vcr" >> PredictVcr(examples, handler, str(out), release["config"]["dv_resolution"] == "native")
    groups = sorted({r["corruption"] for r in rows})
    predictions = _read_predictions(out, groups)
    section, curves = analyse(rows, predictions, settings, human)
    clean = [r for r in rows if r["corruption"] == CLEAN]
    deviations = [f"empty_bin={settings['empty_bin']}"] * (settings["empty_bin"] != "zero") + \
                 [f"knots={settings['knots']}"] * (settings["knots"] != "left")
    document = {
        "model": model_name, "release": str(release_dir), "edition": VCR_TREE,
        "release_config": release["config"],
        "settings": {**settings, "degree": SPLINE_DEGREE, "curve_points": CURVE_POINTS,
                     "grid": f"j / {CURVE_POINTS}, j = 0..{CURVE_POINTS - 1}", "bin_rule": "i/n < delta_v < (i+1)/n",
                     "deviations": deviations},
        "formulas": dict(FORMULAS),
        "clean_accuracy": float(np.mean([predictions[r["key"]] == r["label"] for r in clean])) if clean else None,
        "clean_examples": len(clean),
        "human": human.describe() if human else None,
        "human_relative": "computed" if human else REFUSED,
        "corruptions": section,
    }
    (out / METRICS_FILE).write_text(dumps(document), encoding="utf-8")
    np.savez(out / CURVES_FILE, t=curve_grid(), **curves)
    write_report(document, _plot(section, curves, human, settings, out), out)
    return out
