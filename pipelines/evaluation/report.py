"""The evaluation report a maintainer attaches to a release: ``report.md`` and ``plots/*.png``.

Plots: top-1 error against severity per corruption, with the baseline's (AlexNet's) curve; CE and
Relative CE bars; clean against corrupted accuracy; flip probability against frame offset per
ImageNet-P set. The summary sits beside the paper's reference rows (AlexNet, ResNet-50).
"""
from __future__ import annotations

from pathlib import Path

from schemas.baselines import ALEXNET_IMAGENET_C, REFERENCE_RESULTS, ErrorBaseline
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, EXTRA_CORRUPTIONS, SEVERITIES

__all__ = ["REPORT_FILE", "PLOTS_DIR", "ERROR_PLOT", "CE_PLOT", "ACCURACY_PLOT", "FLIP_PLOT",
           "plot_error_vs_severity", "plot_corruption_errors", "plot_clean_vs_corrupted", "plot_flip_probability",
           "CLEAN_SOURCE_TEXT", "clean_error_text", "reference_rows", "summary_lines", "write_report"]

REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
ERROR_PLOT = "error_vs_severity.png"
CE_PLOT = "corruption_errors.png"
ACCURACY_PLOT = "clean_vs_corrupted.png"
FLIP_PLOT = "flip_probability.png"
_DPI = 110


def _pyplot():
    """``matplotlib.pyplot`` on the non-interactive backend, imported when a plot is drawn: the
    commands that only read a report's text (and every evaluation worker that draws none) do not
    pay matplotlib's import."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _percent(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def plot_error_vs_severity(errors: dict, baseline: ErrorBaseline, path: Path) -> None:
    """Small multiples: the model's error (%) per severity against the baseline's, per corruption."""
    plt = _pyplot()
    names = [c for c in CORRUPTIONS if c in errors]
    columns = min(5, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.0 * columns, 2.5 * rows), squeeze=False,
                             sharex=True, sharey=True)
    for ax, name in zip(axes.flat, names):
        severities = sorted(int(s) for s in errors[name])
        ax.plot(severities, [100 * errors[name][str(s)] for s in severities], "o-", color="tab:blue",
                label="model")
        ax.plot(SEVERITIES, [100 * e for e in baseline.corruptions[name]], "s--", color="tab:grey",
                label=baseline.name)
        ax.set_title(name + (" (extra)" if name in EXTRA_CORRUPTIONS else ""), fontsize=9)
        ax.set_xticks(SEVERITIES)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("top-1 error (%)")
    for ax in axes[-1, :]:
        ax.set_xlabel("severity")
    axes.flat[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)


def plot_corruption_errors(summary: dict, baseline_name: str, path: Path) -> None:
    """Bars of CE (and Relative CE when known) per corruption; the baseline sits at 100."""
    plt = _pyplot()
    ce = {**summary["CE"], **summary["extra"]["CE"]}
    relative = {**summary["relative_CE"], **summary["extra"]["relative_CE"]}
    names = [c for c in CORRUPTIONS if c in ce]
    with_relative = all(relative[c] is not None for c in names)
    width = 0.4 if with_relative else 0.7
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 2), 4.0))
    positions = range(len(names))
    colours = ["tab:grey" if c in EXTRA_CORRUPTIONS else "tab:blue" for c in names]
    offset = -width / 2 if with_relative else 0
    ax.bar([i + offset for i in positions], [ce[c] for c in names], width, color=colours, label="CE")
    if with_relative:
        ax.bar([i + width / 2 for i in positions], [relative[c] for c in names], width,
               color=colours, alpha=0.45, label="Relative CE")
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label=f"{baseline_name} = 100")
    ax.set_xticks(list(positions), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("% of baseline error")
    title = "Corruption Error"
    if summary["mCE"] is not None:
        title += f" — mCE {summary['mCE']:.1f}%"
    ax.set_title(title + " (grey: extras, not in mCE)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)


def plot_clean_vs_corrupted(errors: dict, clean_error: float, path: Path) -> None:
    """Accuracy (%) on the clean images against the corrupted ones.

    Left: accuracy against severity, severity 0 being the clean images, one thin line per
    corruption and the mean over the benchmark corruptions present in bold. Right: mean accuracy
    over severities per corruption, with the clean accuracy as a dashed line.

    Parameters
    ----------
    errors : dict
        Corruption -> {severity (str) -> top-1 error (fraction)}.
    clean_error : float
        Top-1 error on the clean images (fraction).
    """
    plt = _pyplot()
    clean = 100 * (1 - clean_error)
    names = [c for c in CORRUPTIONS if c in errors]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.0, 4.2), gridspec_kw={"width_ratios": [1, 1.6]})
    for name in names:
        severities = sorted(int(s) for s in errors[name])
        left.plot([0] + severities, [clean] + [100 * (1 - errors[name][str(s)]) for s in severities],
                  "-", color="tab:grey" if name in EXTRA_CORRUPTIONS else "tab:blue", alpha=0.35, linewidth=1)
    complete = [c for c in names if c in BENCHMARK_CORRUPTIONS and len(errors[c]) == len(SEVERITIES)]
    if complete:
        mean = [clean] + [100 * (1 - sum(errors[c][str(s)] for c in complete) / len(complete)) for s in SEVERITIES]
        left.plot((0,) + SEVERITIES, mean, "o-", color="tab:blue", linewidth=2.5,
                  label=f"mean of {len(complete)} benchmark corruptions")
        left.legend(fontsize=8, loc="upper right")
    left.set_xticks((0,) + SEVERITIES, ["clean"] + [str(s) for s in SEVERITIES])
    left.set_xlabel("severity")
    left.set_ylabel("top-1 accuracy (%)")
    left.set_ylim(0, 100)
    left.grid(alpha=0.3)
    means = [100 * (1 - sum(errors[c].values()) / len(errors[c])) for c in names]
    right.bar(range(len(names)), means, color=["tab:grey" if c in EXTRA_CORRUPTIONS else "tab:blue" for c in names])
    right.axhline(clean, color="black", linestyle="--", linewidth=1, label=f"clean {clean:.1f}%")
    right.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    right.set_ylabel("mean accuracy over severities (%)")
    right.set_ylim(0, 100)
    right.set_title("clean vs corrupted accuracy (grey: extras)", fontsize=10)
    right.legend(fontsize=8)
    right.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)


def plot_flip_probability(by_offset: dict, path: Path) -> None:
    """Flip probability against frame offset, one line per ImageNet-P set."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.0))
    colours = plt.get_cmap("tab20")
    for i, (name, values) in enumerate(sorted(by_offset.items())):
        style = "--" if "noise" in name else "-"
        colour = colours((2 * i) % 20 + (i // 10) % 2)  # the 10 strong colours first, then the pale
        ax.plot(range(1, len(values) + 1), values, style, color=colour, label=name)
    ax.set_xlabel("frame offset k (noise: frame k vs frame 0; others: frame j vs frame j - k)")
    ax.set_ylabel("flip probability")
    ax.set_ylim(0, 1.02)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)


CLEAN_SOURCE_TEXT = {
    "given": "given by the caller (--clean-error)",
    "clean_config": "measured on the release's clean config",
    None: "unknown: the release has no clean config and none was given",
}
"""How the report names where the clean error comes from (``metrics.json``'s ``clean.source``)."""


def clean_error_text(clean: dict) -> str:
    """``'23.9 % (measured on the release's clean config)'``; the measured value too when overridden."""
    error = None if clean["error"] is None else 100 * clean["error"]
    text = f"{_percent(error)} % ({CLEAN_SOURCE_TEXT[clean['source']]})"
    if clean["source"] == "given" and clean["measured"] is not None:
        text += f"; measured on the clean config: {100 * clean['measured']:.1f} %"
    return text


def reference_rows(summary: dict, model: str) -> list[str]:
    """The model's mCE, Relative mCE and clean error beside the paper's reference rows (Markdown)."""
    lines = ["| model | mCE (%) | Relative mCE (%) | clean error (%) | source |", "|---|---|---|---|---|",
             f"| **{model}** (this evaluation) | {_percent(summary['mCE'])} | {_percent(summary['relative_mCE'])} "
             f"| {_percent(summary['clean_error'])} | this release |"]
    lines += [f"| {r.model} | {r.mCE:.1f} | {r.relative_mCE:.1f} | {r.clean_error:.1f} | {r.source} |"
              for r in REFERENCE_RESULTS]
    return lines


def summary_lines(document: dict) -> list[str]:
    """The headline numbers of a ``metrics.json`` document, one a line, for the terminal."""
    lines = []
    section = document.get("imagenet_c")
    if section is not None:
        lines.append(f"ImageNet-C clean error: {clean_error_text(section['clean'])}")
        summary = section.get("normalised_summary", section["summary"])  # editions: unnormalised summary
        if summary is not None and "mean_error" in summary:
            lines.append(f"ImageNet-C mean corruption error (unnormalised): {_percent(100 * summary['mean_error'])} %"
                         if summary["mean_error"] is not None else "ImageNet-C: no benchmark corruption evaluated")
        elif summary is not None:
            lines.append(f"ImageNet-C mCE: {_percent(summary['mCE'])} %, Relative mCE: "
                         f"{_percent(summary['relative_mCE'])} % (normalised by {summary['baseline']}; "
                         + ", ".join(f"{r.model} {r.mCE:.1f} / {r.relative_mCE:.1f}" for r in REFERENCE_RESULTS)
                         + ")")
    o = document.get("imagenet_o")
    if o is not None:
        lines.append(f"ImageNet-O AUPR: {o['AUPR']:.2f} % (chance {o['chance_AUPR']:.2f} %: {o['images']} ImageNet-O "
                     f"images of {o['images'] + o['in_distribution_images']}), AUROC {o['AUROC']:.2f} %, "
                     f"FPR95 {o['FPR95']:.2f} %")
    return lines


def _imagenet_c_markdown(section: dict, baseline: ErrorBaseline, model: str) -> list[str]:
    lines = ["## ImageNet-C", "", f"Clean error: {clean_error_text(section['clean'])}.", ""]
    summary = section["summary"]
    if summary is not None:
        lines += [
            f"Normalised by {baseline.name}. Means over the 15 benchmark corruptions; "
            "extras are reported apart.", "",
            "| metric | value (%) |", "|---|---|",
            f"| mCE | {_percent(summary['mCE'])} |",
            f"| Relative mCE | {_percent(summary['relative_mCE'])} |",
            f"| unnormalised mCE (mean error) | {_percent(summary['unnormalized_mCE'])} |",
            f"| clean error | {_percent(summary['clean_error'])} |",
            f"| extra mCE (4 extras) | {_percent(summary['extra']['mCE'])} |",
        ]
        if summary["missing"]:
            lines.append(f"\nmCE needs every benchmark corruption; missing: {', '.join(summary['missing'])}.")
        lines += ["", "Beside the paper's reference rows:", "", *reference_rows(summary, model), ""]
    lines += ["| corruption | " + " | ".join(f"s{s}" for s in SEVERITIES)
              + " | mean error | CE | Relative CE |", "|---" * 9 + "|"]
    for name in (c for c in CORRUPTIONS if c in section["errors"]):
        errors = section["errors"][name]
        cells = [_percent(100 * errors[str(s)]) if str(s) in errors else "—" for s in SEVERITIES]
        group = summary["extra"] if summary and name in EXTRA_CORRUPTIONS else summary
        known = group is not None and name in group["CE"]
        cells += [_percent(group[k][name]) if known else "—"
                  for k in ("unnormalized_CE", "CE", "relative_CE")]
        label = f"{name} (extra)" if name in EXTRA_CORRUPTIONS else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", f"![error vs severity]({PLOTS_DIR}/{ERROR_PLOT})", ""] if section["errors"] else [""]
    if summary is not None:
        lines += [f"![corruption errors]({PLOTS_DIR}/{CE_PLOT})", ""]
    if section["clean"]["error"] is not None and section["errors"]:
        lines += [f"![clean vs corrupted accuracy]({PLOTS_DIR}/{ACCURACY_PLOT})", ""]
    return lines


def _imagenet_p_markdown(section: dict) -> list[str]:
    summary = section["summary"]
    lines = ["## ImageNet-P", "",
             "Flip probability (FP, fraction) and unnormalised top-5 distance (uT5D, 0..18) per "
             "difficulty; FR and T5D (%) are normalised by the supplied baseline at difficulty 1.", "",
             "| perturbation | FP d1 | FP d2 | FP d3 | uT5D d1 | uT5D d2 | uT5D d3 | FR | T5D |",
             "|---" * 9 + "|"]
    for name, per_difficulty in summary["perturbations"].items():
        def cell(d, key):
            value = per_difficulty.get(str(d), {}).get(key)
            return "—" if value is None else f"{value:.4f}"
        lines.append(f"| {name} | " + " | ".join(
            [cell(d, "flip_probability") for d in (1, 2, 3)] + [cell(d, "top5_distance") for d in (1, 2, 3)]
            + [_percent(summary["FR"].get(name)), _percent(summary["T5D"].get(name))]) + " |")
    lines += ["", f"mFR: {_percent(summary['mFR'])} %, mT5D: {_percent(summary['mT5D'])} % "
              "(means over the 10 test perturbations; — without a complete baseline).", "",
              f"![flip probability]({PLOTS_DIR}/{FLIP_PLOT})", ""]
    return lines


def write_report(document: dict, out_dir, baseline: ErrorBaseline = ALEXNET_IMAGENET_C) -> Path:
    """Write ``report.md`` and its plots for a ``metrics.json`` document; return the report's path.

    Parameters
    ----------
    document : dict
        ``{"model": name, "imagenet_c": {...}, "imagenet_p": {...}}`` as ``imagenet-cp evaluate``
        writes it; either section may be absent.
    baseline : ErrorBaseline
        The ImageNet-C baseline drawn in the plots.
    """
    out = Path(out_dir)
    (out / PLOTS_DIR).mkdir(parents=True, exist_ok=True)
    lines = [f"# Evaluation of `{document['model']}`", ""]
    if "imagenet_c" in document:
        section = document["imagenet_c"]
        if section["errors"]:  # none when only the clean config was evaluated
            plot_error_vs_severity(section["errors"], baseline, out / PLOTS_DIR / ERROR_PLOT)
        if section["summary"] is not None:
            plot_corruption_errors(section["summary"], baseline.name, out / PLOTS_DIR / CE_PLOT)
        if section["clean"]["error"] is not None and section["errors"]:
            plot_clean_vs_corrupted(section["errors"], section["clean"]["error"], out / PLOTS_DIR / ACCURACY_PLOT)
        lines += _imagenet_c_markdown(section, baseline, document["model"])
    if "imagenet_p" in document:
        plot_flip_probability(document["imagenet_p"]["flip_probability_by_offset"],
                              out / PLOTS_DIR / FLIP_PLOT)
        lines += _imagenet_p_markdown(document["imagenet_p"])
    path = out / REPORT_FILE
    path.write_text("\n".join(lines))
    return path
