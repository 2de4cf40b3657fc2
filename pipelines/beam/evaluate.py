"""``imagenet-cp evaluate``: run a model over a built release with Beam's RunInference, and score it.

Inputs, under a release directory ``DIR``:

- ImageNet-C, either the JPEG tree ``DIR/ImageNet-C/<corruption>/<severity>/<wnid>/<file>`` or
  the TFDS records ``DIR/tfds/<dataset>/<corruption>_<severity>/<version>/`` (split ``validation``,
  features image/label/file_name); the release's clean config (``ImageNet-C/clean/<wnid>/<file>``
  or TFDS config ``clean``), when present, gives the model's clean error for Relative CE unless
  the caller gives one;
- ImageNet-P, the MP4 tree ``DIR/ImageNet-P/<perturbation>[_<d>]/<wnid>/<stem>.mp4``, or the tree
  of another P edition (``ImageNet-P-299``, ``Tiny-ImageNet-P``, ``ImageNet-64x64-P`` MP4s;
  ``CIFAR-10-P/<set>.npy``), as ``release.json`` names it (:mod:`pipelines.evaluation.p_sequences`).

Labels are the wnid's index among the sorted 1000 ImageNet wnids, whatever folders exist.

Outputs, under ``OUT`` (default ``DIR-evaluations/<model file stem>`` beside ``DIR``, which leaves
the release and its ``SHA256SUMS`` untouched)::

    predictions/imagenet-c/<corruption>_<severity>.jsonl   {"key", "label", "top5"} per image
    predictions/imagenet-c/clean.jsonl                      the same, on the clean config
    predictions/imagenet-p/<set>.jsonl                      {"key", "label", "top5": T x 5} per video
    imagenet-c-errors.json        errors per corruption and severity (``imagenet-cp metrics --errors``)
    imagenet-p-predictions.npz    top-5 classes per set, (V, T, 5) (``imagenet-cp metrics --flips``)
    metrics.json, report.md, plots/*.png

Every file is sorted by key, so equal predictions give equal bytes whatever the runner. The
release and ``OUT`` may lie on any file system :mod:`pipelines.formats.storage` reaches (a local disk,
``s3://``, ``gs://``); Beam options such as ``--s3_endpoint_url`` configure it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import RunInference

from metrics.imagenet_c import summarize_imagenet_c
from metrics.imagenet_p import (flip_probability_by_offset, parse_sequence_set,
                                summarize_imagenet_p, top_k_classes)
from pipelines.formats import storage
from pipelines.evaluation.p_sequences import edition_model_input, npy_sequences, p_sets, sequence_frames
from pipelines.beam.inference import model_handler, model_input
from pipelines.evaluation.metrics_files import ERRORS_FILE, FLIPS_FILE, write_errors, write_flips
from pipelines.evaluation.report import write_report
from pipelines.beam.runner import make_pipeline
from pipelines.formats.tfrecord import decode_example, iter_records
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.release import C_TREE, CLEAN, P_TREE, TFDS_DIR, dumps, json_line
from schemas.tfds import IMAGENET2012_CORRUPTED
from schemas.wnids import imagenet_wnids, wnid_to_label

EVALUATIONS_SUFFIX = "-evaluations"
TFDS_SPLIT = "validation"
METRICS_FILE = "metrics.json"
PREDICTIONS_DIR = "predictions"
C_PREDICTIONS, P_PREDICTIONS = "imagenet-c", "imagenet-p"
"""Folders of the ImageNet-C and ImageNet-P predictions below :data:`PREDICTIONS_DIR` (the benchmarks'
names, as before the trees became ``ImageNet-C/`` and ``ImageNet-P/``)."""


# --- listing (driver side) and reading (workers) ---------------------------------------------

def parse_config(name: str) -> tuple[str, int]:
    """``"fog_3"`` -> ``("fog", 3)``.

    Raises
    ------
    ValueError
        If ``name`` is not ``<corruption>_<severity>`` with a known corruption and severity 1..5.
    """
    corruption, _, severity = name.rpartition("_")
    if corruption not in CORRUPTIONS or severity not in {str(s) for s in SEVERITIES}:
        raise ValueError(f"{name!r} is not <corruption>_<severity> (severity 1..5, corruption one of "
                         f"{', '.join(CORRUPTIONS)})")
    return corruption, int(severity)


def check_config(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is ``clean`` or ``<corruption>_<severity>``."""
    if name != CLEAN:
        parse_config(name)


def c_tree_configs(release_dir: str) -> list[tuple[str, str]]:
    """(config name, folder) of every ``ImageNet-C/<corruption>/<severity>`` folder and of
    ``ImageNet-C/clean``, sorted."""
    root = storage.join(release_dir, C_TREE)
    configs = []
    for corruption in storage.list_folders(root):
        if corruption == CLEAN:
            configs.append((CLEAN, storage.join(root, CLEAN)))
            continue
        for severity in storage.list_folders(storage.join(root, corruption)):
            name = f"{corruption}_{severity}"
            parse_config(name)
            configs.append((name, storage.join(root, f"{corruption}/{severity}")))
    return configs


def tfds_configs(release_dir: str) -> list[tuple[str, str]]:
    """(config name, version folder) of every ImageNet-C TFDS config under ``DIR/tfds`` (the
    ``clean`` config included), sorted."""
    configs = []
    pattern = f"{TFDS_DIR}/{IMAGENET2012_CORRUPTED.name}/*/*/dataset_info.json"  # not imagenet_p's noise_2 configs
    for info in storage.match(storage.join(release_dir, pattern)):
        version_dir = storage.parent(info)
        name = storage.basename(storage.parent(version_dir))
        check_config(name)
        configs.append((name, version_dir))
    return configs


def labelled_files(folder: str, suffix: str | None = None):
    """Yield ``(key, label, path)`` for each ``<wnid>/<file>`` under ``folder``, sorted by key."""
    labels = wnid_to_label()
    for relative in storage.list_tree(folder):
        wnid, _, name = relative.partition("/")
        if wnid not in labels:
            raise ValueError(f"{storage.join(folder, wnid)}: {wnid!r} is not an ImageNet wnid")
        if suffix is None or name.endswith(suffix):
            yield relative, labels[wnid], storage.join(folder, relative)


def tfds_examples(version_dir: str):
    """Yield ``(key, label, encoded image)`` of a TFDS config's ``validation`` split.

    The key is ``<wnid of label>/<base name of file_name>``, as in the JPEG tree. The shards are
    read with :mod:`pipelines.formats.tfrecord` (CRCs checked), from any file system, without TensorFlow.
    """
    wnids = imagenet_wnids()
    for shard in storage.match(storage.join(version_dir, f"*-{TFDS_SPLIT}.tfrecord-*")):
        with storage.open_stream(shard) as stream:
            for _, data in iter_records(stream):
                example = decode_example(data)
                label = int(example["label"][0])
                file_name = os.path.basename(example["file_name"][0].decode())
                yield f"{wnids[label]}/{file_name}", label, example["image"][0]


def read_video(path: str) -> np.ndarray:
    """Frames of an MP4 as the reference loader reads them: cv2 decode, BGR -> RGB; (T, H, W, 3) uint8.

    Raises
    ------
    ValueError
        If no frame can be read.
    """
    import cv2

    if not storage.is_local(path):  # OpenCV reads local files only
        with tempfile.NamedTemporaryFile(suffix=".mp4") as local:
            local.write(storage.read_bytes(path))
            local.flush()
            return read_video(local.name)
    capture = cv2.VideoCapture(path)
    frames = []
    ok, frame = capture.read()
    while ok:
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
        ok, frame = capture.read()
    capture.release()
    if not frames:
        raise ValueError(f"{path}: no frame could be decoded")
    return np.stack(frames)


def read_bytes(path: str) -> bytes:
    """The bytes of a file (an encoded image)."""
    return storage.read_bytes(path)


# --- Beam composites --------------------------------------------------------------------------

class PredictTop5(beam.PTransform):
    """``(id, image)`` -> ``(id, top-5 classes)``: model input, RunInference, top-5 of the logits."""

    def __init__(self, handler, to_input=model_input):
        super().__init__()
        self._handler, self._to_input = handler, to_input

    def expand(self, images):
        to_input = self._to_input
        return (images
                | "ToModelInput" >> beam.MapTuple(lambda key, image: (key, to_input(image)))
                | "RunInference" >> RunInference(self._handler)
                | "TopFive" >> beam.MapTuple(
                    lambda key, result: (key, top_k_classes(np.asarray(result.inference)).tolist())))


def _c_images(config, source):
    name, folder = config
    if source == "tfds":
        for key, label, image in tfds_examples(folder):
            yield (name, key, label), image
    else:
        for key, label, path in labelled_files(folder):
            yield (name, key, label), path


class PredictImageNetC(beam.PTransform):
    """ImageNet-C configs -> ``(config name, [(key, label, top5), ...])`` per config."""

    def __init__(self, configs, source, handler):
        super().__init__()
        self._configs, self._source, self._handler = configs, source, handler

    def expand(self, pipeline):
        images = (pipeline
                  | "ListConfigs" >> beam.Create(self._configs)
                  | "ListImages" >> beam.FlatMap(_c_images, self._source)
                  | "Spread" >> beam.Reshuffle())
        if self._source != "tfds":
            images = images | "ReadJpegs" >> beam.MapTuple(lambda key, path: (key, read_bytes(path)))
        return (images
                | "Predict" >> PredictTop5(self._handler)
                | "ByConfig" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], key[2], top5)))
                | "GroupConfigs" >> beam.GroupByKey())


def _video_frames(video):
    key, locator = video
    for index, frame in enumerate(sequence_frames(locator)):
        yield (key, index), frame


def _list_sequences(p_set, release_dir):
    if p_set.path.endswith(".npy"):
        items = npy_sequences(release_dir, p_set)
    else:
        items = labelled_files(p_set.path, ".mp4")
    return [((p_set.name, key, label), locator) for key, label, locator in items]


def _assemble_video(video_key, frames):
    top5 = [classes for _, classes in sorted(frames)]
    set_name, key, label = video_key
    return set_name, (key, label, top5)


class PredictImageNetP(beam.PTransform):
    """ImageNet-P set folders -> ``(set name, [(key, label, T x 5 classes), ...])`` per set."""

    def __init__(self, sets, handler, release_dir=""):
        super().__init__()
        self._sets, self._handler, self._release_dir = sets, handler, release_dir

    def expand(self, pipeline):
        edition = self._sets[0].edition if self._sets else "imagenet"
        return (pipeline
                | "ListSets" >> beam.Create(self._sets)
                | "ListVideos" >> beam.FlatMap(_list_sequences, self._release_dir)
                | "Spread" >> beam.Reshuffle()
                | "DecodeFrames" >> beam.FlatMap(_video_frames)
                | "Predict" >> PredictTop5(self._handler, edition_model_input(edition))
                | "ByVideo" >> beam.MapTuple(lambda key, top5: (key[0], (key[1], top5)))
                | "GroupFrames" >> beam.GroupByKey()
                | "AssembleVideos" >> beam.MapTuple(_assemble_video)
                | "GroupSets" >> beam.GroupByKey())


def _write_jsonl(out_dir: str, relative: str, rows) -> None:
    text = "".join(json_line({"key": k, "label": l, "top5": t}) for k, l, t in rows)
    storage.write_atomic(out_dir, relative, text.encode("utf-8"))


class _WriteConfigPredictionsFn(beam.DoFn):
    """Sink: one sorted JSON-lines file per C config; emits ``(config, top-1 error)``."""

    def __init__(self, out_dir: str):
        self._out_dir = out_dir

    def process(self, element):
        name, rows = element
        rows = sorted(rows)
        _write_jsonl(self._out_dir, f"{PREDICTIONS_DIR}/{C_PREDICTIONS}/{name}.jsonl", rows)
        wrong = sum(top5[0] != label for _, label, top5 in rows)
        yield name, wrong / len(rows)


class _WriteSetPredictionsFn(beam.DoFn):
    """Sink: one sorted JSON-lines file per P set; emits ``(set, (V, T, 5) int array)``."""

    def __init__(self, out_dir: str):
        self._out_dir = out_dir

    def process(self, element):
        name, rows = element
        rows = sorted(rows)
        _write_jsonl(self._out_dir, f"{PREDICTIONS_DIR}/{P_PREDICTIONS}/{name}.jsonl", rows)
        lengths = {len(top5) for _, _, top5 in rows}
        if len(lengths) != 1:
            raise ValueError(f"{name}: videos differ in frame count {sorted(lengths)}")
        yield name, np.asarray([top5 for _, _, top5 in rows], dtype=np.int16)


CLEAN_SOURCES = ("given", "clean_config")
"""Where an evaluation's clean error comes from: given by the caller (``--clean-error``), or
measured on the release's clean config."""


def choose_clean_error(given, measured) -> dict:
    """The clean error Relative CE uses: ``given`` when not None, else ``measured``.

    Parameters
    ----------
    given : float or None
        The caller's clean error (fraction), e.g. ``--clean-error``.
    measured : float or None
        The model's top-1 error on the release's clean config (fraction), None without one.

    Returns
    -------
    dict
        ``error`` (the chosen fraction or None), ``source`` (one of :data:`CLEAN_SOURCES`, or None
        when there is no clean error) and ``measured``.
    """
    source = "given" if given is not None else ("clean_config" if measured is not None else None)
    return {"error": given if given is not None else measured, "source": source, "measured": measured}


def imagenet_c_section(config_errors, clean_error, baseline):
    """Errors per corruption and severity, the clean error (given, else measured on the clean
    config), and the summary over corruptions with all 5 severities."""
    errors: dict = {}
    measured = None
    for name, error in config_errors:
        if name == CLEAN:
            measured = error
            continue
        corruption, severity = parse_config(name)
        errors.setdefault(corruption, {})[str(severity)] = error
    clean = choose_clean_error(clean_error, measured)
    complete = {c: [e[str(s)] for s in SEVERITIES] for c, e in errors.items() if len(e) == len(SEVERITIES)}
    summary = (summarize_imagenet_c(complete, clean["error"], baseline, allow_incomplete=True)
               if complete else None)
    return {"errors": {c: dict(sorted(e.items())) for c, e in sorted(errors.items())},
            "clean": clean, "summary": summary}, complete


def imagenet_p_section(set_predictions, flip_baseline):
    """Unnormalised and normalised ImageNet-P metrics, plus flip probability per frame offset."""
    predictions = dict(set_predictions)
    offsets = {name: flip_probability_by_offset(array, parse_sequence_set(name)[0]).tolist()
               for name, array in sorted(predictions.items())}
    summary = summarize_imagenet_p(predictions, flip_baseline, allow_incomplete=True)
    return {"summary": summary, "flip_probability_by_offset": offsets}, predictions


def write_evaluation(out_dir, config_errors, set_predictions, model_name, clean_error, baseline,
                     flip_baseline):
    """Sink: the errors and flips files, ``metrics.json`` and the report (written in a local
    folder, then each file moved to ``out_dir`` atomically, wherever it lies)."""
    document = {"model": model_name}
    with tempfile.TemporaryDirectory() as local:
        out = Path(local)
        if config_errors:
            document["imagenet_c"], complete = imagenet_c_section(config_errors, clean_error, baseline)
            write_errors(out / ERRORS_FILE, complete, document["imagenet_c"]["clean"]["error"])
        if set_predictions:
            document["imagenet_p"], predictions = imagenet_p_section(set_predictions, flip_baseline)
            write_flips(out / FLIPS_FILE, predictions)
        (out / METRICS_FILE).write_text(dumps(document))
        write_report(document, out, baseline)
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            storage.write_atomic(out_dir, path.relative_to(out).as_posix(), path.read_bytes())


def default_output(release_dir: str, model_path: str):
    """``DIR-evaluations/<model file stem>``, beside the release directory ``DIR``: a
    ``pathlib.Path`` for a local release, a URL (str) on an object store."""
    if storage.is_local(release_dir):
        release = Path(os.path.abspath(release_dir))
        return release.with_name(release.name + EVALUATIONS_SUFFIX) / model_name_of(model_path)
    return storage.join(release_dir.rstrip("/") + EVALUATIONS_SUFFIX, model_name_of(model_path))


def model_name_of(model_path: str) -> str:
    """A model's name: its file name without the extension."""
    return Path(storage.basename(model_path.rstrip("/"))).stem


def evaluate_release(release_dir: str, model_path: str, out_dir: str | None = None,
                     framework: str | None = None, source: str = "auto", clean_error=None,
                     baseline=None, flip_baseline=None, batch_size: int = 32,
                     workers: int | None = None, beam_args=()):
    """Run ``model_path`` over the release in ``release_dir`` and write predictions, metrics, report.

    Parameters
    ----------
    source : str
        ``"tree"`` (JPEG tree), ``"tfds"`` (TFDS records) or ``"auto"`` (the tree when present).
    clean_error : float, optional
        The model's clean top-1 error (fraction), for Relative CE; by default it is measured on
        the release's clean config (when it has one). ``metrics.json`` records which was used.
    baseline : schemas.baselines.ErrorBaseline, optional
        ImageNet-C normaliser (AlexNet's errors by default).
    flip_baseline : mapping, optional
        ImageNet-P baseline ``{perturbation: {"flip_probability", "top5_distance"}}``.
    workers, beam_args
        Local worker processes, and Beam options (a ``--runner`` runs elsewhere); see
        ``pipelines.beam.runner.make_pipeline``.

    Returns
    -------
    pathlib.Path or str
        The output folder: a Path when it is local, its URL otherwise.

    Raises
    ------
    ValueError
        When the release holds neither ImageNet-C nor ImageNet-P data, or on a bad ``source``.
    """
    from schemas.baselines import ALEXNET_IMAGENET_C

    storage.configure(beam_args)
    if storage.is_folder(storage.join(release_dir, "imagenet-a")):  # a packaged ImageNet-A set (package-a)
        from pipelines.beam.evaluate_a_o import evaluate_imagenet_a
        return evaluate_imagenet_a(release_dir, model_path, out_dir, framework, batch_size, workers, beam_args)
    if source not in ("auto", "tree", "tfds"):
        raise ValueError(f"source must be auto, tree or tfds, got {source!r}")
    from pipelines.beam.evaluate_editions import evaluate_edition_release, release_edition

    edition = release_edition(release_dir)  # an edition other than 224: inputs and scores from its Edition
    if edition is not None:
        if not storage.is_local(release_dir) or (out_dir and not storage.is_local(out_dir)):
            raise ValueError(f"the {edition[0].name} edition is evaluated from and into local folders only "
                             f"(copy or mount {release_dir}); 224 releases are evaluated on object stores directly")
        out = Path(out_dir) if out_dir else default_output(release_dir, model_path)
        out.mkdir(parents=True, exist_ok=True)
        return evaluate_edition_release(release_dir, edition, model_handler(model_path, framework, batch_size), out,
                                        Path(model_path.rstrip("/")).stem, clean_error, baseline, workers, beam_args,
                                        source)
    if source == "auto":
        source = "tree" if storage.is_folder(storage.join(release_dir, C_TREE)) else "tfds"
    configs = c_tree_configs(release_dir) if source == "tree" else tfds_configs(release_dir)
    sets = p_sets(release_dir)
    for p_set in sets:
        parse_sequence_set(p_set.name)
    if not configs and not sets:
        raise ValueError(f"{release_dir} holds no {C_TREE}/ tree, {TFDS_DIR}/ ImageNet-C records "
                         f"or {P_TREE}/ tree")
    model_name = model_name_of(model_path)
    out = str(out_dir or default_output(release_dir, model_path))
    handler = model_handler(model_path, framework, batch_size)
    with make_pipeline(workers, beam_args) as pipeline:
        errors = (pipeline | "ImageNetC" >> PredictImageNetC(configs, source, handler)
                  | "WriteCPredictions" >> beam.ParDo(_WriteConfigPredictionsFn(str(out)))
                  | "CollectErrors" >> beam.combiners.ToList()) if configs else None
        flips = (pipeline | "ImageNetP" >> PredictImageNetP(sets, handler, release_dir)
                 | "WritePPredictions" >> beam.ParDo(_WriteSetPredictionsFn(str(out)))
                 | "CollectSets" >> beam.combiners.ToList()) if sets else None
        (pipeline
         | "Output" >> beam.Create([str(out)])
         | "WriteMetricsAndReport" >> beam.Map(
             write_evaluation,
             config_errors=beam.pvalue.AsSingleton(errors) if errors is not None else [],
             set_predictions=beam.pvalue.AsSingleton(flips) if flips is not None else [],
             model_name=model_name, clean_error=clean_error,
             baseline=baseline or ALEXNET_IMAGENET_C, flip_baseline=flip_baseline))
    return Path(out) if storage.is_local(out) else out
