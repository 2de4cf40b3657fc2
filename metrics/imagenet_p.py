"""ImageNet-P metrics: flip probability, top-5 distance, FR, T5D, mFR, mT5D.

The definitions: ``docs/reference/algorithms.md``, "ImageNet-P metrics".

Predictions of a sequence set are an integer array of shape (V, T, 5): for each of V videos and T
frames, the 5 classes with the largest logits, best first, ties broken by the lower class index
(the order of ``scipy.stats.rankdata(-logits, 'ordinal')``). Shape (V, T) holds top-1 classes
only: flip probabilities can be computed from it, top-5 distances cannot.

Pairs of frames: noise sequences (``'noise' in name``) compare every frame with frame 0, and their
difficulty selects the data set (``<name>``, ``<name>_2``, ``<name>_3``); every other sequence
compares frame j - d with frame j, d being the difficulty. Each video contributes the mean over
its pairs; a metric is the mean over videos.
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from schemas.baselines import DIFFICULTIES
from schemas.imagenet_p import PERTURBATIONS, TEST_PERTURBATIONS, perturbation_names_text

__all__ = ["TOP_K", "is_noise", "parse_sequence_set", "frame_pairs", "top_k_classes", "top5_ranks",
           "top5_distance_from_ranks", "top5_distance", "flip_probability", "flip_probability_by_offset",
           "mean_top5_distance", "sequence_metrics", "unnormalized_imagenet_p", "flip_baseline",
           "summarize_imagenet_p"]

TOP_K = 5
"""Length of the rankings the top-5 distance compares."""

_SET_NAME = re.compile(r"^(?P<name>.+?)(?:_(?P<difficulty>[23]))?$")


def is_noise(perturbation: str) -> bool:
    """True for the types compared against frame 0: the reference's test ``'noise' in name``."""
    return "noise" in perturbation


def parse_sequence_set(set_name: str) -> tuple[str, int | None]:
    """Split a sequence-set name into (perturbation, difficulty).

    ``"gaussian_noise_3"`` -> ``("gaussian_noise", 3)``; ``"gaussian_noise"`` ->
    ``("gaussian_noise", 1)``; a non-noise set such as ``"rotate"`` -> ``("rotate", None)``, since
    its difficulty is a stride chosen at evaluation time.

    Raises
    ------
    ValueError
        If the name is not a perturbation, or carries a suffix that is not a noise difficulty.
    """
    match = _SET_NAME.match(set_name)
    name, suffix = match["name"], match["difficulty"]
    if name not in PERTURBATIONS or (suffix and not is_noise(name)):
        raise ValueError(f"unknown sequence set {set_name!r}; valid: {perturbation_names_text()}, "
                         "and <name>_2, <name>_3 for the noise types")
    if is_noise(name):
        return name, int(suffix or 1)
    return name, None


def frame_pairs(n_frames: int, perturbation: str, difficulty: int = 1) -> np.ndarray:
    """The (reference, compared) frame indices a sequence's metrics average over.

    Parameters
    ----------
    n_frames : int
        Frames per video (31, or 41 for translate).
    perturbation : str
        The perturbation name; noise types compare each frame with frame 0.
    difficulty : int
        1, 2 or 3: the stride for non-noise types (ignored for noise, whose difficulty is its set).

    Returns
    -------
    ndarray of int, shape (P, 2)
        P = n_frames - 1 for noise, n_frames - difficulty otherwise.

    Examples
    --------
    >>> from metrics import frame_pairs
    >>> frame_pairs(5, 'rotate', difficulty=2).tolist()
    [[0, 2], [1, 3], [2, 4]]
    >>> frame_pairs(4, 'gaussian_noise').tolist()
    [[0, 1], [0, 2], [0, 3]]
    """
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty}")
    stride = 1 if is_noise(perturbation) else difficulty
    if n_frames <= stride:
        raise ValueError(f"need more than {stride} frames per video, got {n_frames}")
    compared = np.arange(stride, n_frames)
    reference = np.zeros_like(compared) if is_noise(perturbation) else compared - stride
    return np.stack([reference, compared], axis=1)


def top_k_classes(logits: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """The ``k`` classes with the largest logits along the last axis, best first.

    Ties go to the lower class index, as ``rankdata(-logits, 'ordinal')`` ranks them.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import top_k_classes
    >>> top_k_classes(np.array([0.1, 0.9, 0.5, 0.9, 0.0, 0.3]), k=3).tolist()  # ties: lower index first
    [1, 3, 2]
    """
    logits = np.asarray(logits)
    return np.argsort(-logits, axis=-1, kind="stable")[..., :k]


def top5_ranks(top5_a: np.ndarray, top5_b: np.ndarray) -> np.ndarray:
    """sigma: frame B's rank (1..5) of each of frame A's top-5 classes, 6 when outside B's top 5.

    Ranks beyond 5 all weigh as 6 in the top-5 distance, so 6 stands for any of them.
    Inputs have shape (..., 5); so has the result.
    """
    match = np.asarray(top5_a)[..., :, None] == np.asarray(top5_b)[..., None, :]
    return np.where(match.any(axis=-1), match.argmax(axis=-1) + 1, TOP_K + 1)


def top5_distance_from_ranks(sigma: np.ndarray) -> np.ndarray:
    """Top-5 distance sum_{r=1..5} |min(r, 6) - min(sigma_r, 6)| over the last axis (range 0..18).

    ``sigma`` holds frame B's ranks (1-based) of frame A's classes in A's rank order; only its
    first 5 entries count.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import top5_distance_from_ranks
    >>> int(top5_distance_from_ranks(np.array([1, 2, 3, 4, 5])))  # the same top 5, in order
    0
    >>> int(top5_distance_from_ranks(np.array([6, 6, 6, 1, 2])))  # the largest distance
    18
    """
    sigma = np.asarray(sigma)[..., :TOP_K]
    if np.any(sigma < 1):
        raise ValueError("ranks are 1-based: every sigma_r must be >= 1")
    r = np.arange(1, TOP_K + 1)
    return np.abs(r - np.minimum(sigma, TOP_K + 1)).sum(axis=-1)


def top5_distance(top5_a: np.ndarray, top5_b: np.ndarray) -> np.ndarray:
    """Top-5 distance from frame A (the reference) to frame B, given both frames' top-5 classes.

    Asymmetric: A's classes are located in B's ranking.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import top5_distance
    >>> int(top5_distance(np.array([1, 2, 3, 4, 5]), np.array([2, 1, 3, 4, 5])))
    2
    >>> int(top5_distance(np.array([1, 2, 3, 4, 5]), np.array([6, 7, 8, 9, 10])))  # no class in common
    15
    """
    return top5_distance_from_ranks(top5_ranks(top5_a, top5_b))


def _predictions(predictions: np.ndarray) -> np.ndarray:
    predictions = np.asarray(predictions)
    if predictions.ndim not in (2, 3) or (predictions.ndim == 3 and predictions.shape[2] != TOP_K) \
            or not np.issubdtype(predictions.dtype, np.integer):
        raise ValueError("predictions must be integer classes of shape (videos, frames) or "
                         f"(videos, frames, {TOP_K}); got {predictions.dtype} {predictions.shape}")
    return predictions


def flip_probability(predictions: np.ndarray, perturbation: str, difficulty: int = 1) -> float:
    """Mean over videos of the fraction of frame pairs whose top-1 classes differ (in [0, 1]).

    ``predictions`` has shape (V, T) or (V, T, 5); see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import flip_probability
    >>> predictions = np.array([[3, 3, 5, 5, 3], [1, 1, 1, 1, 1]])  # 2 videos of 5 frames, top-1 class
    >>> flip_probability(predictions, 'rotate')  # (2 flips in 4 pairs + 0) / 2
    0.25
    >>> flip_probability(predictions, 'shot_noise')  # noise: each frame against frame 0
    0.25
    """
    predictions = _predictions(predictions)
    top1 = predictions[..., 0] if predictions.ndim == 3 else predictions
    pairs = frame_pairs(top1.shape[1], perturbation, difficulty)
    flips = top1[:, pairs[:, 0]] != top1[:, pairs[:, 1]]
    return float(flips.mean(axis=1).mean())


def flip_probability_by_offset(predictions: np.ndarray, perturbation: str) -> np.ndarray:
    """Flip probability for every frame offset k = 1..T-1 (index k-1 of the result).

    Noise types: fraction of videos whose frame k differs from frame 0. Others: the flip
    probability at stride k (entries 0..2 equal difficulties 1..3).
    """
    predictions = _predictions(predictions)
    top1 = predictions[..., 0] if predictions.ndim == 3 else predictions
    n_frames = top1.shape[1]
    if is_noise(perturbation):
        return (top1[:, 1:] != top1[:, :1]).mean(axis=0)
    return np.array([(top1[:, k:] != top1[:, :-k]).mean(axis=1).mean() for k in range(1, n_frames)])


def mean_top5_distance(predictions: np.ndarray, perturbation: str, difficulty: int = 1) -> float:
    """Unnormalised top-5 distance: mean over videos of the mean over frame pairs (in [0, 18]).

    ``predictions`` has shape (V, T, 5).

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import mean_top5_distance
    >>> top5 = np.array([[[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [2, 1, 3, 4, 5]]])  # 1 video, 3 frames
    >>> mean_top5_distance(top5, 'rotate')  # (0 + 2) / 2
    1.0
    """
    predictions = _predictions(predictions)
    if predictions.ndim != 3:
        raise ValueError("the top-5 distance needs top-5 predictions of shape (videos, frames, 5)")
    pairs = frame_pairs(predictions.shape[1], perturbation, difficulty)
    distances = top5_distance(predictions[:, pairs[:, 0]], predictions[:, pairs[:, 1]])
    return float(distances.mean(axis=1).mean())


def sequence_metrics(predictions: np.ndarray, perturbation: str, difficulty: int = 1) -> dict:
    """``flip_probability`` and ``top5_distance`` (None for top-1 predictions) of one sequence set."""
    predictions = _predictions(predictions)
    return {
        "flip_probability": flip_probability(predictions, perturbation, difficulty),
        "top5_distance": (mean_top5_distance(predictions, perturbation, difficulty)
                          if predictions.ndim == 3 else None),
    }


def unnormalized_imagenet_p(predictions: Mapping[str, np.ndarray]) -> dict:
    """Flip probability and top-5 distance of every set, per perturbation and difficulty.

    Parameters
    ----------
    predictions : mapping of str to ndarray
        Sequence-set name (``<perturbation>`` or ``<noise type>_<d>``) -> predictions.

    Returns
    -------
    dict
        ``{perturbation: {"1": {"flip_probability": ..., "top5_distance": ...}, "2": ..., ...}}``.
        Noise types have the difficulties of the sets given; the others 1, 2 and 3.
    """
    results: dict = {}
    for set_name in sorted(predictions):
        perturbation, difficulty = parse_sequence_set(set_name)
        difficulties = DIFFICULTIES if difficulty is None else (difficulty,)
        per_difficulty = results.setdefault(perturbation, {})
        for d in difficulties:
            per_difficulty[str(d)] = sequence_metrics(predictions[set_name], perturbation, d)
    return {p: dict(sorted(v.items())) for p, v in results.items()}


def flip_baseline(results: Mapping[str, Mapping]) -> dict:
    """A baseline (e.g. AlexNet's) from ``unnormalized_imagenet_p`` results: their difficulty 1."""
    return {p: dict(per_difficulty["1"]) for p, per_difficulty in results.items() if "1" in per_difficulty}


def _ratio(value, baseline_value):
    if value is None or baseline_value is None:
        return None
    if baseline_value <= 0:
        raise ValueError(f"baseline values must be positive, got {baseline_value}")
    return 100.0 * value / baseline_value


def summarize_imagenet_p(predictions: Mapping[str, np.ndarray],
                         baseline: Mapping[str, Mapping[str, float]] | None = None,
                         allow_incomplete: bool = False) -> dict:
    """All ImageNet-P metrics of one model.

    Parameters
    ----------
    predictions : mapping of str to ndarray
        Sequence-set name -> predictions (see ``unnormalized_imagenet_p``).
    baseline : mapping, optional
        Perturbation -> ``{"flip_probability": FP, "top5_distance": uT5D}`` of the normalising
        model (AlexNet in the paper) at difficulty 1. Without it FR, T5D, mFR and mT5D are None.
    allow_incomplete : bool
        If False, a baseline that lacks one of the 10 test perturbations, or predictions that lack
        one, raise; if True, mFR and mT5D are then None.

    Returns
    -------
    dict
        ``perturbations`` (unnormalised values, FP as a fraction, uT5D in 0..18), ``FR`` and
        ``T5D`` (percent, difficulty 1, per perturbation that has a baseline), ``mFR`` and ``mT5D``
        (percent, means over the 10 test perturbations) and ``missing`` (test perturbations absent
        from the predictions or the baseline).

    Examples
    --------
    >>> import numpy as np
    >>> from metrics import summarize_imagenet_p
    >>> predictions = {'rotate': np.array([[3, 3, 5, 5, 3]]), 'shot_noise_2': np.array([[1, 2, 1, 1]])}
    >>> result = summarize_imagenet_p(predictions, allow_incomplete=True)
    >>> sorted(result)
    ['FR', 'T5D', 'mFR', 'mT5D', 'missing', 'perturbations']
    """
    results = unnormalized_imagenet_p(predictions)
    summary = {"perturbations": results, "FR": {}, "T5D": {}, "mFR": None, "mT5D": None, "missing": []}
    if baseline is None:
        return summary
    for p in sorted(set(results) & set(baseline)):
        value, base = results[p].get("1", {}), baseline[p]
        summary["FR"][p] = _ratio(value.get("flip_probability"), base.get("flip_probability"))
        summary["T5D"][p] = _ratio(value.get("top5_distance"), base.get("top5_distance"))
    missing = [p for p in TEST_PERTURBATIONS if p not in summary["FR"]]
    if missing and not allow_incomplete:
        raise ValueError("mFR and mT5D need predictions and baseline values for all 10 test "
                         f"perturbations; missing: {', '.join(missing)}")
    summary["missing"] = missing
    for key, mean_key in (("FR", "mFR"), ("T5D", "mT5D")):
        values = [summary[key].get(p) for p in TEST_PERTURBATIONS]
        if None not in values:
            summary[mean_key] = float(np.mean(values))
    return summary
