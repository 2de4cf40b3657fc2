"""``imagenet-cp evaluate`` on a packaged ImageNet-A set (``imagenet-a/<wnid>/<file>``).

The reference evaluation (``natural-adv-examples/eval.py``): Resize(256), CenterCrop(224),
ImageNet mean/std, one prediction per image, through the same pluggable Beam model handlers as
the C/P evaluation. Writes ``predictions/imagenet-a.jsonl`` (key, label, the 200-way prediction
and its confidence), ``logits.npz`` (logits, labels, keys), ``metrics.json`` (accuracy,
RMS calibration error and AURRA under both conventions, see
:func:`metrics.imagenet_a_o.imagenet_a_metrics`) and ``report.md``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import RunInference

from metrics.imagenet_a_o import imagenet_a_metrics, softmax
from schemas.adversarial import A_TREE
from schemas.class_subsets import subset_indices
from schemas.filter_models import IMAGENET_MEAN, IMAGENET_STD
from schemas.imagenet_val import IMAGE_EXTENSIONS
from schemas.release import dumps, json_line
from schemas.wnids import imagenet_wnids, wnid_to_label
from transforms.ten_crop import centre_crop, normalise

from pipelines.beam.inference import model_handler
from pipelines.beam.runner import make_pipeline

METRICS_FILE = "metrics.json"
REPORT_FILE = "report.md"
PREDICTIONS = f"predictions/{A_TREE}.jsonl"
LOGITS_FILE = "logits.npz"


def a_tree_files(release_dir: str) -> list:
    """``[(key '<wnid>/<file>', label, path)]`` of a packaged ImageNet-A tree, sorted by key.

    Raises
    ------
    ValueError
        On a class folder outside the 200 ImageNet-A classes, or an empty tree.
    """
    root = Path(release_dir, A_TREE)
    allowed = set(subset_indices("imagenet_a").tolist())
    files = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        label = wnid_to_label().get(folder.name)
        if label not in allowed:
            raise ValueError(f"{folder}: not one of the 200 ImageNet-A classes")
        files += [(f"{folder.name}/{p.name}", label, str(p)) for p in sorted(folder.iterdir())
                  if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    if not files:
        raise ValueError(f"{root} holds no images")
    return files


def model_input_a(data: bytes) -> np.ndarray:
    """The reference evaluation input of one image: float32 (3, 224, 224)."""
    return normalise(centre_crop(data, 224, 256), IMAGENET_MEAN, IMAGENET_STD)


def _read(item):
    key, label, path = item
    with open(path, "rb") as stream:
        return (key, label), model_input_a(stream.read())


def _write_outputs(out_dir: str, results, model_name: str) -> dict:
    results = sorted(results)
    keys = [key for (key, _), _ in results]
    labels = np.array([label for (_, label), _ in results], dtype=np.int64)
    logits = np.stack([logit for _, logit in results]).astype(np.float32)
    out = Path(out_dir)
    (out / PREDICTIONS).parent.mkdir(parents=True, exist_ok=True)
    classes = subset_indices("imagenet_a")
    probabilities = softmax(logits[:, classes])
    wnids = imagenet_wnids()
    (out / PREDICTIONS).write_text("".join(json_line({
        "key": k, "label": int(l), "prediction_200": wnids[classes[p.argmax()]], "confidence_200": float(p.max()),
        "prediction_1000": wnids[int(row.argmax())]}) for k, l, p, row in zip(keys, labels, probabilities, logits)))
    np.savez(out / LOGITS_FILE, logits=logits, labels=labels, keys=np.array(keys))
    section = {"images": len(keys), **imagenet_a_metrics(logits, labels)}
    document = {"model": model_name, "imagenet_a": section}
    (out / METRICS_FILE).write_text(dumps(document))
    (out / REPORT_FILE).write_text(report_markdown(document))
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


def evaluate_imagenet_a(release_dir: str, model_path: str, out_dir: Optional[str] = None,
                        framework: Optional[str] = None, batch_size: int = 32, workers: Optional[int] = None,
                        beam_args: Sequence[str] = ()) -> Path:
    """Run ``model_path`` over the packaged ImageNet-A set in ``release_dir``; return the output folder."""
    from pipelines.beam.evaluate import default_output

    files = a_tree_files(release_dir)
    model_name = Path(model_path.rstrip("/")).stem
    out = Path(out_dir) if out_dir else default_output(release_dir, model_path)
    out.mkdir(parents=True, exist_ok=True)
    handler = model_handler(model_path, framework, batch_size)
    with make_pipeline(workers, beam_args) as pipeline:
        (pipeline
         | "ListImages" >> beam.Create(files)
         | "Spread" >> beam.Reshuffle()
         | "ModelInput" >> beam.Map(_read)
         | "Predict" >> RunInference(handler)
         | "Logits" >> beam.MapTuple(lambda key, result: (key, np.asarray(result.inference, dtype=np.float32)))
         | "Collect" >> beam.combiners.ToList()
         | "WriteMetrics" >> beam.Map(lambda results: _write_outputs(str(out), results, model_name)))
    return out
