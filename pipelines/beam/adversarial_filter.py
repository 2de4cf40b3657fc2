"""``imagenet-cp filter-a`` / ``filter-o``: adversarial filtration of candidate images on Beam.

Candidates are ``DIR/<wnid>/<file>``: for ImageNet-A the folder is the weak label (one of the
1000 ImageNet-1k wnids); for ImageNet-O it is the source synset, which must lie outside the 1000.
The graph::

    entry lists -> ReadImageNet -> ScoreCandidates (10 crops x models, ONNX Runtime, one thread)
      -> stage 1 (R0/R1/R2, or the O score) -> GroupByKey(confusion) -> stage 2 (rank, cap)
      -> decisions.jsonl, logits/<wnid>.npy, review/ items;  failures -> failures.jsonl

Every model runs on exactly the ten crops of one candidate per call, one thread, so the logits
do not depend on bundling or worker count; every file is sorted by key. The driver then writes
the review sheet and ``filter.json``. See :mod:`schemas.adversarial` for the layout.
"""
from __future__ import annotations

import hashlib
import io
import os
from typing import Iterable, Mapping, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from PIL import Image

from schemas.adversarial import (CLASS_SETS, DECISIONS, FILTER_JSON, KEPT, LOGITS_DIR, REJECTED, REVIEW_DIR,
                                 TASKS, DecisionRecord, FilterConfig)
from schemas.class_subsets import subset_wnids
from schemas.imagenet_val import IMAGE_EXTENSIONS
from schemas.records import Failure, Locator, SourceEntry, SourceImage
from schemas.release import FAILURES, SCRATCH_DIRS, dumps, is_safe_name, json_line
from schemas.wnids import imagenet_wnids, wnid_to_label
from transforms.image_hash import difference_hash
from transforms.ten_crop import centre_crop, normalise, ten_crops, upright_rgb

from pipelines.formats import storage
from pipelines.formats.lists import read_decisions, read_metadata
from pipelines.beam.inference import METRICS_NAMESPACE, NONFINITE_COUNTER, NONFINITE_KEYS, nonfinite_found
from pipelines.evaluation.filtration import judge_candidate, rank_confusion
from pipelines.evaluation.models import ModelError, check_filter_model, nonfinite_message
from pipelines.beam.progress import ProgressLine
from pipelines.beam.write_release import OutputsFn
from pipelines.release.versions import library_versions
from pipelines.beam.runner import RunOptions, make_pipeline
from pipelines.beam.sources import ReadImageNet
from pipelines.inputs.listing import SourceIndex, inspect_image, source_note, walk_folder, write_entry_lists

__all__ = ["COMMANDS", "CROPS_DIR", "ORIGINALS_DIR", "resolve_classes", "classify_candidate", "index_candidates",
           "FilterCandidates", "EXEMPLARS_PER_CLASS", "copy_exemplars", "filter_candidates"]

COMMANDS = {"imagenet_a": "filter-a", "imagenet_o": "filter-o"}
CROPS_DIR = f"{REVIEW_DIR}/crops"
ORIGINALS_DIR = f"{REVIEW_DIR}/originals"


# --- class sets and listing -----------------------------------------------------------------------

def resolve_classes(classes: str) -> tuple[str, tuple]:
    """``(name recorded in filter.json, sorted wnids)`` of a class set name or a file of wnids.

    Raises
    ------
    ValueError
        On an unknown name, or a file with a wnid outside the 1000.
    """
    if classes == "all":
        return "all", imagenet_wnids()
    if classes in CLASS_SETS:
        return classes, subset_wnids(classes)
    if not os.path.isfile(classes):
        raise ValueError(f"--classes must be one of {', '.join(CLASS_SETS)} or a file of wnids, got {classes!r}")
    with open(classes, "rb") as stream:
        raw = stream.read()
    wnids = sorted(set(raw.decode("utf-8").split()))
    unknown = [w for w in wnids if w not in wnid_to_label()]
    if unknown:
        raise ValueError(f"{classes}: not ImageNet-1k wnids: {', '.join(unknown[:5])}")
    return f"file:{hashlib.sha256(raw).hexdigest()}", tuple(wnids)


def classify_candidate(relative: str, locator: Locator, task: str):
    """A candidate ``<folder>/<file>`` as a :class:`SourceEntry`, or a :class:`Failure` saying why not.

    For ImageNet-A the folder is the weak label and must be an ImageNet-1k wnid; for ImageNet-O it
    is the source synset and must not be one (``label`` is then -1).
    """
    parts = relative.split("/")

    def failure(reason):
        return Failure(relative, relative, "list", reason)

    if not all(is_safe_name(p) for p in parts):
        return failure("unsupported name: hidden, or with a control character or backslash")
    if os.path.splitext(parts[-1])[1].lower() not in IMAGE_EXTENSIONS:
        return failure(f"not an image file: the extension must be one of {', '.join(IMAGE_EXTENSIONS)}")
    weak_labels = TASKS[task].weak_labels
    if len(parts) != 2:
        return failure("expected <wnid>/<file>: the folder is the weak label" if weak_labels else
                       "expected <synset>/<file>: the folder names the candidate's source synset")
    folder = parts[0]
    if weak_labels and folder not in wnid_to_label():
        return failure(f"class folder {folder!r} is not one of the 1000 ImageNet wnids")
    if not weak_labels and folder in wnid_to_label():
        return failure(f"source synset {folder} is an ImageNet-1k class: ImageNet-O candidates come from "
                       "outside the 1000")
    return SourceEntry(key=relative, wnid=folder, label=wnid_to_label().get(folder, -1), locator=locator,
                       source=relative)


def index_candidates(root: str, task: str) -> SourceIndex:
    """List a candidate folder: entries sorted by key and failures with reasons.

    Unlike a validation set, a pool may reuse file names across class folders (``000001.jpg`` of
    every query); only keys that differ in case alone are duplicates (they would collide on a
    case-insensitive file system).

    Raises
    ------
    ValueError
        If ``root`` is not a local folder.
    """
    if not os.path.isdir(root):
        raise ValueError(f"--candidates {root!r} is not a folder of <wnid>/<file> candidates")
    entries, failures, first = [], [], {}
    for item in walk_folder(root):
        result = item if isinstance(item, Failure) else classify_candidate(*item, task)
        if isinstance(result, Failure):
            failures.append(result)
        else:
            entries.append(result)
    kept = []
    for entry in sorted(entries, key=lambda e: e.key):
        seen = first.setdefault(entry.key.casefold(), entry)
        if seen is entry:
            kept.append(entry)
        else:
            failures.append(Failure(entry.key, entry.source, "list",
                                    f"duplicate name: differs from {seen.key} only in case; {seen.key} is used"))
    return SourceIndex("folder", tuple(kept), tuple(failures))


# --- the workers ----------------------------------------------------------------------------------

def _unusable(image: SourceImage, reason: str, info: Optional[dict] = None) -> dict:
    """The decisions row of a candidate rejected by R0."""
    entry = image.entry
    return {"key": entry.key, "wnid": entry.wnid, "source": entry.source, "bytes": len(image.data),
            "sha256": hashlib.sha256(image.data).hexdigest(), **(info or {}), "decision": REJECTED,
            "reason": f"R0: {reason}", "rules": {"R0": True}, "confusion": None, "models": []}


def _write_json_lines(output_dir: str, relative: str, records) -> None:
    """Write records as canonical JSON lines, sorted by ``key`` then text, to ``relative``.

    A filter run holds one row per candidate (tens of thousands at most), so one list is fine here."""
    text = "".join(line for _, line in sorted((r["key"], json_line(r)) for r in records))
    storage.write_atomic(output_dir, relative, text.encode("utf-8"))


class _ScoreCandidatesFn(OutputsFn):
    """SourceImage -> its stage-1 row; tagged ``logits`` ``(wnid, (key, float32 bytes))``, ``failures``, ``environments``."""

    def __init__(self, model_paths: Sequence[str], models: Sequence[Mapping], config: FilterConfig,
                 progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._paths, self._models, self._config = list(model_paths), list(models), config
        self._nonfinite = Metrics.counter(METRICS_NAMESPACE, NONFINITE_COUNTER)
        self._nonfinite_keys = Metrics.string_set(METRICS_NAMESPACE, NONFINITE_KEYS)

    def environment(self):
        import onnxruntime
        return {**library_versions(), "onnxruntime": onnxruntime.__version__}

    def setup(self):
        super().setup()
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.use_deterministic_compute = True
        self._sessions = [onnxruntime.InferenceSession(p, options, providers=["CPUExecutionProvider"])
                          for p in self._paths]

    def _logits(self, upright: Image.Image, key: str) -> np.ndarray:
        rows = []
        for session, meta in zip(self._sessions, self._models):
            x = normalise(ten_crops(upright, meta["crop"], meta["resize"]), meta["mean"], meta["std"])
            rows.append(session.run(None, {session.get_inputs()[0].name: x})[0])
        logits = np.stack(rows).astype(np.float32)
        if not np.isfinite(logits).all():  # counted; the driver refuses the run
            self._nonfinite.inc()
            self._nonfinite_keys.add(key)
        return logits

    def process(self, image: SourceImage):
        yield from self.report_environment()
        entry = image.entry
        try:
            info = inspect_image(image.data)
            upright = upright_rgb(image.data)
        except ValueError as err:
            yield self.fail(Failure(entry.key, entry.source, "decode", str(err)))
            yield _unusable(image, str(err))
            return
        info = {**info, "upright_width": upright.width, "upright_height": upright.height,
                "pixels_sha256": hashlib.sha256(upright.tobytes()).hexdigest(),
                "note": source_note(info, entry.file_name), "dhash": difference_hash(upright)}
        self._progress.add(outputs_written=1)
        if self._config.min_size and min(upright.size) < self._config.min_size:
            yield _unusable(image, f"short side {min(upright.size)} < the minimum {self._config.min_size}", info)
            return
        logits = self._logits(upright, entry.key)
        weak = entry.wnid if TASKS[self._config.task].weak_labels else None
        judged = judge_candidate(logits, weak, self._config, [m["model"] for m in self._models])
        yield {"key": entry.key, "wnid": entry.wnid, "source": entry.source, "bytes": len(image.data),
               "sha256": hashlib.sha256(image.data).hexdigest(), **info, **judged}
        yield beam.pvalue.TaggedOutput("logits", (entry.wnid, (entry.key, logits.tobytes())))


class _WriteReviewItemFn(beam.DoFn):
    """A shortlisted row -> its original bytes and its centre crop (PNG) under ``review/``."""

    def __init__(self, output_dir: str, candidates: str, crop: int, resize: int):
        self._output_dir, self._candidates, self._crop, self._resize = output_dir, candidates, crop, resize

    def process(self, row):
        data = storage.read_bytes(os.path.join(self._candidates, row["source"]))
        storage.write_atomic(self._output_dir, f"{ORIGINALS_DIR}/{row['key']}", data)
        buffer = io.BytesIO()
        Image.fromarray(centre_crop(data, self._crop, self._resize)).save(buffer, format="PNG")
        storage.write_atomic(self._output_dir, f"{CROPS_DIR}/{row['key']}.png", buffer.getvalue())


def _write_logits(output_dir: str, element) -> None:
    """``(wnid, [(key, float32 bytes)])`` -> ``logits/<wnid>.npy`` (rows sorted by key) and ``<wnid>.keys.txt``."""
    wnid, items = element
    items = sorted(items)
    arrays = [np.frombuffer(data, dtype=np.float32) for _, data in items]
    array = np.stack(arrays)
    buffer = io.BytesIO()
    np.save(buffer, array.reshape(len(items), -1, 10, 1000), allow_pickle=False)
    storage.write_atomic(output_dir, f"{LOGITS_DIR}/{wnid}.npy", buffer.getvalue())
    storage.write_atomic(output_dir, f"{LOGITS_DIR}/{wnid}.keys.txt",
                         "".join(f"{key}\n" for key, _ in items).encode("utf-8"))


def _final_row(row: dict, metadata: Mapping[str, Mapping]) -> dict:
    row = {k: v for k, v in row.items() if k != "order_key"}
    row.setdefault("rank", None)
    row.setdefault("confusion_size", None)
    row["metadata"] = dict(metadata.get(row["key"], {}))
    return row


class FilterCandidates(beam.PTransform):
    """``images`` (SourceImage) -> ``rows`` (final decision rows), ``logits`` and ``failures``."""

    def __init__(self, model_paths, models, config: FilterConfig, progress_dir: Optional[str] = None):
        super().__init__()
        self._args = (model_paths, models, config, progress_dir)
        self._cap = config.cap

    def expand(self, images):
        scored = images | "ScoreCandidates" >> beam.ParDo(_ScoreCandidatesFn(*self._args)).with_outputs(
            "logits", "failures", "environments", main="rows")
        survivors = scored.rows | "Survivors" >> beam.Filter(lambda r: r["decision"] == KEPT)
        ranked = (survivors
                  | "ByConfusion" >> beam.Map(lambda r: ("\t".join(r["confusion"]), r))
                  | "GroupConfusions" >> beam.GroupByKey()
                  | "RankAndCap" >> beam.FlatMapTuple(lambda _, rows, cap=self._cap: rank_confusion(list(rows), cap)))
        rejected = scored.rows | "Rejected" >> beam.Filter(lambda r: r["decision"] != KEPT)
        rows = (rejected, ranked) | "AllDecisions" >> beam.Flatten()
        return {"rows": rows, "logits": scored.logits, "failures": scored.failures}


# --- the driver -----------------------------------------------------------------------------------

def _funnel(rows: Iterable[DecisionRecord]) -> dict:
    """Counts per class (weak label for A, source synset for O) at each stage."""
    counts: dict = {}
    for row in rows:
        c = counts.setdefault(row.wnid, {"candidates": 0, "rejected": 0, "shortlisted": 0, "capped": 0})
        c["candidates"] += 1
        c[{"kept": "shortlisted"}.get(row.decision, row.decision)] += 1
    return dict(sorted(counts.items()))


EXEMPLARS_PER_CLASS = 5


def copy_exemplars(output_dir: str, exemplars_dir: str, decisions: Sequence[DecisionRecord], task: str) -> dict:
    """Copy up to :data:`EXEMPLARS_PER_CLASS` images (sorted by name) of each class the shortlist
    shows (A: the weak label; O: the predicted class) to ``review/exemplars/<wnid>/``.

    Returns
    -------
    dict
        wnid -> paths relative to ``review/``.
    """
    if not os.path.isdir(exemplars_dir):
        raise ValueError(f"--exemplars {exemplars_dir!r} is not a folder of <wnid>/<image>")
    column = 0 if TASKS[task].weak_labels else -1
    wanted = sorted({r.confusion[column] for r in decisions if r.decision == KEPT})
    found = {}
    for wnid in wanted:
        folder = os.path.join(exemplars_dir, wnid)
        names = sorted(n for n in os.listdir(folder) if os.path.splitext(n)[1].lower() in IMAGE_EXTENSIONS
                       and is_safe_name(n))[:EXEMPLARS_PER_CLASS] if os.path.isdir(folder) else []
        for name in names:
            storage.write_atomic(output_dir, f"{REVIEW_DIR}/exemplars/{wnid}/{name}",
                                 storage.read_bytes(os.path.join(folder, name)))
        found[wnid] = [f"exemplars/{wnid}/{name}" for name in names]
    return found


def _onnxruntime_version() -> str:
    import onnxruntime
    return onnxruntime.__version__


def filter_candidates(task: str, candidates: str, model_paths: Sequence[str], output_dir: str,
                      config: FilterConfig, metadata_path: Optional[str] = None,
                      exemplars_dir: Optional[str] = None, run: RunOptions = RunOptions()) -> dict:
    """Run the filter and write its outputs (see :mod:`schemas.adversarial`).

    Parameters
    ----------
    task : str
        ``'imagenet_a'`` or ``'imagenet_o'``.
    candidates : str
        Local folder of ``<wnid>/<file>`` candidates.
    model_paths : sequence of str
        ONNX filter models (``imagenet-cp fetch-model``), the first being model (i) by default.
    output_dir : str
        Local output folder.
    config : FilterConfig
        Rules and thresholds.
    metadata_path : str, optional
        JSON lines ``{"key": "<wnid>/<file>", "source": ..., "url": ..., "licence": ...}``.
    exemplars_dir : str, optional
        ``<wnid>/<image>`` training images (e.g. ImageNet train): the first
        :data:`EXEMPLARS_PER_CLASS` of each class on the sheet are copied to ``review/exemplars/``.
    run : RunOptions
        Local worker processes, Beam options, the progress interval and stream (the filter starts
        afresh each run: ``force`` and the part limits do not apply).

    Returns
    -------
    dict
        The ``filter.json`` document.
    """
    from pipelines.install.fetch_model import model_metadata
    from pipelines.evaluation.review_sheet import write_review_sheet

    if not model_paths:
        raise ValueError("give at least one --model")
    if not 0 <= config.primary_model < len(model_paths):
        raise ValueError(f"primary model {config.primary_model} is not one of the {len(model_paths)} models")
    for path in model_paths:
        if not os.path.isfile(path):
            raise ValueError(f"model {path!r} not found (make one with imagenet-cp fetch-model)")
        check_filter_model(path, COMMANDS[task])  # loads, and takes the crop it will be fed
    models = [model_metadata(p) for p in model_paths]
    names = [m["model"] for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"models must differ; got {', '.join(names)}")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not os.path.isfile(os.path.join(output_dir, FILTER_JSON)):
        raise ValueError(f"{output_dir} is not empty and holds no filter run ({FILTER_JSON}): use another --output")
    metadata = read_metadata(metadata_path)
    index = index_candidates(candidates, task)
    if index.entries:  # a trial on the first candidate's ten crops, before anything is written
        first = index.entries[0]
        data = storage.read_bytes(os.path.join(candidates, first.source))
        for path in model_paths:
            check_filter_model(path, COMMANDS[task], (first.key, data))
    os.makedirs(output_dir, exist_ok=True)
    for scratch in SCRATCH_DIRS:
        storage.delete_tree(storage.join(output_dir, scratch))
    for folder in (LOGITS_DIR, REVIEW_DIR):
        storage.delete_tree(storage.join(output_dir, folder))

    progress_dir = output_dir
    primary = models[config.primary_model]
    pipeline = make_pipeline(run.workers, run.beam_args)
    images = pipeline | "ReadCandidates" >> ReadImageNet(write_entry_lists(output_dir, index.entries), progress_dir)
    result = images.images | "Filter" >> FilterCandidates(list(model_paths), models, config, progress_dir)
    rows = result["rows"] | "FinalRows" >> beam.Map(_final_row, metadata)
    _ = (rows | "CollectDecisions" >> beam.combiners.ToList()
         | "WriteDecisions" >> beam.Map(lambda all_rows: _write_json_lines(output_dir, DECISIONS, all_rows)))
    _ = (rows | "Shortlist" >> beam.Filter(lambda r: r["decision"] == KEPT)
         | "WriteReviewItems" >> beam.ParDo(_WriteReviewItemFn(output_dir, candidates, primary["crop"],
                                                                primary["resize"])))
    _ = (result["logits"] | "GroupLogits" >> beam.GroupByKey()
         | "WriteLogits" >> beam.Map(lambda element: _write_logits(output_dir, element)))
    listed = pipeline | "ListingFailures" >> beam.Create(index.failures)
    _ = ((listed, images.failures, result["failures"]) | "AllFailures" >> beam.Flatten()
         | "FailureRecords" >> beam.Map(lambda f: f.to_json())
         | "CollectFailures" >> beam.combiners.ToList()
         | "WriteFailures" >> beam.Map(lambda fs: _write_json_lines(output_dir, FAILURES, fs)))
    progress = ProgressLine(output_dir, len(index.entries), len(index.entries), run.progress_interval, run.out)
    progress.start()
    try:
        result = pipeline.run()
        result.wait_until_finish()
    finally:
        progress.stop()
    refused, keys = nonfinite_found(result)
    if refused:  # NaN or infinite logits on some candidate: no decision stands
        for written in (DECISIONS, FAILURES, LOGITS_DIR, REVIEW_DIR, *SCRATCH_DIRS):
            storage.delete_tree(storage.join(output_dir, written))
        raise ModelError(nonfinite_message(", ".join(model_paths), refused, len(index.entries), keys))
    for scratch in SCRATCH_DIRS:
        storage.delete_tree(storage.join(output_dir, scratch))

    decisions = read_decisions(storage.join(output_dir, DECISIONS))
    failures = storage.read_bytes(storage.join(output_dir, FAILURES)).decode().count("\n")
    document = {
        "task": task, "candidates": os.path.abspath(candidates), "config": config.to_json(),
        "models": [{k: m[k] for k in sorted(m)} for m in models],
        "counts": {"candidates_listed": len(index.entries), "failures": failures, "decisions": len(decisions),
                   **{d: sum(r.decision == d for r in decisions) for d in ("kept", "rejected", "capped")}},
        "funnel": _funnel(decisions),
        "decisions_sha256": hashlib.sha256(storage.read_bytes(storage.join(output_dir, DECISIONS))).hexdigest(),
        "library_versions": {**library_versions(), "onnxruntime": _onnxruntime_version()},
    }
    exemplars = copy_exemplars(output_dir, exemplars_dir, decisions, task) if exemplars_dir else {}
    write_review_sheet(output_dir, task, [r.to_json() for r in decisions], document, exemplars)
    storage.write_atomic(output_dir, FILTER_JSON, dumps(document).encode("utf-8"))
    return document
