"""ImageNet-A accuracy (both conventions) and ImageNet-O detection metrics.

Logits are the model's 1000 ImageNet-1k outputs, shape (N, 1000); labels are ImageNet-1k indices
(0..999, the position of the wnid in the sorted 1000). The 200-class subsets differ between A and
O (``schemas.class_subsets``).

ImageNet-A conventions:
- ``accuracy_200``: argmax over the 200 A classes only, as ``natural-adv-examples/eval.py`` does
  (what published ImageNet-A accuracies use);
- ``accuracy_1000``: argmax over all 1000 classes, as its open PR #15 proposes (never higher).
"""
from __future__ import annotations

import numpy as np

from metrics.detection import auroc, average_precision, fpr_at_tpr
from schemas.class_subsets import subset_indices

NUM_CLASSES = 1000


def _logits(logits) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] != NUM_CLASSES:
        raise ValueError(f"logits must have shape (N, {NUM_CLASSES}), got {logits.shape}")
    return logits


def _labels(labels, n: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be {n} integer ImageNet-1k indices, got {labels.dtype} {labels.shape}")
    return labels


def subset_predictions(logits, classes: np.ndarray) -> np.ndarray:
    """ImageNet-1k index of the largest logit among ``classes`` (ties: the lowest index)."""
    return classes[np.argmax(_logits(logits)[:, classes], axis=1)]


def imagenet_a_accuracy(logits, labels) -> dict:
    """Top-1 accuracy on ImageNet-A in percent, under both conventions.

    Returns
    -------
    dict
        ``accuracy_200`` (argmax over the 200 ImageNet-A classes, the reference convention) and
        ``accuracy_1000`` (argmax over all 1000 classes).
    """
    logits = _logits(logits)
    labels = _labels(labels, logits.shape[0])
    classes = subset_indices("imagenet_a")
    if not np.isin(labels, classes).all():
        raise ValueError("ImageNet-A labels must be ImageNet-1k indices of its 200 classes")
    return {
        "accuracy_200": 100.0 * float(np.mean(subset_predictions(logits, classes) == labels)),
        "accuracy_1000": 100.0 * float(np.mean(np.argmax(logits, axis=1) == labels)),
    }


def max_softmax(logits, classes: np.ndarray) -> np.ndarray:
    """Maximum softmax probability over ``classes`` (the softmax is taken over them only)."""
    sub = _logits(logits)[:, classes]
    sub = sub - sub.max(axis=1, keepdims=True)
    probabilities = np.exp(sub) / np.exp(sub).sum(axis=1, keepdims=True)
    return probabilities.max(axis=1)


def imagenet_o_metrics(logits_o, logits_in) -> dict:
    """Out-of-distribution detection of ImageNet-O against ImageNet validation images, in percent.

    Parameters
    ----------
    logits_o : array (N_o, 1000)
        Logits on ImageNet-O images: the positives.
    logits_in : array (N_in, 1000)
        Logits on ImageNet validation images of the 200 ImageNet-O classes: the negatives.

    Returns
    -------
    dict
        ``AUPR``, ``AUROC`` and ``FPR95`` (false positives among the validation images at the
        highest threshold that flags 95 % of ImageNet-O), for the anomaly score
        ``-max softmax`` over the 200 ImageNet-O classes.
    """
    classes = subset_indices("imagenet_o")
    scores = -np.concatenate([max_softmax(logits_o, classes), max_softmax(logits_in, classes)])
    is_o = np.r_[np.ones(len(logits_o), dtype=bool), np.zeros(len(logits_in), dtype=bool)]
    return {
        "AUPR": 100.0 * average_precision(scores, is_o),
        "AUROC": 100.0 * auroc(scores, is_o),
        "FPR95": 100.0 * fpr_at_tpr(scores, is_o, 0.95),
    }
