"""Threshold-free detection metrics: AUROC, average precision (AUPR) and FPR at a TPR.

A larger score means "more likely positive". Ties are handled as ``sklearn.metrics`` does:
tied scores form one threshold.
"""
from __future__ import annotations

import numpy as np

__all__ = ["auroc", "average_precision", "fpr_at_tpr", "fpr_at_recall_closest"]


def _scores_and_labels(scores, is_positive) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64).ravel()
    is_positive = np.asarray(is_positive, dtype=bool).ravel()
    if scores.shape != is_positive.shape:
        raise ValueError(f"scores and labels differ in length: {scores.size} vs {is_positive.size}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    if is_positive.all() or not is_positive.any():
        raise ValueError("need at least one positive and one negative example")
    return scores, is_positive


def _cumulative_counts(scores, is_positive) -> tuple[np.ndarray, np.ndarray]:
    """True and false positives at each distinct threshold, from the highest score down."""
    order = np.argsort(-scores, kind="stable")
    scores, is_positive = scores[order], is_positive[order]
    last_of_each_score = np.r_[np.flatnonzero(np.diff(scores)), scores.size - 1]
    tps = np.cumsum(is_positive)[last_of_each_score]
    fps = last_of_each_score + 1 - tps
    return tps, fps


def auroc(scores, is_positive) -> float:
    """Area under the ROC curve, in [0, 1]: P(score of a positive > score of a negative), ties 1/2.

    Examples
    --------
    >>> from metrics import auroc
    >>> auroc([0.9, 0.8, 0.3, 0.1], [True, False, True, False])
    0.75
    """
    scores, is_positive = _scores_and_labels(scores, is_positive)
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    mid_ranks = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based average rank of each value
    ranks = mid_ranks[inverse]
    n_pos, n_neg = is_positive.sum(), (~is_positive).sum()
    return float((ranks[is_positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def average_precision(scores, is_positive) -> float:
    """AUPR as ``sklearn.metrics.average_precision_score``: sum_n (R_n - R_{n-1}) P_n, in [0, 1].

    Examples
    --------
    >>> from metrics import average_precision
    >>> round(average_precision([0.9, 0.8, 0.3, 0.1], [True, False, True, False]), 4)
    0.8333
    """
    scores, is_positive = _scores_and_labels(scores, is_positive)
    tps, fps = _cumulative_counts(scores, is_positive)
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def fpr_at_tpr(scores, is_positive, tpr: float = 0.95) -> float:
    """False-positive rate at the highest threshold whose true-positive rate reaches ``tpr``.

    Parameters
    ----------
    tpr : float
        Target true-positive rate in (0, 1]; 0.95 gives the usual FPR95.

    Examples
    --------
    >>> from metrics import fpr_at_tpr
    >>> fpr_at_tpr([0.9, 0.8, 0.3, 0.1], [True, False, True, False], tpr=0.5)
    0.0
    >>> fpr_at_tpr([0.9, 0.8, 0.3, 0.1], [True, False, True, False])
    0.5
    """
    if not 0 < tpr <= 1:
        raise ValueError(f"tpr must lie in (0, 1], got {tpr}")
    scores, is_positive = _scores_and_labels(scores, is_positive)
    tps, fps = _cumulative_counts(scores, is_positive)
    first = np.argmax(tps / tps[-1] >= tpr)
    return float(fps[first] / (~is_positive).sum())


def fpr_at_recall_closest(scores, is_positive, recall: float = 0.95) -> float:
    """False-positive rate at the threshold whose recall is closest to ``recall`` (the reference FPR95).

    ``fpr_and_fdr_at_recall`` of ``hendrycks/natural-adv-examples/calibration_tools.py``, with its
    missing ``stable_cumsum`` replaced by a plain cumulative sum: the scores are sorted descending
    (stable mergesort), the distinct thresholds are taken down to the first one that reaches full
    recall, the point (recall 1, 0 false positives) is appended, and the point with the smallest
    ``|recall_t - recall|`` wins; ties go to the higher recall. It can differ from
    :func:`fpr_at_tpr` (the first threshold reaching ``recall``) on small sets.

    Parameters
    ----------
    recall : float
        Target recall of the positives in (0, 1]; 0.95 gives FPR95.
    """
    if not 0 < recall <= 1:
        raise ValueError(f"recall must lie in (0, 1], got {recall}")
    scores, is_positive = _scores_and_labels(scores, is_positive)
    order = np.argsort(scores, kind="mergesort")[::-1]
    scores, is_positive = scores[order], is_positive[order]
    threshold_idxs = np.r_[np.flatnonzero(np.diff(scores)), is_positive.size - 1]
    tps = np.cumsum(is_positive)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    recalls = tps / tps[-1]
    last = tps.searchsorted(tps[-1])
    recalls = np.r_[recalls[last::-1], 1.0]
    fps = np.r_[fps[last::-1], 0]
    cutoff = np.argmin(np.abs(recalls - recall))
    return float(fps[cutoff] / (~is_positive).sum())
