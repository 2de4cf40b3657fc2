"""``evaluate`` on the editions other than 224: the same RunInference graph, inputs and scores from the Edition.

The edition of a release is read from ``release.json`` (or, for an official download without
one, from the tree folder it holds: ``CIFAR-10-C/``, ``Tiny-ImageNet-C/``, ...). Inputs:

- JPEG trees ``<tree>/<corruption>/<severity>/<wnid>/<file>``; labels index the sorted 1000
  ImageNet wnids (299, 64x64) or, for Tiny ImageNet, the release's class list
  (``tfds/.../label.labels.txt``; the sorted class folders of an official download);
- CIFAR ``<tree>/<corruption>.npy`` + ``labels.npy``: rows in blocks of N per severity, severity 1
  first (the severities of ``release.json``, all five for an official download).

The model sees the edition's side and normalisation (``Edition.model_input``: CIFAR models take
32x32 RGB in [0, 1], as RobustBench's; the others ImageNet mean/std). The logits may have any
number of classes (1000, 200, 10, 100). There is no AlexNet baseline at these sizes, so the
summary is the unnormalised mean error and accuracy over the benchmark corruptions and
severities, as RobustBench reports them; with an explicit ``--baseline`` the CE/mCE summary of
:func:`metrics.imagenet_c.summarize_imagenet_c` is added.

Outputs (beside the release, as for 224): ``predictions/<tree>/<config>.jsonl``,
``imagenet-c-errors.json``, ``metrics.json`` and ``report.md``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import apache_beam as beam
import numpy as np

from metrics.imagenet_c import summarize_imagenet_c
from metrics.imagenet_p import top_k_classes
from schemas.edition import DEFAULT_EDITION, NPY, Edition, Layout
from schemas.editions import EDITIONS
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, SEVERITIES
from schemas.release import CLEAN, RELEASE_JSON, TFDS_DIR, dumps, json_line
from schemas.wnids import wnid_to_label
from transforms.preprocess import to_pil

from pipelines.formats import storage
from pipelines.beam.evaluate import choose_clean_error
from pipelines.evaluation.metrics_files import ERRORS_FILE, write_errors
from pipelines.evaluation.report import clean_error_text
from pipelines.beam.runner import make_pipeline

METRICS_FILE = "metrics.json"
REPORT_FILE = "report.md"
PREDICTIONS_DIR = "predictions"


def release_edition(release_dir: str) -> Optional[tuple[Edition, Layout, list]]:
    """``(edition, layout, severities)`` of a release of an edition other than 224, else None.

    Severities are those of ``release.json``'s config (all five without one).
    """
    document = {}
    path = storage.join(release_dir, RELEASE_JSON)
    if storage.exists(path):
        document = json.loads(storage.read_bytes(path))
    severities = list(document.get("config", {}).get("severities", SEVERITIES))
    for edition in EDITIONS.values():
        if edition.name == DEFAULT_EDITION or edition.c is None:
            continue
        for family, layout in edition.c.layouts.items():
            named = document.get("edition") == edition.name and document.get("tree") == layout.tree
            if named or (not document and storage.is_folder(storage.join(release_dir, layout.tree))):
                return edition, layout, severities
    return None


def model_input(image, edition: Edition) -> np.ndarray:
    """One image as a model of ``edition`` sees it: float32 (3, N, N), ``(x / 255 - mean) / std``.

    Raises
    ------
    ValueError
        If the image is not N x N.
    """
    rgb = np.asarray(to_pil(image).convert("RGB"), dtype=np.float32)
    side = edition.image_size
    if rgb.shape[:2] != (side, side):
        raise ValueError(f"{edition.name} images are {side}x{side}, got {rgb.shape[1]}x{rgb.shape[0]}")
    mean = np.asarray(edition.model_input["mean"], dtype=np.float32)[:, None, None]
    std = np.asarray(edition.model_input["std"], dtype=np.float32)[:, None, None]
    return (rgb.transpose(2, 0, 1) / np.float32(255) - mean) / std


def _tree_labels(release_dir: str, layout: Layout) -> dict:
    """wnid -> label of a JPEG tree: ImageNet's 1000, or the release's / the tree's class list."""
    if layout.num_classes == 1000:
        return dict(wnid_to_label())
    for labels_file in sorted(Path(release_dir, TFDS_DIR, layout.tfds.dataset).glob("*/*/label.labels.txt")):
        return {w: i for i, w in enumerate(labels_file.read_text().split())}
    tree = Path(release_dir, layout.tree)
    first = next((s for c in sorted(tree.iterdir()) if c.is_dir() and c.name != CLEAN
                  for s in sorted(c.iterdir()) if s.is_dir()), None)
    return {w: i for i, w in enumerate(sorted(p.name for p in first.iterdir()))} if first else {}


def tfds_configs(release_dir: str, layout: Layout) -> list:
    """``(config, corruption, severity, version folder)`` of the edition's TFDS configs in the release."""
    names = {layout.tfds.config(c, s): (c, s) for c in CORRUPTIONS for s in SEVERITIES}
    configs = []
    for info in sorted(Path(release_dir, TFDS_DIR, layout.tfds.dataset).glob(f"*/{layout.tfds.version}/dataset_info.json")):
        name = info.parent.parent.name
        if name == CLEAN:
            configs.append((CLEAN, None, None, ("tfds", str(info.parent))))
        elif name in names:
            corruption, severity = names[name]
            configs.append((f"{corruption}_{severity}", corruption, severity, ("tfds", str(info.parent))))
    return configs


def list_configs(release_dir: str, edition: Edition, layout: Layout, severities) -> list:
    """``(config, corruption, severity, source)`` of the clean config (where the layout has one)
    and of every corruption and severity in the tree, sorted."""
    tree = Path(release_dir, layout.tree)
    configs = []
    clean = tree / layout.clean_template.split("/", 1)[0] if layout.clean_template else None
    if clean is not None and clean.is_dir():
        configs.append((CLEAN, None, None, str(clean)))
    elif clean is not None and edition.c.encoding == NPY and clean.is_file():
        configs.append((CLEAN, None, None, (str(clean), 0, 1)))  # clean.npy: one block of N rows
    for corruption in CORRUPTIONS:
        entry = tree / layout.corruption_entry(corruption)
        if edition.c.encoding == NPY:
            if entry.is_file():
                configs += [(f"{corruption}_{s}", corruption, s, (str(entry), block, len(severities)))
                            for block, s in enumerate(severities)]
        elif entry.is_dir():
            configs += [(f"{corruption}_{s}", corruption, s, str(entry / str(s)))
                        for s in SEVERITIES if (entry / str(s)).is_dir()]
    return configs


def _examples(config, labels_path: Optional[str], wnid_labels: dict):
    """Yield ``((config, key, label), image)`` of one config (a JPEG folder or an npy block)."""
    name, _, _, source = config
    if isinstance(source, tuple) and source[0] == "tfds":
        import tensorflow_datasets as tfds

        builder = tfds.builder_from_directory(source[1])
        split = next(iter(builder.info.splits))
        dataset = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
        classes = builder.info.features["label"].names
        for index, example in enumerate(tfds.as_numpy(dataset)):  # shards hold the examples in key order
            label = int(example["label"])
            key = (f"{classes[label]}/{os.path.basename(example['file_name'].decode())}" if "file_name" in example
                   else f"{index:05d}")  # CIFAR: the row in the .npy block, as for the tree
            yield (name, key, label), example["image"]
        return
    if isinstance(source, tuple):
        path, block, blocks = source
        labels = np.load(labels_path)
        array = np.load(path, mmap_mode="r")
        if name == CLEAN:  # clean.npy: N rows; labels.npy holds the N labels once per severity
            if not array.shape[0] or len(labels) % array.shape[0]:
                raise ValueError(f"{path}: {array.shape[0]} clean rows for {len(labels)} labels")
        elif array.shape[0] != len(labels) or len(labels) % blocks:
            raise ValueError(f"{path}: {array.shape[0]} rows for {len(labels)} labels in {blocks} severities")
        n = array.shape[0] // blocks
        for i in range(n):
            row = block * n + i
            yield (name, f"{i:05d}", int(labels[row])), np.asarray(array[row])
        return
    for wnid in sorted(os.listdir(source)):
        if wnid not in wnid_labels:
            raise ValueError(f"{os.path.join(source, wnid)}: {wnid!r} is not one of the edition's classes")
        for file_name in sorted(os.listdir(os.path.join(source, wnid))):
            with open(os.path.join(source, wnid, file_name), "rb") as stream:
                yield (name, f"{wnid}/{file_name}", wnid_labels[wnid]), stream.read()


class PredictEditionTop5(beam.PTransform):
    """``(id, image)`` -> ``(id, top-5 classes)`` with the edition's model input."""

    def __init__(self, handler, edition: Edition):
        super().__init__()
        self._handler, self._edition = handler, edition

    def expand(self, images):
        from apache_beam.ml.inference.base import RunInference

        edition = self._edition
        return (images
                | "ToModelInput" >> beam.MapTuple(lambda key, image: (key, model_input(image, edition)))
                | "RunInference" >> RunInference(self._handler)
                | "TopFive" >> beam.MapTuple(
                    lambda key, result: (key, top_k_classes(np.asarray(result.inference)).tolist())))


class _WritePredictionsFn(beam.DoFn):
    """Sink: one sorted JSON-lines file per config; emits ``(config, top-1 error)``."""

    def __init__(self, out_dir: str, tree: str):
        self._out_dir, self._tree = out_dir, tree

    def process(self, element):
        name, rows = element
        rows = sorted(rows)
        path = Path(self._out_dir, PREDICTIONS_DIR, self._tree, f"{name}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json_line({"key": k, "label": l, "top5": t}) for k, l, t in rows))
        yield name, sum(top5[0] != label for _, label, top5 in rows) / len(rows)


def unnormalised_summary(errors: dict) -> dict:
    """Mean top-1 error and accuracy over the benchmark corruptions and severities present
    (RobustBench's corruption accuracy), per corruption too, and the extras' mean apart."""
    per_corruption = {c: float(np.mean(list(e.values()))) for c, e in errors.items()}
    benchmark = [e for c, es in errors.items() if c in BENCHMARK_CORRUPTIONS for e in es.values()]
    extra = [e for c, es in errors.items() if c not in BENCHMARK_CORRUPTIONS for e in es.values()]
    mean_error = float(np.mean(benchmark)) if benchmark else None
    return {"mean_error": mean_error, "mean_accuracy": None if mean_error is None else 1 - mean_error,
            "benchmark_corruptions": sorted(c for c in errors if c in BENCHMARK_CORRUPTIONS),
            "extra_mean_error": float(np.mean(extra)) if extra else None,
            "corruption_error": dict(sorted(per_corruption.items()))}


def write_edition_evaluation(out_dir: str, config_errors, edition_name: str, tree: str, model_name: str,
                             clean_error=None, baseline=None) -> None:
    """Sink: errors file, ``metrics.json`` and ``report.md`` of an edition's evaluation."""
    out = Path(out_dir)
    errors: dict = {}
    measured = None
    for name, error in config_errors:
        if name == CLEAN:
            measured = error
            continue
        corruption, _, severity = name.rpartition("_")
        errors.setdefault(corruption, {})[severity] = error
    errors = {c: dict(sorted(errors[c].items())) for c in CORRUPTIONS if c in errors}
    clean = choose_clean_error(clean_error, measured)
    section = {"edition": edition_name, "tree": tree, "errors": errors, "clean": clean,
               "summary": unnormalised_summary(errors)}
    complete = {c: [e[str(s)] for s in SEVERITIES] for c, e in errors.items() if len(e) == len(SEVERITIES)}
    if baseline is not None and complete:
        section["normalised_summary"] = summarize_imagenet_c(complete, clean["error"], baseline,
                                                             allow_incomplete=True)
    if complete:
        write_errors(out / ERRORS_FILE, complete, clean["error"])
    (out / METRICS_FILE).write_text(dumps({"model": model_name, "imagenet_c": section}))
    summary = section["summary"]
    def percent(value):
        return "—" if value is None else f"{100 * value:.2f}"

    lines = [f"# {model_name} on {tree} ({edition_name} edition)", "",
             f"Mean corruption error (unnormalised, benchmark corruptions): {percent(summary['mean_error'])} %; "
             f"accuracy {percent(summary['mean_accuracy'])} %.", "",
             f"Clean error: {clean_error_text(clean)}.",
             "", "| corruption | " + " | ".join(f"s{s}" for s in SEVERITIES) + " | mean |",
             "|---|" + "---|" * (len(SEVERITIES) + 1)]
    for corruption, by_severity in errors.items():
        cells = [f"{100 * by_severity[str(s)]:.1f}" if str(s) in by_severity else "—" for s in SEVERITIES]
        lines.append(f"| {corruption} | " + " | ".join(cells) + f" | {100 * summary['corruption_error'][corruption]:.1f} |")
    (out / REPORT_FILE).write_text("\n".join(lines) + "\n")


def evaluate_edition_release(release_dir: str, found: tuple, handler, out: Path, model_name: str,
                             clean_error=None, baseline=None, workers=None, beam_args=(), source: str = "auto") -> Path:
    """Run ``handler``'s model over an edition release (see the module docstring).

    ``source``: ``'tree'`` (the JPEG tree or the ``.npy`` files), ``'tfds'`` (the TFDS records)
    or ``'auto'`` (the tree when present)."""
    edition, layout, severities = found
    tree_configs = list_configs(release_dir, edition, layout, severities)
    if source == "auto":
        source = "tree" if tree_configs else "tfds"
    configs = tree_configs if source == "tree" else tfds_configs(release_dir, layout)
    if not configs:
        where = f"{layout.tree}/" if source == "tree" else f"{TFDS_DIR}/{layout.tfds.dataset}/"
        raise ValueError(f"{release_dir}: {where} holds no corruption of the {edition.name} edition")
    labels_path = str(Path(release_dir, layout.tree, layout.labels_file)) if layout.labels_file else None
    wnid_labels = {} if edition.c.encoding == NPY else _tree_labels(release_dir, layout)
    with make_pipeline(workers, beam_args) as pipeline:
        errors = (pipeline
                  | "ListConfigs" >> beam.Create(configs)
                  | "ListImages" >> beam.FlatMap(_examples, labels_path, wnid_labels)
                  | "Spread" >> beam.Reshuffle()
                  | "Predict" >> PredictEditionTop5(handler, edition)
                  | "ByConfig" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], key[2], top5)))
                  | "GroupConfigs" >> beam.GroupByKey()
                  | "WritePredictions" >> beam.ParDo(_WritePredictionsFn(str(out), layout.tree))
                  | "CollectErrors" >> beam.combiners.ToList())
        (pipeline
         | "Output" >> beam.Create([str(out)])
         | "WriteMetricsAndReport" >> beam.Map(
             write_edition_evaluation, config_errors=beam.pvalue.AsSingleton(errors), edition_name=edition.name,
             tree=layout.tree, model_name=model_name, clean_error=clean_error, baseline=baseline))
    return out


__all__ = ["release_edition", "evaluate_edition_release", "model_input", "unnormalised_summary"]
