"""The files of an ImageNet-A or ImageNet-O evaluation.

ImageNet-A: ``predictions/imagenet-a.jsonl`` (key, label, the 200-way prediction and its
confidence), ``logits.npz`` (logits, labels, keys), ``metrics.json`` (accuracy, RMS calibration
error and AURRA under both conventions, see :func:`metrics.imagenet_a_o.imagenet_a_metrics`) and
``report.md``.

ImageNet-O: ``predictions/imagenet-o.jsonl`` (the O images, label = their class folder) and
``predictions/in-distribution.jsonl`` (the ImageNet val images of the 200 O classes), each row
with the 200-way prediction, its confidence (max softmax over the 200 O classes) and the anomaly
score ``-confidence``; ``logits.npz`` (``logits_o``, ``logits_val``, ``keys_o``, ``keys_val``:
what ``imagenet-cp metrics --imagenet-o`` reads); ``metrics.json`` (AUPR, AUROC, FPR95 of
:func:`metrics.imagenet_a_o.imagenet_o_metrics`, O images the positives, and the chance AUPR
``positives / all``) and ``report.md``."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from metrics.imagenet_a_o import imagenet_a_metrics, imagenet_o_metrics, softmax
from schemas.adversarial import A_TREE, O_TREE
from schemas.class_subsets import subset_indices
from schemas.release import dumps, json_line
from schemas.wnids import imagenet_wnids

from pipelines.evaluation.report import REPORT_FILE
from pipelines.evaluation.scores import METRICS_FILE, PREDICTIONS_DIR, move_to_output

__all__ = ["PREDICTIONS", "O_PREDICTIONS", "IN_DISTRIBUTION", "IN_DISTRIBUTION_PREDICTIONS", "LOGITS_FILE",
           "prediction_rows", "write_a_outputs", "chance_aupr", "write_o_outputs", "report_markdown",
           "o_report_markdown"]

PREDICTIONS = f"{PREDICTIONS_DIR}/{A_TREE}.jsonl"
O_PREDICTIONS = f"{PREDICTIONS_DIR}/{O_TREE}.jsonl"
IN_DISTRIBUTION = "in-distribution"
"""The part of an ImageNet-O evaluation that holds the ImageNet val images (the negatives)."""
IN_DISTRIBUTION_PREDICTIONS = f"{PREDICTIONS_DIR}/{IN_DISTRIBUTION}.jsonl"
LOGITS_FILE = "logits.npz"


def _arrays(results):
    """``(keys, labels, float32 logits)`` of ``[((part, key, label), logits)]``, sorted by part and key."""
    results = sorted(results, key=lambda item: item[0][:2])
    keys = [key for (_, key, _), _ in results]
    labels = np.array([label for (_, _, label), _ in results], dtype=np.int64)
    logits = np.stack([logit for _, logit in results]).astype(np.float32)
    return keys, labels, logits


def prediction_rows(keys, labels, logits, subset: str, anomaly: bool = False) -> str:
    """JSON lines of one part: key, label, the prediction and confidence over ``subset``'s 200
    classes (and the anomaly score ``-confidence`` when ``anomaly``), the 1000-way prediction."""
    classes = subset_indices(subset)
    probabilities = softmax(logits[:, classes])
    wnids = imagenet_wnids()
    rows = []
    for k, l, p, row in zip(keys, labels, probabilities, logits):
        fields = {"key": k, "label": int(l), "prediction_200": wnids[classes[p.argmax()]],
                  "confidence_200": float(p.max())}
        if anomaly:
            fields["anomaly_score"] = -float(p.max())
        rows.append(json_line({**fields, "prediction_1000": wnids[int(row.argmax())]}))
    return "".join(rows)


def _write_files(out_dir: str, files: dict, arrays: dict) -> None:
    """Write ``{relative path: text}`` and ``logits.npz`` of ``arrays`` locally, then move them to ``out_dir``."""
    with tempfile.TemporaryDirectory() as local:
        out = Path(local)
        (out / PREDICTIONS_DIR).mkdir(parents=True)
        for relative, text in files.items():
            (out / relative).write_text(text)
        np.savez(out / LOGITS_FILE, **arrays)
        move_to_output(out, out_dir)


def write_a_outputs(out_dir: str, results, model_name: str) -> dict:
    """Sink: every file of an ImageNet-A evaluation from ``[((part, key, label), logits)]``; returns
    metrics.json's document."""
    keys, labels, logits = _arrays(results)
    document = {"model": model_name, "imagenet_a": {"images": len(keys), **imagenet_a_metrics(logits, labels)}}
    _write_files(out_dir, {PREDICTIONS: prediction_rows(keys, labels, logits, "imagenet_a"),
                           METRICS_FILE: dumps(document), REPORT_FILE: report_markdown(document)},
                 {"logits": logits, "labels": labels, "keys": np.array(keys)})
    return document


def chance_aupr(positives: int, negatives: int) -> float:
    """The AUPR of a detector that ranks at random: the share of positives, in percent."""
    return 100.0 * positives / (positives + negatives)


def write_o_outputs(out_dir: str, results, model_name: str, in_distribution: dict) -> dict:
    """Sink: every file of an ImageNet-O evaluation from ``[((part, key, label), logits)]`` (part
    ``imagenet-o`` or :data:`IN_DISTRIBUTION`); ``in_distribution`` describes the val input
    (``kind``, ``listed``, ``unusable``). Returns metrics.json's document."""
    parts = {part: _arrays([r for r in results if r[0][0] == part]) for part in (O_TREE, IN_DISTRIBUTION)}
    (keys_o, labels_o, logits_o), (keys_in, labels_in, logits_in) = parts[O_TREE], parts[IN_DISTRIBUTION]
    document = {"model": model_name, "imagenet_o": {
        "images": len(keys_o), "in_distribution_images": len(keys_in),
        "in_distribution": {**in_distribution, "outside_classes": in_distribution["listed"] - len(keys_in)},
        "chance_AUPR": chance_aupr(len(keys_o), len(keys_in)), **imagenet_o_metrics(logits_o, logits_in)}}
    _write_files(out_dir, {O_PREDICTIONS: prediction_rows(keys_o, labels_o, logits_o, "imagenet_o", True),
                           IN_DISTRIBUTION_PREDICTIONS: prediction_rows(keys_in, labels_in, logits_in, "imagenet_o",
                                                                        True),
                           METRICS_FILE: dumps(document), REPORT_FILE: o_report_markdown(document)},
                 {"logits_o": logits_o, "logits_val": logits_in, "keys_o": np.array(keys_o),
                  "keys_val": np.array(keys_in)})
    return document


def _percent(value) -> str:
    return "n/a (fewer than 100 images)" if value is None else f"{value:.2f}"


def report_markdown(document: dict) -> str:
    """``report.md`` of an ImageNet-A evaluation."""
    a = document["imagenet_a"]
    rows = [("accuracy (%)", a["accuracy_200"], a["accuracy_1000"]),
            ("RMS calibration error (%), reference: last bin left out", a["rms_calibration_error"],
             a["rms_calibration_error_1000"]),
            ("RMS calibration error (%), all bins", a["rms_calibration_error_all_bins"],
             a["rms_calibration_error_all_bins_1000"]),
            ("AURRA (%)", a["aurra"], a["aurra_1000"])]
    lines = [f"# Evaluation of `{document['model']}` on ImageNet-A", "", f"{a['images']} images; Resize(256), "
             "CenterCrop(224). The 200-way convention (argmax and softmax over the 200 ImageNet-A classes) is the "
             "reference's and the one published numbers use; 1000-way counts a prediction outside them as wrong.",
             "", "| metric | 200-way (reference) | 1000-way |", "|---|---|---|"]
    lines += [f"| {name} | {_percent(x)} | {_percent(y)} |" for name, x, y in rows]
    return "\n".join(lines) + "\n"


def o_report_markdown(document: dict) -> str:
    """``report.md`` of an ImageNet-O evaluation."""
    o = document["imagenet_o"]
    source = o["in_distribution"]
    rows = [("AUPR (%, the benchmark's headline)", o["AUPR"]), ("chance AUPR (%): positives / all", o["chance_AUPR"]),
            ("AUROC (%)", o["AUROC"]), ("FPR95 (%), recall closest to 95 % (reference)", o["FPR95"]),
            ("FPR95 (%), first threshold reaching 95 %", o["FPR95_first_reaching"])]
    lines = [f"# Evaluation of `{document['model']}` on ImageNet-O", "",
             f"{o['images']} ImageNet-O images (the positives, anomalies) against {o['in_distribution_images']} "
             f"ImageNet validation images of its 200 classes (from the {source['kind'].replace('_', ' ')}; "
             f"{source['outside_classes']} images of other classes left out). Anomaly score: -max softmax over "
             "the 200 ImageNet-O classes; Resize(256), CenterCrop(224) (a release's clean config is already "
             "224).", "", "| metric | value |", "|---|---|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in rows]
    return "\n".join(lines) + "\n"
