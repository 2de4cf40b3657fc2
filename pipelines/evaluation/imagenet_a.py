"""The files of an ImageNet-A evaluation: ``predictions/imagenet-a.jsonl`` (key, label, the 200-way
prediction and its confidence), ``logits.npz`` (logits, labels, keys), ``metrics.json`` (accuracy,
RMS calibration error and AURRA under both conventions, see
:func:`metrics.imagenet_a_o.imagenet_a_metrics`) and ``report.md``."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from metrics.imagenet_a_o import imagenet_a_metrics, softmax
from schemas.adversarial import A_TREE
from schemas.class_subsets import subset_indices
from schemas.release import dumps, json_line
from schemas.wnids import imagenet_wnids

from pipelines.evaluation.report import REPORT_FILE
from pipelines.evaluation.scores import METRICS_FILE, PREDICTIONS_DIR, move_to_output

PREDICTIONS = f"{PREDICTIONS_DIR}/{A_TREE}.jsonl"
LOGITS_FILE = "logits.npz"


def write_a_outputs(out_dir: str, results, model_name: str) -> dict:
    """Sink: every file of an ImageNet-A evaluation from ``[((key, label), logits)]``; returns metrics.json's document."""
    results = sorted(results, key=lambda item: item[0])
    keys = [key for (key, _), _ in results]
    labels = np.array([label for (_, label), _ in results], dtype=np.int64)
    logits = np.stack([logit for _, logit in results]).astype(np.float32)
    classes = subset_indices("imagenet_a")
    probabilities = softmax(logits[:, classes])
    wnids = imagenet_wnids()
    document = {"model": model_name, "imagenet_a": {"images": len(keys), **imagenet_a_metrics(logits, labels)}}
    with tempfile.TemporaryDirectory() as local:
        out = Path(local)
        (out / PREDICTIONS).parent.mkdir(parents=True)
        (out / PREDICTIONS).write_text("".join(json_line({
            "key": k, "label": int(l), "prediction_200": wnids[classes[p.argmax()]],
            "confidence_200": float(p.max()), "prediction_1000": wnids[int(row.argmax())]})
            for k, l, p, row in zip(keys, labels, probabilities, logits)))
        np.savez(out / LOGITS_FILE, logits=logits, labels=labels, keys=np.array(keys))
        (out / METRICS_FILE).write_text(dumps(document))
        (out / REPORT_FILE).write_text(report_markdown(document))
        move_to_output(out, out_dir)
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
