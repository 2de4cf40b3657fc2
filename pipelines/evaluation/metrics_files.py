"""Reading and writing the metric input files: ImageNet-C errors (JSON), ImageNet-P predictions (NPZ).

Errors file (``--errors``), fractions in [0, 1]::

    {"clean": 0.2385 | null,
     "corruptions": {"gaussian_noise": [e1, e2, e3, e4, e5], ...}}

Flips file (``--flips``): an ``.npz`` archive with one integer array per ImageNet-P set, named
``<perturbation>`` or ``<noise type>_<d>``, of shape (V, T, 5) (top-5 classes per frame, best
first) or (V, T) (top-1 only). Flip baseline (``--flip-baseline``): JSON
``{"<perturbation>": {"flip_probability": FP, "top5_distance": uT5D}, ...}`` at difficulty 1, or a
flips file of the baseline model.
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from metrics.imagenet_a_o import imagenet_a_accuracy, imagenet_o_metrics
from metrics.imagenet_c import summarize_imagenet_c
from metrics.imagenet_p import flip_baseline, summarize_imagenet_p, unnormalized_imagenet_p
from schemas.baselines import ALEXNET_IMAGENET_C, ErrorBaseline
from schemas.release import dumps

ERRORS_FILE = "imagenet-c-errors.json"
FLIPS_FILE = "imagenet-p-predictions.npz"

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # a fixed time stamp keeps the archive's bytes reproducible


def load_errors(path) -> tuple[dict, float | None]:
    """Read an errors file: ``(corruption -> 5 errors, clean error or None)``.

    Raises
    ------
    ValueError
        If the JSON lacks ``corruptions`` or holds values of the wrong type.
    """
    document = json.loads(Path(path).read_text())
    if not isinstance(document, dict) or not isinstance(document.get("corruptions"), dict):
        raise ValueError(f"{path}: expected {{\"clean\": <error or null>, \"corruptions\": "
                         "{\"<name>\": [e1, e2, e3, e4, e5], ...}}")
    clean = document.get("clean")
    if clean is not None and not isinstance(clean, (int, float)):
        raise ValueError(f"{path}: \"clean\" must be a number or null, got {clean!r}")
    for name, errors in document["corruptions"].items():
        if not isinstance(errors, list) or not all(isinstance(e, (int, float)) for e in errors):
            raise ValueError(f"{path}: corruption {name!r} must map to a list of 5 numbers")
    return document["corruptions"], clean


def write_errors(path, corruptions, clean) -> None:
    """Write an errors file (sorted keys)."""
    Path(path).write_text(dumps({"clean": clean, "corruptions": corruptions}))


def load_error_baseline(path) -> ErrorBaseline:
    """An ImageNet-C baseline from an errors file (e.g. of an AlexNet run), named after the file."""
    corruptions, clean = load_errors(path)
    return ErrorBaseline(name=Path(path).stem, clean=clean,
                         corruptions={c: tuple(e) for c, e in corruptions.items()})


def load_flips(path) -> dict:
    """Read a flips file: set name -> integer array (V, T, 5) or (V, T)."""
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def write_flips(path, predictions) -> None:
    """Write a flips file whose bytes depend on the arrays only (sorted names, fixed dates)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(predictions):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(predictions[name]), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", _ZIP_DATE), buffer.getvalue(),
                             compress_type=zipfile.ZIP_DEFLATED)


def load_flip_baseline(path) -> dict:
    """An ImageNet-P baseline from JSON values or from the baseline model's flips file.

    Raises
    ------
    ValueError
        If a JSON entry lacks ``flip_probability``.
    """
    if str(path).endswith(".npz"):
        return flip_baseline(unnormalized_imagenet_p(load_flips(path)))
    document = json.loads(Path(path).read_text())
    for name, values in document.items():
        if not isinstance(values, dict) or "flip_probability" not in values:
            raise ValueError(f"{path}: {name!r} must map to {{\"flip_probability\": FP, "
                             "\"top5_distance\": uT5D}")
    return document


def _arrays(path, names) -> list:
    with np.load(path, allow_pickle=False) as archive:
        missing = [n for n in names if n not in archive.files]
        if missing:
            raise ValueError(f"{path}: missing array(s) {', '.join(missing)}; expected {', '.join(names)}")
        return [archive[n] for n in names]


def imagenet_c_metrics(errors_path, baseline_path=None) -> dict:
    """``summarize_imagenet_c`` of an errors file; the baseline is AlexNet unless a file is given."""
    corruptions, clean = load_errors(errors_path)
    baseline = load_error_baseline(baseline_path) if baseline_path else ALEXNET_IMAGENET_C
    return summarize_imagenet_c(corruptions, clean, baseline)


def imagenet_p_metrics(flips_path, baseline_path=None) -> dict:
    """``summarize_imagenet_p`` of a flips file, normalised when a flip baseline file is given."""
    baseline = load_flip_baseline(baseline_path) if baseline_path else None
    return summarize_imagenet_p(load_flips(flips_path), baseline)


def imagenet_a_metrics(path) -> dict:
    """ImageNet-A accuracy under both conventions from a logits file."""
    return imagenet_a_accuracy(*_arrays(path, ("logits", "labels")))


def imagenet_o_metrics_file(path) -> dict:
    """ImageNet-O AUPR, AUROC and FPR95 from a logits file."""
    return imagenet_o_metrics(*_arrays(path, ("logits_o", "logits_val")))
