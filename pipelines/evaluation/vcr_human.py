"""Human reference data for VCR: read and validate a user's human file, fit its curves.

VCR's human study data is not published anywhere reachable, so HMRI and MRSI can only be computed
from a file the user supplies, in one of two forms (docs/guides/vcr.md, "The human file"):

- **per trial** (preferred): a CSV with a header, required columns ``corruption``, ``vd_score``
  (Delta v of the stimulus), ``label``, ``transf_pred`` (the participant's answer), optional
  ``orig_pred`` (answer on the clean image: needed for consistency), ``participant``, ``image_id``,
  ``parameter``; plus a sidecar JSON (``<file>.json`` by default) with ``label_space``,
  ``vif_variant``, ``dv_resolution``, ``source`` and ``licence``. The curves are fitted exactly as
  the model's (:func:`metrics.vcr.performance_curve`, same settings).
- **curves**: a JSON ``{corruption: {"accuracy": curve, "consistency": curve or null}, "meta": {...}}``
  with ``curve`` either ``{"v": [...], "y": [...]}`` (ascending v in [0, 1], y in [0, 1],
  piecewise-linear) or ``{"tck": {"t": [...], "c": [...], "k": 3}}`` (a FITPACK B-spline).

Either way the curves are clipped, made non-increasing and sampled on the 10,000-point grid.
Anything malformed raises :class:`HumanFileError` with the file, the place and what is expected.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from metrics.vcr import monotone_curve, performance_curve, points_function, tck_function
from schemas.vcr import DV_RESOLUTIONS, LABEL_SPACES, VCR_CORRUPTIONS, VIF_VARIANT

__all__ = ["REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "REQUIRED_META", "RECORDED_META", "MODEL_LABEL_SPACE",
           "HumanFileError", "HumanFile", "HumanCurves", "load_human"]

REQUIRED_COLUMNS = ("corruption", "vd_score", "label", "transf_pred")
OPTIONAL_COLUMNS = ("orig_pred", "participant", "image_id", "parameter")
REQUIRED_META = ("label_space", "vif_variant", "dv_resolution")
RECORDED_META = ("source", "licence")
MODEL_LABEL_SPACE = "imagenet1000"
"""The label space of the models evaluated here (1000 ImageNet classes)."""


class HumanFileError(ValueError):
    """A human file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class HumanFile:
    """The human file a VCR evaluation compares the model with (:func:`load_human` reads it).

    Attributes
    ----------
    path : str, optional
        ``.csv`` (per trial, with a sidecar JSON) or ``.json`` (curves); None: no human comparison.
    meta : str, optional
        The sidecar JSON of a CSV (default: the CSV's path with ``.json`` added).
    min_trials : int
        A bin with fewer trials is reported in the warnings.
    """

    path: Optional[str] = None
    meta: Optional[str] = None
    min_trials: int = 10


@dataclass
class HumanCurves:
    """Validated human data: per corruption a monotone ``accuracy`` curve and an optional
    ``consistency`` curve (numpy arrays on the curve grid), plus what describes the file."""

    path: str
    form: str
    sha256: str
    meta: dict
    curves: dict
    bins: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def describe(self) -> dict:
        return {"file": self.path, "form": self.form, "sha256": self.sha256, "meta": self.meta,
                "corruptions": sorted(self.curves), "warnings": list(self.warnings)}


def _check_meta(meta, where: str, dv_resolution: str) -> dict:
    if not isinstance(meta, dict):
        raise HumanFileError(f"{where}: the metadata must be a JSON object with {', '.join(REQUIRED_META)}")
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise HumanFileError(f"{where}: metadata lacks {', '.join(missing)} (required: {', '.join(REQUIRED_META)})")
    if meta["vif_variant"] != VIF_VARIANT:
        raise HumanFileError(f"{where}: vif_variant is {meta['vif_variant']!r}, but this release's delta_v is "
                             f"{VIF_VARIANT!r} (VCR's steerable-pyramid VIF); other VIFs give other numbers")
    if meta["label_space"] not in LABEL_SPACES:
        raise HumanFileError(f"{where}: label_space must be one of {', '.join(LABEL_SPACES)}; got "
                             f"{meta['label_space']!r}")
    if meta["label_space"] != MODEL_LABEL_SPACE:
        raise HumanFileError(f"{where}: label_space {meta['label_space']!r} does not match the model's "
                             f"{MODEL_LABEL_SPACE!r} (no 16-class mapping is bundled)")
    if meta["dv_resolution"] not in DV_RESOLUTIONS:
        raise HumanFileError(f"{where}: dv_resolution must be one of {', '.join(DV_RESOLUTIONS)}; got "
                             f"{meta['dv_resolution']!r}")
    if meta["dv_resolution"] != dv_resolution:
        raise HumanFileError(f"{where}: dv_resolution {meta['dv_resolution']!r} does not match the release's "
                             f"{dv_resolution!r} (delta_v differs between resolutions)")
    return {k: meta.get(k) for k in (*REQUIRED_META, *RECORDED_META)}


def _int(text: str, column: str, where: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise HumanFileError(f"{where}: {column} must be an integer class index, got {text!r}") from None


def _read_trials(path: Path, settings: dict) -> tuple[dict, bool]:
    """``{corruption: (delta_v, correct, consistent or None)}`` of a per-trial CSV."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise HumanFileError(f"{path}: not UTF-8 text ({err})") from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise HumanFileError(f"{path}: the header lacks column(s) {', '.join(missing)}; required: "
                             f"{', '.join(REQUIRED_COLUMNS)} (optional: {', '.join(OPTIONAL_COLUMNS)})")
    has_orig = "orig_pred" in header
    trials: dict = {}
    for line, row in enumerate(reader, start=2):
        where = f"{path}, line {line}"
        if None in row or any(row.get(c) is None for c in REQUIRED_COLUMNS):
            raise HumanFileError(f"{where}: expected {len(header)} fields")
        corruption = row["corruption"].strip()
        if corruption not in VCR_CORRUPTIONS:
            raise HumanFileError(f"{where}: unknown corruption {corruption!r}; valid: {', '.join(VCR_CORRUPTIONS)}")
        try:
            dv = float(row["vd_score"])
        except ValueError:
            raise HumanFileError(f"{where}: vd_score must be a number, got {row['vd_score']!r}") from None
        if not math.isfinite(dv):
            raise HumanFileError(f"{where}: vd_score must be finite, got {row['vd_score']!r}")
        label = _int(row["label"], "label", where)
        answer = _int(row["transf_pred"], "transf_pred", where)
        clean = _int(row["orig_pred"], "orig_pred", where) if has_orig else None
        entry = trials.setdefault(corruption, ([], [], []))
        entry[0].append(dv)
        entry[1].append(answer == label)
        entry[2].append(None if clean is None else answer == clean)
    if not trials:
        raise HumanFileError(f"{path}: no trials (only a header)")
    return trials, has_orig


def _curve(value, where: str) -> np.ndarray:
    """One pre-computed curve of the curve form, validated, as a monotone curve on the grid."""
    if not isinstance(value, dict):
        raise HumanFileError(f"{where}: a curve must be {{'v': [...], 'y': [...]}} or {{'tck': {{'t', 'c', 'k'}}}}")

    def numbers(name, data):
        if not isinstance(data, list) or not data or not all(
                isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) for a in data):
            raise HumanFileError(f"{where}: {name} must be a non-empty list of finite numbers")
        return np.asarray(data, dtype=np.float64)

    if "tck" in value:
        tck = value["tck"]
        if not isinstance(tck, dict) or not {"t", "c", "k"} <= set(tck):
            raise HumanFileError(f"{where}: tck must hold t, c and k")
        t, c, k = numbers("tck.t", tck["t"]), numbers("tck.c", tck["c"]), tck["k"]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 5:
            raise HumanFileError(f"{where}: tck.k must be an integer degree 1..5, got {k!r}")
        if len(t) < 2 * k + 2 or np.any(np.diff(t) < 0) or len(c) < len(t) - k - 1:
            raise HumanFileError(f"{where}: tck is not a valid B-spline (need >= 2k+2 non-decreasing knots and "
                                 f">= len(t)-k-1 coefficients; got {len(t)} knots, {len(c)} coefficients)")
        return monotone_curve(tck_function(t, c, k))
    if not {"v", "y"} <= set(value):
        raise HumanFileError(f"{where}: a curve needs 'v' and 'y' (or 'tck')")
    v, y = numbers("v", value["v"]), numbers("y", value["y"])
    if len(v) != len(y) or len(v) < 2:
        raise HumanFileError(f"{where}: v and y must have one length >= 2; got {len(v)} and {len(y)}")
    if np.any(np.diff(v) <= 0) or v[0] < 0 or v[-1] > 1:
        raise HumanFileError(f"{where}: v must be strictly ascending within [0, 1]")
    if np.any(y < 0) or np.any(y > 1):
        raise HumanFileError(f"{where}: y must lie in [0, 1]; got values from {y.min():g} to {y.max():g}")
    return monotone_curve(points_function(v, y))


def load_human(path: str, dv_resolution: str, settings: dict, meta_path: Optional[str] = None,
               min_trials: int = 10) -> HumanCurves:
    """Read, validate and fit a human file.

    Parameters
    ----------
    path : str
        ``.csv`` (per trial, with a sidecar JSON) or ``.json`` (curves).
    dv_resolution : str
        The release's (``224crop``); the file must declare the same.
    settings : dict
        ``bins``, ``smoothing``, ``empty_bin``, ``knots``: the model's fit settings, reused.
    meta_path : str, optional
        The sidecar JSON of a CSV (default: the CSV's path with ``.json`` added).
    min_trials : int
        A bin with fewer trials is reported in ``warnings``.

    Raises
    ------
    HumanFileError
        When the file is missing, malformed, or declares another VIF, label space or resolution.
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as err:
        raise HumanFileError(f"cannot read human file {path}: {err.strerror or err}") from None
    digest = hashlib.sha256(data).hexdigest()
    if file.suffix.lower() == ".csv":
        sidecar = Path(meta_path) if meta_path else file.with_name(file.name + ".json")
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
        except OSError:
            raise HumanFileError(f"{path}: its metadata file {sidecar} is missing (give --human-meta); it must "
                                 f"hold {', '.join(REQUIRED_META + RECORDED_META)}") from None
        except ValueError as err:
            raise HumanFileError(f"{sidecar}: not valid JSON ({err})") from None
        meta = _check_meta(meta, str(sidecar), dv_resolution)
        trials, has_orig = _read_trials(file, settings)
        human = HumanCurves(str(file), "trials", digest, meta, {})
        for corruption, (dv, correct, consistent) in sorted(trials.items()):
            try:
                acc = performance_curve(np.asarray(dv), np.asarray(correct), **settings)
                cons = performance_curve(np.asarray(dv), np.asarray(consistent, dtype=bool), **settings) \
                    if has_orig else None
            except ValueError as err:
                raise HumanFileError(f"{path}: {corruption}: {err}") from None
            human.curves[corruption] = {"accuracy": acc["curve"], "consistency": None if cons is None else cons["curve"]}
            human.bins[corruption] = {"values": acc["values"], "counts": acc["counts"]}
            few = [i for i, n in enumerate(acc["counts"]) if n < min_trials]
            if few:
                human.warnings.append(f"{corruption}: {len(few)} of {len(acc['counts'])} bins have fewer than "
                                      f"{min_trials} trials (bins {', '.join(map(str, few))})")
        if not has_orig:
            human.warnings.append("no orig_pred column: no human consistency curves")
        return human
    if file.suffix.lower() == ".json":
        try:
            document = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise HumanFileError(f"{path}: not valid JSON ({err})") from None
        if not isinstance(document, dict) or "meta" not in document:
            raise HumanFileError(f"{path}: expected {{corruption: {{'accuracy': curve, 'consistency': curve}}, "
                                 "'meta': {...}}")
        meta = _check_meta(document["meta"], f"{path} (meta)", dv_resolution)
        human = HumanCurves(str(file), "curves", digest, meta, {})
        for corruption, entry in sorted((k, v) for k, v in document.items() if k != "meta"):
            if corruption not in VCR_CORRUPTIONS:
                raise HumanFileError(f"{path}: unknown corruption {corruption!r}; valid: {', '.join(VCR_CORRUPTIONS)}")
            if not isinstance(entry, dict) or "accuracy" not in entry:
                raise HumanFileError(f"{path}: {corruption} must be an object with an 'accuracy' curve")
            consistency = entry.get("consistency")
            human.curves[corruption] = {
                "accuracy": _curve(entry["accuracy"], f"{path}: {corruption}.accuracy"),
                "consistency": None if consistency is None else _curve(consistency, f"{path}: {corruption}.consistency")}
        if not human.curves:
            raise HumanFileError(f"{path}: no corruption curves besides 'meta'")
        return human
    raise HumanFileError(f"{path}: a human file is a per-trial .csv (with a .json sidecar) or a curves .json")
