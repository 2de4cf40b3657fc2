"""The VCR scores of an evaluation, from its predictions: curves against Delta v, areas, HMRI /
MRSI, ``metrics.json``'s sections, the plots and ``report.md``; and the release's manifest.

Per corruption, accuracy (top-1 == label) and prediction consistency (top-1 == the top-1 on the
clean crop) are binned by the manifest's ``delta_v`` and turned into curves by :mod:`metrics.vcr`.
With a human file (:mod:`pipelines.evaluation.vcr_human`) the human curves are fitted the same way
and HMRI / MRSI are derived, their formulas written beside them; without one they are refused,
never estimated.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from metrics.vcr import compare_curves, curve_grid, performance_curve
from schemas.editions import release_identity
from schemas.release import VCR_BENCHMARK
from schemas.vcr import BINS, CLEAN, SMOOTHING, SPLINE_DEGREE, VCR_TREE, VcrExample

from pipelines.evaluation.release_inputs import release_document
from pipelines.evaluation.scores import PREDICTIONS_DIR
from pipelines.evaluation.vcr_human import HumanCurves
from pipelines.formats import storage
from pipelines.formats.manifests import read_manifests
from pipelines.formats.predictions import read_predictions as read_prediction_file

__all__ = ["CURVES_FILE", "REPORT_FILE", "PLOTS_DIR", "REFUSED", "PROPERTIES", "is_vcr_release", "read_vcr_manifest",
           "analysis_settings", "read_predictions", "analyse", "plot_curves", "write_report"]

CURVES_FILE = "curves.npz"
REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
REFUSED = ("refused: no human file was given (--human); HMRI and MRSI compare the model with human curves "
           "and are never estimated without them")
PROPERTIES = ("accuracy", "consistency")


def is_vcr_release(release_dir: str) -> bool:
    """True when ``release_dir/release.json`` names the VCR benchmark (new and old releases)."""
    try:
        release = release_document(release_dir)
        return release is not None and release_identity(release).benchmark == VCR_BENCHMARK
    except (OSError, ValueError):
        return False


def read_vcr_manifest(release_dir: str) -> list[VcrExample]:
    """Every example of a VCR release (any file system), sorted by key."""
    return [VcrExample.from_record(record) for record in read_manifests(release_dir)]


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


def read_predictions(out: str, groups) -> dict:
    predictions = {}
    for group in groups:
        path = storage.join(out, f"{PREDICTIONS_DIR}/{VCR_TREE}/{group}.jsonl")
        for row in read_prediction_file(path):
            predictions[row.key] = row.top5[0]
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
    clean_top1 = {r.image_key: predictions[r.key] for r in rows if r.corruption == CLEAN}
    by_corruption: dict = {}
    for row in rows:
        if row.corruption != CLEAN:
            by_corruption.setdefault(row.corruption, []).append(row)
    section, curves = {}, {}
    for corruption, examples in sorted(by_corruption.items()):
        dv = np.asarray([r.delta_v for r in examples])
        top1 = np.asarray([predictions[r.key] for r in examples])
        outcomes = {"accuracy": top1 == np.asarray([r.label for r in examples]),
                    "consistency": top1 == np.asarray([clean_top1[r.image_key] for r in examples])}
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


def plot_curves(section: dict, curves: dict, human: Optional[HumanCurves], settings: dict, out: Path) -> list[str]:
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
