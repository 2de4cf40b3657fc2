"""ImageNet-C metrics: unnormalised CE, CE, Relative CE and their means.

The definitions: ``docs/reference/algorithms.md``, "ImageNet-C metrics".

Errors are top-1 error rates as fractions in [0, 1], one per severity 1..5. Every function that
reports a metric returns it in percent, as the paper and the leaderboard do; AlexNet scores 100.
mCE and Relative mCE average over the 15 benchmark corruptions only; the 4 extras are summarised
apart, never mixed in.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from schemas.baselines import ALEXNET_IMAGENET_C, ErrorBaseline
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, EXTRA_CORRUPTIONS, SEVERITIES

__all__ = ["severity_errors", "clean_error", "unnormalized_ce", "corruption_error", "relative_corruption_error",
           "summarize_imagenet_c"]


def severity_errors(errors: Sequence[float]) -> np.ndarray:
    """Validate one corruption's errors: 5 fractions in [0, 1], severities 1..5, as float64.

    Raises
    ------
    ValueError
        If there are not exactly 5 values or one lies outside [0, 1] (errors in percent).
    """
    values = np.asarray(errors, dtype=np.float64)
    if values.shape != (len(SEVERITIES),):
        raise ValueError(f"expected {len(SEVERITIES)} errors (severities 1..5), got shape {values.shape}")
    if not np.all((values >= 0) & (values <= 1)):
        raise ValueError(f"errors must be fractions in [0, 1], got {values.tolist()}")
    return values


def clean_error(error: float) -> float:
    """Validate a clean error: a fraction in [0, 1].

    Raises
    ------
    ValueError
        If ``error`` lies outside [0, 1].
    """
    if not 0 <= error <= 1:
        raise ValueError(f"a clean error must be a fraction in [0, 1], got {error}")
    return float(error)


def unnormalized_ce(errors: Sequence[float]) -> float:
    """Mean top-1 error over severities 1..5, in percent: what ``ImageNet-C/test.py`` prints.

    Examples
    --------
    >>> from metrics import unnormalized_ce
    >>> round(unnormalized_ce([0.3, 0.4, 0.5, 0.6, 0.7]), 2)
    50.0
    """
    return 100.0 * float(severity_errors(errors).mean())


def corruption_error(errors: Sequence[float], baseline_errors: Sequence[float]) -> float:
    """CE = sum_s E_s / sum_s E_s(baseline), in percent (100 = as good as the baseline).

    Examples
    --------
    >>> from metrics import corruption_error
    >>> round(corruption_error([0.3, 0.4, 0.5, 0.6, 0.7], [0.6, 0.7, 0.8, 0.9, 1.0]), 2)
    62.5
    """
    return 100.0 * float(severity_errors(errors).sum() / severity_errors(baseline_errors).sum())


def relative_corruption_error(errors: Sequence[float], clean: float,
                              baseline_errors: Sequence[float], baseline_clean: float) -> float:
    """Relative CE = sum_s (E_s - E_clean) / sum_s (E_s(baseline) - E_clean(baseline)), in percent.

    Parameters
    ----------
    errors, baseline_errors : sequence of 5 float
        Errors at severities 1..5 (fractions).
    clean, baseline_clean : float
        Errors on the clean images (fractions).

    Examples
    --------
    >>> from metrics import relative_corruption_error
    >>> round(relative_corruption_error([0.3, 0.4, 0.5, 0.6, 0.7], 0.2, [0.6, 0.7, 0.8, 0.9, 1.0], 0.4), 2)
    75.0
    """
    gap = severity_errors(errors) - clean_error(clean)
    baseline_gap = severity_errors(baseline_errors) - clean_error(baseline_clean)
    return 100.0 * float(gap.sum() / baseline_gap.sum())


def _check_names(names) -> None:
    unknown = sorted(set(names) - set(CORRUPTIONS))
    if unknown:
        raise ValueError(f"unknown corruption(s) {', '.join(unknown)}; valid: {', '.join(CORRUPTIONS)}")


def _summarize_group(group: Sequence[str], errors: Mapping[str, Sequence[float]],
                     clean: float | None, baseline: ErrorBaseline) -> dict:
    """Per-corruption metrics of the present members of ``group``; means only when all are present."""
    present = [c for c in group if c in errors]
    missing = [c for c in group if c not in errors]
    relative = clean is not None and baseline.clean is not None
    ce = {c: corruption_error(errors[c], baseline.corruptions[c]) for c in present}
    rel = {c: (relative_corruption_error(errors[c], clean, baseline.corruptions[c], baseline.clean)
               if relative else None) for c in present}
    unnorm = {c: unnormalized_ce(errors[c]) for c in present}
    complete = present and not missing

    def mean(values):
        return float(np.mean(list(values.values()))) if complete else None

    return {
        "mCE": mean(ce),
        "relative_mCE": mean(rel) if relative else None,
        "unnormalized_mCE": mean(unnorm),
        "CE": ce,
        "relative_CE": rel,
        "unnormalized_CE": unnorm,
        "missing": missing,
    }


def summarize_imagenet_c(errors: Mapping[str, Sequence[float]], clean: float | None = None,
                         baseline: ErrorBaseline = ALEXNET_IMAGENET_C,
                         allow_incomplete: bool = False) -> dict:
    """All ImageNet-C metrics of one model, in percent.

    Parameters
    ----------
    errors : mapping of str to sequence of 5 float
        Corruption name -> top-1 errors at severities 1..5 (fractions).
    clean : float or None
        The model's clean error (fraction); without it every relative value is None.
    baseline : ErrorBaseline
        The normaliser (AlexNet by default).
    allow_incomplete : bool
        If False, a missing benchmark corruption raises; if True, the means that need it are None.

    Returns
    -------
    dict
        ``mCE``, ``relative_mCE``, ``unnormalized_mCE`` (means over the 15 benchmark corruptions),
        ``CE``, ``relative_CE``, ``unnormalized_CE`` (per corruption), ``missing`` (absent
        benchmark corruptions), ``clean_error``, ``baseline`` (its name), and ``extra``: the same
        keys for the extras present, its means set only when all 4 extras are present.

    Raises
    ------
    ValueError
        On an unknown corruption name, malformed errors, or (unless ``allow_incomplete``) a missing
        benchmark corruption.

    Examples
    --------
    >>> from metrics import summarize_imagenet_c
    >>> from schemas.baselines import ALEXNET_IMAGENET_C
    >>> errors = {c: [e / 2 for e in row] for c, row in ALEXNET_IMAGENET_C.corruptions.items()}  # half AlexNet's
    >>> result = summarize_imagenet_c(errors, clean=0.25)
    >>> sorted(k for k in result if not isinstance(result[k], dict))
    ['baseline', 'clean_error', 'mCE', 'missing', 'relative_mCE', 'unnormalized_mCE']
    >>> round(result['mCE'], 2), round(result['relative_mCE'], 2)
    (50.0, 39.38)
    """
    _check_names(errors)
    missing = [c for c in BENCHMARK_CORRUPTIONS if c not in errors]
    if missing and not allow_incomplete:
        raise ValueError(f"mCE needs all 15 benchmark corruptions; missing: {', '.join(missing)}")
    clean = None if clean is None else clean_error(clean)
    summary = _summarize_group(BENCHMARK_CORRUPTIONS, errors, clean, baseline)
    summary["clean_error"] = None if clean is None else 100.0 * clean
    summary["baseline"] = baseline.name
    summary["extra"] = _summarize_group(EXTRA_CORRUPTIONS, errors, clean, baseline)
    return summary
