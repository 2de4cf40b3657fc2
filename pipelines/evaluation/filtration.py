"""The machine stages of adversarial filtration, as pure functions over stored logits.

Stage 1 (:func:`judge_candidate`) turns one candidate's logits, shape (models, 10 crops, 1000),
into its scores and a verdict: for ImageNet-A rules R1 (some crop of some model predicts the weak
label, argmax over the class set) and R2 (the weak label's probability over the class set exceeds
the threshold on some crop of some model); for ImageNet-O the score min over crops and models of
the max softmax probability (MSP) against a cut. Stage 2 (:func:`rank_confusion`) orders the
survivors of one confusion and caps them. Both only read the logits, so a rerun from the stored
logits reproduces the shortlist bit for bit.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from schemas.adversarial import CAPPED, KEPT, REJECTED, TASKS, FilterConfig
from schemas.class_names import class_name
from schemas.wnids import imagenet_wnids, wnid_to_label
from transforms.ten_crop import CENTRE_CROP, CROP_NAMES

__all__ = ["TOP_K", "subset_softmax", "model_scores", "judge_candidate", "rank_confusion"]

TOP_K = 5


def subset_softmax(logits: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Softmax over ``columns`` of the last axis (float64), e.g. the 200 A classes of (..., 1000) logits."""
    sub = np.asarray(logits, dtype=np.float64)[..., columns]
    sub = np.exp(sub - sub.max(axis=-1, keepdims=True))
    return sub / sub.sum(axis=-1, keepdims=True)


def _top5(probabilities: np.ndarray, columns: np.ndarray) -> list:
    """[[wnid, probability], ...] of the 5 most probable classes of one crop (ties: lower index first)."""
    order = np.argsort(-probabilities, kind="stable")[:TOP_K]
    wnids = imagenet_wnids()
    return [[wnids[columns[i]], float(probabilities[i])] for i in order]


def model_scores(logits: np.ndarray, columns: np.ndarray, weak: Optional[int]) -> dict:
    """Per-crop scores of one model's (10, 1000) logits over the class set ``columns``.

    Returns
    -------
    dict
        ``argmax`` (wnid per crop, over the set), ``argmax_1000``, ``top5`` (per crop, over the
        set), ``msp`` (max probability over the set), and when ``weak`` (ImageNet-1k index) is
        given ``weak_prob`` (its probability over the set; 0 when it is outside the set) and
        ``weak_prob_1000``.
    """
    wnids = imagenet_wnids()
    probabilities = subset_softmax(logits, columns)
    result = {"argmax": [wnids[columns[i]] for i in probabilities.argmax(axis=1)],
              "argmax_1000": [wnids[i] for i in np.asarray(logits).argmax(axis=1)],
              "msp": [float(p) for p in probabilities.max(axis=1)],
              "top5": [_top5(p, columns) for p in probabilities]}
    if weak is not None:
        position = np.flatnonzero(columns == weak)
        result["weak_prob"] = ([float(p) for p in probabilities[:, position[0]]] if position.size
                               else [0.0] * len(probabilities))
        result["weak_prob_1000"] = [float(p) for p in subset_softmax(logits, np.arange(logits.shape[-1]))[:, weak]]
    return result


def judge_candidate(logits: np.ndarray, weak_wnid: Optional[str], config: FilterConfig,
                    model_names: Sequence[str]) -> dict:
    """Stage 1 of one decodable candidate.

    Parameters
    ----------
    logits : array (models, 10, 1000)
        Its logits, crops in :data:`transforms.ten_crop.CROP_NAMES` order.
    weak_wnid : str, optional
        The weak label (ImageNet-A); None for ImageNet-O.
    config : FilterConfig
        The class set, threshold, primary model and cut.
    model_names : sequence of str
        Names of the models, in logits order.

    Returns
    -------
    dict
        ``models`` (per-model :func:`model_scores` with the model name), ``rules``,
        ``decision`` (``kept`` pending the cap, or ``rejected``), ``reason``, ``confusion``
        (the key of stage 2; None when rejected) and, for O, ``score`` and ``anomaly_score``.
    """
    logits = np.asarray(logits, dtype=np.float32)
    if logits.ndim != 3 or logits.shape[1] != len(CROP_NAMES) or logits.shape[0] != len(model_names):
        raise ValueError(f"logits must have shape ({len(model_names)}, {len(CROP_NAMES)}, 1000), got {logits.shape}")
    columns = np.array([wnid_to_label()[w] for w in config.class_wnids], dtype=np.int64)
    weak = wnid_to_label()[weak_wnid] if weak_wnid is not None else None
    models = [{"model": name, **model_scores(model_logits, columns, weak)}
              for name, model_logits in zip(model_names, logits)]
    primary = models[config.primary_model]
    predicted = primary["argmax"][CENTRE_CROP]
    if TASKS[config.task].weak_labels:
        return {"models": models, **_judge_a(models, weak_wnid, predicted, config)}
    return {"models": models, **_judge_o(models, predicted, config)}


def _judge_a(models, weak_wnid, predicted, config):
    r1 = [(m["model"], c) for m in models for c, p in enumerate(m["argmax"]) if p == weak_wnid]
    probabilities = np.array([m["weak_prob"] for m in models])
    statistic = float(probabilities.max())
    worst = np.unravel_index(int(probabilities.argmax()), probabilities.shape)
    rules = {"R0": False, "R1": bool(r1), "R2": statistic > config.threshold,
             "R2_values": {"per_crop_max": statistic,
                           "centre": float(probabilities[:, CENTRE_CROP].max()),
                           "crop_mean": float(probabilities.mean(axis=1).max())},
             "in_class_set": weak_wnid in config.class_wnids}
    reasons = []
    if not rules["in_class_set"]:
        reasons.append(f"R0: the weak label {weak_wnid} ({class_name(weak_wnid)}) is not in the class set")
    if r1:
        model, crop = r1[0]
        reasons.append(f"R1: {len(r1)} crop(s) predict the weak label, first {model} crop {crop} ({CROP_NAMES[crop]})")
    if rules["R2"]:
        reasons.append(f"R2: P({class_name(weak_wnid)}) = {statistic:.6f} > {config.threshold} "
                       f"({models[worst[0]]['model']} crop {worst[1]} ({CROP_NAMES[worst[1]]}))")
    if reasons:
        return {"rules": rules, "decision": REJECTED, "reason": "; ".join(reasons), "confusion": None,
                "order_key": statistic}
    return {"rules": rules, "decision": KEPT, "reason": (
        f"survives R1 and R2: no crop predicts {class_name(weak_wnid)}, max P = {statistic:.6f} <= {config.threshold}"),
        "confusion": [weak_wnid, predicted], "order_key": statistic}


def _judge_o(models, predicted, config):
    msp = np.array([m["msp"] for m in models])
    score = float(msp.min())
    rules = {"R0": False, "msp_cut": config.msp_cut, "score": score}
    common = {"rules": rules, "score": score, "anomaly_score": -score, "order_key": -score}
    if score < config.msp_cut:
        return {**common, "decision": REJECTED, "confusion": None,
                "reason": f"not confident: min MSP over crops {score:.6f} < cut {config.msp_cut}"}
    return {**common, "decision": KEPT, "confusion": [predicted],
            "reason": f"confidently {class_name(predicted)}: min MSP over crops {score:.6f} >= cut {config.msp_cut}"}


def rank_confusion(rows: Sequence[dict], cap: int) -> list:
    """Stage 2: order the stage-1 survivors of one confusion and cap them.

    Rows are ordered by ``order_key`` ascending (A: the weak label's probability, most
    adversarial first; O: minus the score, most confident first), ties by ``sha256`` then ``key``;
    each gets ``rank`` (1-based) and ``confusion_size``; those past ``cap`` become ``capped``.
    """
    ordered = sorted(rows, key=lambda r: (r["order_key"], r["sha256"], r["key"]))
    ranked = []
    for rank, row in enumerate(ordered, start=1):
        row = {**row, "rank": rank, "confusion_size": len(ordered)}
        label = " -> ".join(class_name(w) for w in row["confusion"])
        if rank > cap:
            row.update(decision=CAPPED, reason=f"{row['reason']}; rank {rank} of {len(ordered)} in confusion "
                                               f"{label}: past the cap of {cap}")
        else:
            row["reason"] = f"{row['reason']}; rank {rank} of {len(ordered)} in confusion {label}"
        ranked.append(row)
    return ranked
