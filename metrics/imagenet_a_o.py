"""ImageNet-A accuracy (both conventions) and ImageNet-O detection metrics.

Logits are the model's 1000 ImageNet-1k outputs, shape (N, 1000); labels are ImageNet-1k indices
(0..999, the position of the wnid in the sorted 1000). The 200-class subsets differ between A and
O (``schemas.class_subsets``).

ImageNet-A conventions:
- ``accuracy_200``: argmax over the 200 A classes only, as ``natural-adv-examples/eval.py`` does
  (what published ImageNet-A accuracies use);
- ``accuracy_1000``: argmax over all 1000 classes, a variant proposed upstream (never higher).

Calibration (``rms_calibration_error``) and AURRA (``aurra``) take the confidence and correctness
of one convention (the reference: max softmax over the 200 A classes, correct = 200-way argmax);
``imagenet_a_metrics`` reports all of them. ImageNet-O's FPR95 is the reference's "recall closest
to 95 %" (``FPR95``); the first threshold reaching 95 % is kept as ``FPR95_first_reaching``.
"""
from __future__ import annotations

import numpy as np

from metrics.detection import auroc, average_precision, fpr_at_recall_closest, fpr_at_tpr
from schemas.class_subsets import subset_indices

__all__ = ["NUM_CLASSES", "subset_predictions", "imagenet_a_accuracy", "max_softmax", "imagenet_o_metrics",
           "CALIBRATION_BIN_SIZE", "CALIBRATION_VARIANTS", "rms_calibration_error", "aurra", "softmax",
           "imagenet_a_metrics"]

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

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import imagenet_a_accuracy
    >>> from schemas.class_subsets import subset_indices
    >>> logits = np.zeros((2, 1000), dtype=np.float32)
    >>> a, b = (int(i) for i in subset_indices('imagenet_a')[:2])
    >>> logits[0, a] = logits[1, b] = 5.0
    >>> imagenet_a_accuracy(logits, np.array([a, a]))
    {'accuracy_200': 50.0, 'accuracy_1000': 50.0}
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
    """Maximum softmax probability over ``classes`` (the softmax is taken over them only).

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import max_softmax
    >>> logits = np.zeros((1, 1000)); logits[0, 2] = np.log(3.0)
    >>> max_softmax(logits, np.array([1, 2])).round(3).tolist()  # softmax over classes 1 and 2 only
    [0.75]
    """
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
        ``AUPR``, ``AUROC``, ``FPR95`` (false positives among the validation images at the
        threshold whose recall of ImageNet-O is closest to 95 %, the reference's rule) and
        ``FPR95_first_reaching`` (at the highest threshold that flags at least 95 %), for the
        anomaly score ``-max softmax`` over the 200 ImageNet-O classes.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import imagenet_o_metrics
    >>> from schemas.class_subsets import subset_indices
    >>> rng = np.random.RandomState(0)
    >>> confident = rng.normal(0, 1, (20, 1000)); confident[:, subset_indices('imagenet_o')[0]] += 10
    >>> flat = rng.normal(0, 1, (20, 1000))  # the ImageNet-O images: no confident class
    >>> {k: round(v, 1) for k, v in sorted(imagenet_o_metrics(flat, confident).items())}
    {'AUPR': 100.0, 'AUROC': 100.0, 'FPR95': 0.0, 'FPR95_first_reaching': 0.0}
    """
    classes = subset_indices("imagenet_o")
    scores = -np.concatenate([max_softmax(logits_o, classes), max_softmax(logits_in, classes)])
    is_o = np.r_[np.ones(len(logits_o), dtype=bool), np.zeros(len(logits_in), dtype=bool)]
    return {
        "AUPR": 100.0 * average_precision(scores, is_o),
        "AUROC": 100.0 * auroc(scores, is_o),
        "FPR95": 100.0 * fpr_at_recall_closest(scores, is_o, 0.95),
        "FPR95_first_reaching": 100.0 * fpr_at_tpr(scores, is_o, 0.95),
    }


CALIBRATION_BIN_SIZE = 100
"""Target examples per bin of the adaptive (equal-mass) RMS calibration error (``beta``)."""

CALIBRATION_VARIANTS = ("reference", "all_bins")
"""``'reference'``: ``calib_err`` of ``calibration_tools.py`` as shipped, which leaves the last
(most confident) bin out of the sum; ``'all_bins'``: every bin counted (a variant proposed upstream)."""


def rms_calibration_error(confidence, correct, variant: str = "reference",
                          bin_size: int = CALIBRATION_BIN_SIZE) -> float | None:
    """RMS calibration error with adaptive bins, in [0, 1] (the reference prints it x 100).

    The examples are sorted by confidence (``np.argsort``, as the reference) and cut into
    ``N // bin_size`` consecutive bins of ``bin_size``; the last bin takes the remainder. The error
    is ``sqrt(sum_b n_b / N * (mean confidence_b - accuracy_b) ** 2)``.

    Parameters
    ----------
    confidence : array (N,)
        Confidence of each prediction in [0, 1] (max softmax probability).
    correct : array (N,)
        Whether each prediction is right (bool or 0/1).
    variant : str
        One of :data:`CALIBRATION_VARIANTS`.
    bin_size : int
        Examples per bin (100 in the reference).

    Returns
    -------
    float or None
        None when ``N < bin_size`` in the ``'reference'`` variant (the reference raises
        IndexError there); ``'all_bins'`` then uses one bin of all examples.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics.imagenet_a_o import rms_calibration_error
    >>> confidence = np.full(300, 0.9); correct = np.arange(300) % 10 < 6  # 90 % sure, 60 % right
    >>> round(rms_calibration_error(confidence, correct), 3)
    0.245
    >>> rms_calibration_error(confidence[:99], correct[:99]) is None  # fewer than one bin
    True
    """
    if variant not in CALIBRATION_VARIANTS:
        raise ValueError(f"unknown calibration variant {variant!r}; valid: {', '.join(CALIBRATION_VARIANTS)}")
    confidence, correct = _confidence_and_correct(confidence, correct)
    n = confidence.size
    if bin_size < 1:
        raise ValueError(f"bin_size must be >= 1, got {bin_size}")
    count = n // bin_size
    if count == 0 and variant == "reference":
        return None
    order = np.argsort(confidence)
    confidence, correct = confidence[order], correct[order]
    edges = [i * bin_size for i in range(max(count, 1))] + [n]
    used = len(edges) - 2 if variant == "reference" else len(edges) - 1
    total = 0.0
    for start, stop in zip(edges[:used], edges[1:used + 1]):
        difference = np.mean(confidence[start:stop]) - np.mean(correct[start:stop])
        total += (stop - start) / n * difference ** 2
    return float(np.sqrt(total))


def aurra(confidence, correct) -> float:
    """Area under the response-rate accuracy curve, in [0, 1] (the reference's ``aurra``).

    The examples are ranked by confidence, descending (the reverse of ``np.argsort``, as the
    reference), and the accuracy among the top k is averaged over k = 1..N.

    Examples
    --------
    >>> from metrics.imagenet_a_o import aurra
    >>> round(aurra([0.9, 0.8, 0.1], [True, True, False]), 4)  # (1 + 1 + 2/3) / 3
    0.8889
    """
    confidence, correct = _confidence_and_correct(confidence, correct)
    ranks = np.argsort(confidence)[::-1]
    curve = np.cumsum(correct[ranks]) / np.arange(1, confidence.size + 1)
    return float(np.mean(curve))


def _confidence_and_correct(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    confidence = np.asarray(confidence, dtype=np.float64).ravel()
    correct = np.asarray(correct).ravel().astype(np.float64)
    if confidence.shape != correct.shape or confidence.size == 0:
        raise ValueError(f"confidence and correct must be non-empty and of one length, got "
                         f"{confidence.size} and {correct.size}")
    if not np.all(np.isfinite(confidence)):
        raise ValueError("confidences must be finite")
    return confidence, correct


def softmax(logits) -> np.ndarray:
    """Row-wise softmax of a (N, K) array (float64)."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def imagenet_a_metrics(logits, labels) -> dict:
    """Accuracy, RMS calibration error and AURRA on ImageNet-A, in percent, under both conventions.

    Returns
    -------
    dict
        ``accuracy_200`` and ``accuracy_1000`` (see :func:`imagenet_a_accuracy`), then for the
        200-way convention (confidence = max softmax over the 200 A classes)
        ``rms_calibration_error`` (the reference, last bin left out; None below 100 images),
        ``rms_calibration_error_all_bins`` and ``aurra``, and the same three with ``_1000``
        for the 1000-way convention.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics.imagenet_a_o import imagenet_a_metrics
    >>> from schemas.class_subsets import subset_indices
    >>> logits = np.zeros((2, 1000), dtype=np.float32)
    >>> a = int(subset_indices('imagenet_a')[0]); logits[:, a] = 5.0
    >>> result = imagenet_a_metrics(logits, np.array([a, a]))
    >>> result['accuracy_200'], result['rms_calibration_error'], round(result['aurra'], 1)  # None below 100 images
    (100.0, None, 100.0)
    """
    logits = _logits(logits)
    labels = _labels(labels, logits.shape[0])
    result = imagenet_a_accuracy(logits, labels)
    classes = subset_indices("imagenet_a")
    for suffix, columns in (("", classes), ("_1000", np.arange(NUM_CLASSES))):
        probabilities = softmax(logits[:, columns])
        confidence = probabilities.max(axis=1)
        correct = columns[np.argmax(probabilities, axis=1)] == labels
        reference = rms_calibration_error(confidence, correct, "reference")
        result[f"rms_calibration_error{suffix}"] = None if reference is None else 100.0 * reference
        result[f"rms_calibration_error_all_bins{suffix}"] = 100.0 * rms_calibration_error(
            confidence, correct, "all_bins")
        result[f"aurra{suffix}"] = 100.0 * aurra(confidence, correct)
    return result
