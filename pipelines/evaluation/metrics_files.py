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
import math
import zipfile
from pathlib import Path

import numpy as np

from metrics.imagenet_a_o import imagenet_a_accuracy, imagenet_o_metrics
from metrics.imagenet_c import summarize_imagenet_c
from metrics.imagenet_p import flip_baseline, summarize_imagenet_p, unnormalized_imagenet_p
from schemas.baselines import ALEXNET_IMAGENET_C, ErrorBaseline
from schemas.release import dumps

from pipelines.formats.json_files import read_json

__all__ = ["ERRORS_FILE", "FLIPS_FILE", "load_errors", "write_errors", "load_error_baseline",
           "check_baseline_covers", "load_npz", "load_flips", "write_flips", "load_flip_baseline",
           "imagenet_c_metrics", "imagenet_p_metrics", "imagenet_a_metrics", "imagenet_o_metrics_file"]

ERRORS_FILE = "imagenet-c-errors.json"
FLIPS_FILE = "imagenet-p-predictions.npz"

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # a fixed time stamp keeps the archive's bytes reproducible


def _number(value) -> bool:
    """True for a finite JSON number (not a boolean, NaN or infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_errors(path) -> tuple[dict, float | None]:
    """Read an errors file: ``(corruption -> 5 errors, clean error or None)``.

    Raises
    ------
    ValueError
        If the file cannot be read, is not JSON, lacks ``corruptions``, or holds
        values that are not 5 finite numbers in [0, 1] (booleans, NaN and infinities included).
    """
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("corruptions"), dict):
        raise ValueError(f"{path}: expected {{\"clean\": <error or null>, \"corruptions\": "
                         "{\"<name>\": [e1, e2, e3, e4, e5], ...}}")
    clean = document.get("clean")
    if clean is not None and not (_number(clean) and 0 <= clean <= 1):
        raise ValueError(f"{path}: \"clean\" must be a number in [0, 1] or null, got {json.dumps(clean)}")
    for name, errors in document["corruptions"].items():
        if not isinstance(errors, list) or len(errors) != 5 or not all(_number(e) and 0 <= e <= 1 for e in errors):
            raise ValueError(f"{path}: corruption {name!r} must map to a list of 5 numbers in [0, 1] "
                             f"(errors at severities 1..5), got {json.dumps(errors)}")
    return document["corruptions"], clean


def write_errors(path, corruptions, clean) -> None:
    """Write an errors file (sorted keys)."""
    Path(path).write_text(dumps({"clean": clean, "corruptions": corruptions}))


def load_error_baseline(path) -> ErrorBaseline:
    """An ImageNet-C baseline from an errors file (e.g. of an AlexNet run), named after the file."""
    corruptions, clean = load_errors(path)
    _require_corruptions(path, corruptions)
    zero = [c for c, errors in corruptions.items() if sum(errors) <= 0]
    if zero:
        raise ValueError(f"{path}: a baseline must have errors above 0 (CE divides by their sum); "
                         f"all zero for {', '.join(zero)}")
    return ErrorBaseline(name=Path(path).stem, clean=clean,
                         corruptions={c: tuple(e) for c, e in corruptions.items()})


def _require_corruptions(path, corruptions) -> None:
    if not corruptions:
        raise ValueError(f"{path}: \"corruptions\" is empty")


def check_baseline_covers(baseline: ErrorBaseline, corruptions, clean) -> None:
    """Raise ValueError when ``baseline`` lacks a corruption of ``corruptions``, or when Relative CE
    (``clean`` given) would divide by zero."""
    missing = [c for c in corruptions if c not in baseline.corruptions]
    if missing:
        raise ValueError(f"baseline {baseline.name} has no errors for {', '.join(missing)}")
    if clean is not None and baseline.clean is not None:
        flat = [c for c in corruptions if sum(e - baseline.clean for e in baseline.corruptions[c]) == 0]
        if flat:
            raise ValueError(f"baseline {baseline.name}: errors equal to its clean error for {', '.join(flat)} "
                             "(Relative CE divides by their difference)")


def load_npz(path) -> dict:
    """Every array of an ``.npz`` file; an unreadable or invalid file, or one holding an array name
    twice (the last would win unseen), is a ValueError naming it."""
    try:
        with open(path, "rb") as stream:
            zipped = stream.read(2) == b"PK"
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {(err.strerror or type(err).__name__).lower()}") from err
    if not zipped:
        raise ValueError(f"{path}: not a readable .npz archive (not a zip of .npy arrays, as numpy.savez writes)")
    try:
        with zipfile.ZipFile(path) as members:
            names = members.namelist()
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"the array {repeated[0]!r} appears twice")
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise ValueError("a single .npy array, not an .npz archive")
            return {name: archive[name] for name in archive.files}
    except OSError as err:
        reason = (err.strerror or str(err) or type(err).__name__).lower() if err.errno else str(err)
        raise ValueError(f"{path}: cannot read: {reason}") from err
    except (ValueError, EOFError, zipfile.BadZipFile, KeyError) as err:
        raise ValueError(f"{path}: not a readable .npz archive ({type(err).__name__}: {err})") from err


def load_flips(path) -> dict:
    """Read a flips file: set name -> integer array (V, T, 5) or (V, T), V >= 1.

    Raises
    ------
    ValueError
        If the file is unreadable, holds no array, or an array is not integer classes of shape
        (V, T) or (V, T, 5) with at least one video.
    """
    arrays = load_npz(path)
    if not arrays:
        raise ValueError(f"{path}: holds no prediction arrays")
    for name, array in arrays.items():
        if array.dtype.kind not in "iu" or array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] != 5):
            raise ValueError(f"{path}: {name!r} must be integer classes of shape (videos, frames) or "
                             f"(videos, frames, 5), got {array.dtype} {array.shape}")
        if array.shape[0] == 0:
            raise ValueError(f"{path}: {name!r} holds no video (shape {array.shape})")
    return arrays


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
    document = read_json(path)
    if not isinstance(document, dict) or not document:
        raise ValueError(f"{path}: expected {{\"<perturbation>\": {{\"flip_probability\": FP, "
                         "\"top5_distance\": uT5D}, ...}")
    for name, values in document.items():
        if not isinstance(values, dict) or "flip_probability" not in values:
            raise ValueError(f"{path}: {name!r} must map to {{\"flip_probability\": FP, "
                             "\"top5_distance\": uT5D}")
        for key, value in values.items():
            if value is not None and not (_number(value) and value > 0):
                raise ValueError(f"{path}: {name}.{key} must be a number above 0 (FR and T5D divide by it), "
                                 f"got {json.dumps(value)}")
    return document


def _arrays(path, names) -> list:
    arrays = load_npz(path)
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError(f"{path}: missing array(s) {', '.join(missing)}; expected {', '.join(names)}")
    for name in names:
        array = arrays[name]
        if array.dtype.kind not in "iuf" or array.size == 0:
            raise ValueError(f"{path}: {name!r} must be a non-empty numeric array, got {array.dtype} {array.shape}")
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise ValueError(f"{path}: {name!r} holds NaN or infinite values")
    return [arrays[n] for n in names]


def imagenet_c_metrics(errors_path, baseline_path=None) -> dict:
    """``summarize_imagenet_c`` of an errors file; the baseline is AlexNet unless a file is given."""
    corruptions, clean = load_errors(errors_path)
    _require_corruptions(errors_path, corruptions)
    baseline = load_error_baseline(baseline_path) if baseline_path else ALEXNET_IMAGENET_C
    check_baseline_covers(baseline, corruptions, clean)
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
