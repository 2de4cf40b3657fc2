"""``imagenet-cp evaluate``: run a model over a built release with Beam's RunInference, and score it.

One graph for every ImageNet-C edition and for ImageNet-P: the conditions and sequences are
listed by :mod:`pipelines.evaluation.release_inputs` and :mod:`pipelines.evaluation.p_sequences`
(the JPEG or ``.npy`` tree, or the TFDS records, of the edition ``release.json`` names), each
image or frame goes to the model as its edition's evaluator feeds it
(:mod:`pipelines.evaluation.model_input`), and :mod:`pipelines.evaluation.scores` writes the
files. A packaged ImageNet-A or ImageNet-O set goes to :mod:`pipelines.beam.evaluate_a_o`.

Labels are the class folder's index among the edition's classes (the sorted 1000 ImageNet wnids,
Tiny ImageNet's 200), or the ``labels.npy`` row of the ``.npy`` editions.

Outputs, under ``OUT`` (default ``DIR-evaluations/<model file stem>`` beside ``DIR``, which leaves
the release and its ``SHA256SUMS`` untouched)::

    predictions/<tree>/<corruption>_<severity>.jsonl   {"key", "label", "top5"} per image (<tree>:
                                                        imagenet-c for the 224 ImageNet-C/ tree)
    predictions/<tree>/clean.jsonl                      the same, on the clean config
    predictions/imagenet-p/<set>.jsonl                  {"key", "label", "top5": T x 5} per video
    imagenet-c-errors.json        errors per corruption and severity (``imagenet-cp metrics --errors``)
    imagenet-p-predictions.npz    top-5 classes per set, (V, T, 5) (``imagenet-cp metrics --flips``)
    metrics.json, report.md, plots/*.png

Every file is sorted by key, so equal predictions give equal bytes whatever the runner.

Workers commit each prediction in a part (:mod:`pipelines.beam.prediction_parts`, in
``OUT/.evaluation/``, removed at the end); only the parts' names are grouped, per prediction file,
and one task per file merges them from disk. The images and videos to predict are listed there too
(``.lists/``), so that only references to the lists cross the shuffle that spreads them over the
workers. The same call after an interruption lists only the
images (and videos) no committed part holds, and writes the bytes of an uninterrupted run. A local
run prints a progress line (predicted / to predict, rate, time left) on stderr. The
release and ``OUT`` may lie on any file system :mod:`pipelines.formats.storage` reaches (a local disk,
``s3://``, ``gs://``); Beam options such as ``--s3_endpoint_url`` configure it.
"""
from __future__ import annotations

import array
import io
import pickle
import time
from dataclasses import replace
from typing import Iterable, Optional, Sequence

import apache_beam as beam

from metrics.imagenet_p import parse_sequence_set, top_k_classes
from schemas.release import C_TREE, P_TREE, TFDS_DIR

from pipelines.beam.evaluate_a_o import evaluate_adversarial
from pipelines.beam.inference import (Model, PredictLogits, count_refused, mark_time, model_handler, step_seconds,
                                     threads_per_worker)
from pipelines.beam.prediction_parts import (C_TABLE, EVALUATION_COUNTERS, LISTS_DIR, P_TABLE, CommitPredictionsFn,
                                             c_record, committed_names, evaluation_identity, p_record, pending_images,
                                             pending_videos, run_resumable, table_runs, write_config_file,
                                             write_set_file)
from pipelines.beam.progress import ProgressCounter
from pipelines.beam.runner import RunOptions, make_pipeline
from pipelines.evaluation.model_input import frame_model_input, image_model_input, model_input
from pipelines.evaluation.models import check_model, infer_framework, key_text, read_item, trial_batch
from pipelines.evaluation.p_sequences import npy_sequences, p_sets, p_tree, sequence_frames
from pipelines.evaluation.release_inputs import (adversarial_tree, c_configs, c_examples, c_release,
                                                 labelled_paths, tree_labels)
from pipelines.evaluation.scores import (PREDICTIONS_DIR, ScoreBaselines, default_output, model_name_of, output_path,
                                         write_evaluation)
from pipelines.formats import storage
from pipelines.formats.predictions import read_set_predictions
from pipelines.formats.spill import SpillRef
from pipelines.formats.parts import PART_RECORDS, PART_SECONDS

__all__ = ["LISTED_PER_ELEMENT", "PREDICTION_FOLDERS", "PredictTop5", "PredictImageNetC",
           "PredictImageNetP", "check_evaluation_model", "chosen_configs", "even_lists", "write_listed", "read_listed", "evaluate_release"]

PREDICTION_FOLDERS = {C_TREE: "imagenet-c", P_TREE: "imagenet-p"}
"""Folders below ``predictions/`` of the 224 trees: the benchmarks' names, as before the trees became
``ImageNet-C/`` and ``ImageNet-P/``; another edition's ImageNet-C predictions are named by its tree."""


class PredictTop5(beam.PTransform):
    """``(id, image)`` -> ``(id, top-5 classes)``: model input, RunInference, top-5 of the logits.

    The ids whose logits are not finite leave through :attr:`nonfinite` (a PCollection after expansion)."""

    def __init__(self, handler, to_input=model_input):
        super().__init__()
        self._handler, self._to_input = handler, to_input
        self.nonfinite = None

    def expand(self, images):
        to_input = self._to_input
        predict = PredictLogits(self._handler)
        logits = (images
                  | "ToModelInput" >> beam.MapTuple(lambda key, image: (key, to_input(image)))
                  | "RunInference" >> predict)
        self.nonfinite = predict.nonfinite
        return logits | "TopFive" >> beam.MapTuple(lambda key, row: (key, top_k_classes(row).tolist()))


LISTED_PER_ELEMENT = 64
"""The most listed images (or videos) per list, the unit of work the shuffle that spreads them over
the workers hands out (one :class:`~pipelines.formats.spill.SpillRef` per list: see :func:`write_listed`)."""


def even_lists(items: Iterable, most: int = LISTED_PER_ELEMENT) -> list[list]:
    """``items`` in the fewest lists of at most ``most``, their lengths differing by one at most.

    A local runner hands each of its workers an equal share of the shuffled lists, and a worker
    does not take another's: lists of one length give each worker the same work (a config of 200
    images in lists of 64, 64, 64 and 8 once left one worker with 1,408 of 2,200 images, and
    half the machine idle for the last 40 % of the run).

    Examples
    --------
    >>> [len(chunk) for chunk in even_lists(range(200), 64)]
    [50, 50, 50, 50]
    >>> [len(chunk) for chunk in even_lists(range(130), 64)]
    [43, 43, 44]
    """
    items = list(items)
    return [items[first:last] for first, last in _even_bounds(len(items), most)]


def _even_bounds(length: int, most: int) -> list:
    """``(first, last)`` index bounds of :func:`even_lists` of ``length`` items."""
    count = -(-length // most)
    return [(length * index // count, length * (index + 1) // count) for index in range(count)]


def write_listed(scratch: str, table: str, items: Iterable, most: int = LISTED_PER_ELEMENT) -> list:
    """Sink: write a table's pending ``items`` to ``scratch/.lists/<table>.pickle`` as they come, one
    pickle each (atomically; the same listing writes the same bytes), and return a :class:`~pipelines.formats.spill.SpillRef`
    per list of :func:`even_lists` (the same lists).

    The driver of a local runner holds everything shuffled: only these references cross the
    shuffle, one per :data:`LISTED_PER_ELEMENT` items, not the items; and the lister holds an
    offset per item, not the items.

    Examples
    --------
    >>> import tempfile
    >>> scratch = tempfile.mkdtemp()
    >>> refs = write_listed(scratch, "C/fog_1", [(("fog_1", f"a/{i}.JPEG", 0), f"x{i}") for i in range(3)], 2)
    >>> [read_listed(ref) for ref in refs]
    [[(('fog_1', 'a/0.JPEG', 0), 'x0')], [(('fog_1', 'a/1.JPEG', 0), 'x1'), (('fog_1', 'a/2.JPEG', 0), 'x2')]]
    """
    relative = f"{LISTS_DIR}/{table}.pickle"
    offsets = array.array("q", [0])

    def pickles():
        for item in items:
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            offsets.append(offsets[-1] + len(data))
            yield data

    storage.write_atomic(scratch, relative, pickles())
    path = storage.join(scratch, relative)
    return [SpillRef(path, offsets[first], offsets[last] - offsets[first])
            for first, last in _even_bounds(len(offsets) - 1, most)]


def read_listed(ref: SpillRef) -> list:
    """The items of one list :func:`write_listed` wrote."""
    stream, items = io.BytesIO(storage.read_bytes(ref.path, ref.offset, ref.length)), []
    while stream.tell() < ref.length:
        items.append(pickle.load(stream))
    return items


class _ListPendingFn(beam.DoFn):
    """A C config (``(CConfig, runs)``) -> the ``((config, key, label), item)`` of its images that
    no committed run holds; a P set (``((name, path), runs)``) -> its videos not all committed;
    written by :func:`write_listed`: emits a :class:`~pipelines.formats.spill.SpillRef` per list of :func:`even_lists`,
    and ``(table, count)`` of all its images or videos, committed or not (tagged ``listed``), which
    its prediction file must hold (:class:`_WritePredictionFilesFn`)."""

    def __init__(self, kind: str, scratch: str, progress_dir, release_dir: str, c=None, labels=None):
        self._kind, self._scratch, self._progress_dir = kind, scratch, progress_dir
        self._release_dir, self._c, self._labels = release_dir, c, labels

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir, counters=EVALUATION_COUNTERS)

    def process(self, element):
        what, runs = element
        count = [0]

        def counted(items):
            for item in items:
                count[0] += 1
                yield item

        if self._kind == "c":
            examples = counted(c_examples(what, self._release_dir, self._c, self._labels))
            table, pending = C_TABLE + what.name, pending_images(examples, self._scratch, what.name, runs,
                                                                 self._progress)
        else:
            table, pending = P_TABLE + what[0], pending_videos(counted(_list_sequences(what, self._release_dir)),
                                                               self._scratch, what[0], runs, self._progress)
        yield from write_listed(self._scratch, table, pending)
        yield beam.pvalue.TaggedOutput("listed", (table, count[0]))


class PredictImageNetC(beam.PTransform):
    """ImageNet-C conditions of any edition -> the predictions committed in parts
    (:mod:`pipelines.beam.prediction_parts`): ``(table, (part, offset, length))`` per committed run.

    ``committed`` maps a config's table to the runs an interrupted run committed: those images are not
    listed again. Once expanded, ``listed`` holds ``(table, images)`` of each config, committed or not."""

    def __init__(self, configs, release_dir, c, handler, scratch: str, committed=None, progress_dir=None,
                 part_limits=(PART_RECORDS, PART_SECONDS)):
        super().__init__()
        self._configs, self._release_dir, self._c, self._handler = configs, release_dir, c, handler
        self._scratch, self._committed, self._progress_dir = scratch, committed or {}, progress_dir
        self._part_limits = part_limits
        self.nonfinite = self.listed = None

    def expand(self, pipeline):
        labels = tree_labels(self._release_dir, self._c)
        predict = PredictTop5(self._handler, image_model_input(self._c.edition))
        listed = [(config, self._committed.get(C_TABLE + config.name, [])) for config in self._configs]
        lists = (pipeline
                 | "ListConfigs" >> beam.Create(listed)
                 | "ListImages" >> beam.ParDo(_ListPendingFn("c", self._scratch, self._progress_dir,
                                                             self._release_dir, self._c, labels)).with_outputs(
                     "listed", main="lists"))
        self.listed = lists.listed
        top5 = (lists.lists
                | "Spread" >> beam.Reshuffle()
                | "ReadImages" >> beam.FlatMap(lambda ref: ((key, read_item(item)) for key, item in read_listed(ref)))
                | "Predict" >> predict)
        self.nonfinite = predict.nonfinite
        return top5 | "CommitPredictions" >> beam.ParDo(
            CommitPredictionsFn(self._scratch, c_record, self._progress_dir, *self._part_limits))


class _DecodeFramesFn(beam.DoFn):
    """``(video key, locator)`` -> ``((video key, frame, frames), frame array)`` of every frame."""

    def __init__(self, progress_dir):
        self._progress_dir = progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir, counters=EVALUATION_COUNTERS)

    def process(self, video):
        key, locator = video
        frames = sequence_frames(locator)
        self._progress.add(videos_decoded=1, frames_decoded=len(frames))
        for index, frame in enumerate(frames):
            yield (key, index, len(frames)), frame

    def teardown(self):
        self._progress.flush()


def _list_sequences(p_set, release_dir):
    """``((set, key, label), locator)`` of every sequence of ``p_set`` (a PSet, or its ``(name, path)``)."""
    name, path = p_set[:2]
    items = npy_sequences(release_dir, name, path) if path.endswith(".npy") else labelled_paths(path, ".mp4")
    return [((name, key, label), locator) for key, label, locator in items]


class PredictImageNetP(beam.PTransform):
    """ImageNet-P set folders -> the frames' predictions committed in parts: ``(table, (part,
    offset, length))`` per committed run; the videos whose every frame ``committed`` holds are skipped.
    Once expanded, ``listed`` holds ``(table, videos)`` of each set, committed or not."""

    def __init__(self, sets, handler, release_dir="", scratch: str = "", committed=None, progress_dir=None,
                 part_limits=(PART_RECORDS, PART_SECONDS)):
        super().__init__()
        self._sets, self._handler, self._release_dir = sets, handler, release_dir
        self._scratch, self._committed, self._progress_dir = scratch, committed or {}, progress_dir
        self._part_limits = part_limits
        self.nonfinite = self.listed = None

    def expand(self, pipeline):
        edition = self._sets[0].edition  # applied only to a release with sets (evaluate_release)
        predict = PredictTop5(self._handler, frame_model_input(edition))
        listed = [((p_set.name, p_set.path), self._committed.get(P_TABLE + p_set.name, [])) for p_set in self._sets]
        lists = (pipeline
                 | "ListSets" >> beam.Create(listed)
                 | "ListVideos" >> beam.ParDo(_ListPendingFn("p", self._scratch, self._progress_dir,
                                                             self._release_dir)).with_outputs("listed", main="lists"))
        self.listed = lists.listed
        top5 = (lists.lists
                | "Spread" >> beam.Reshuffle()
                | "Videos" >> beam.FlatMap(read_listed)
                | "DecodeFrames" >> beam.ParDo(_DecodeFramesFn(self._progress_dir))
                | "Predict" >> predict)
        self.nonfinite = predict.nonfinite
        return top5 | "CommitPredictions" >> beam.ParDo(
            CommitPredictionsFn(self._scratch, p_record, self._progress_dir, *self._part_limits))


class _WritePredictionFilesFn(beam.DoFn):
    """Sink: ``(table, [runs])`` -> its sorted prediction file, merged from the committed runs, which
    must hold every image or video the listing found (``listed``: table -> count); emits ``(config,
    top-1 error)`` (tagged ``errors``) or ``(set, path of its prediction file)`` (``sets``)."""

    def __init__(self, scratch: str, out_dir: str, tree: str):
        self._scratch, self._out_dir, self._tree = scratch, out_dir, tree

    def process(self, element, refused=0, listed=None):
        table, runs = element
        runs = sorted({tuple(run) for run in runs if run is not None})
        if refused or not runs:  # a model that gave NaN or infinite logits: nothing is written
            return
        count = (listed or {}).get(table)
        if table.startswith(C_TABLE):
            name = table[len(C_TABLE):]
            relative = f"{PREDICTIONS_DIR}/{PREDICTION_FOLDERS.get(self._tree, self._tree)}/{name}.jsonl"
            yield beam.pvalue.TaggedOutput("errors", (name, write_config_file(self._scratch, self._out_dir,
                                                                              relative, table, runs, count)))
        else:
            name = table[len(P_TABLE):]
            relative = f"{PREDICTIONS_DIR}/{PREDICTION_FOLDERS[P_TREE]}/{name}.jsonl"
            write_set_file(self._scratch, self._out_dir, relative, table, runs, count)
            yield beam.pvalue.TaggedOutput("sets", (name, storage.join(self._out_dir, relative)))


def check_evaluation_model(model_path, framework, release_dir, c, configs, sets) -> None:
    """:func:`pipelines.evaluation.models.check_model` on the first images of the run (C) or the
    first frames of its first sequence (P)."""
    if configs:
        items = c_examples(configs[0], release_dir, c, tree_labels(release_dir, c))
        trial = trial_batch(((key_text(key), item) for key, item in items), image_model_input(c.edition))
        check_model(model_path, framework, c.edition.image_size, (c.layout.num_classes,),
                    f"the {c.layout.tree} release", trial)
    if sets:
        edition = sets[0].edition
        (key, locator), = _list_sequences(sets[0], release_dir)[:1]
        frames = sequence_frames(locator)[:2]
        trial = trial_batch(((f"{key_text(key)}#{i}", frame) for i, frame in enumerate(frames)),
                            frame_model_input(edition))
        tree = p_tree(release_dir)[0]
        check_model(model_path, framework, edition.image_size, (edition.p.classes_of(tree),),
                    f"the {tree} release", trial)


def _nothing_to_evaluate(release_dir: str, c, source: str) -> str:
    if c.layout.tree == C_TREE:
        return f"{release_dir} holds no {C_TREE}/ tree, {TFDS_DIR}/ ImageNet-C records or {P_TREE}/ tree"
    where = f"{c.layout.tree}/" if source == "tree" else f"{TFDS_DIR}/{c.layout.tfds.dataset}/"
    return f"{release_dir}: {where} holds no corruption of the {c.edition.name} edition"


def evaluate_release(release_dir: str, model: Model, out_dir: str | None = None, source: str = "auto",
                     baselines: ScoreBaselines = ScoreBaselines(), in_distribution: str | None = None,
                     run: RunOptions = RunOptions(), configs: Optional[Sequence[str]] = None):
    """Run ``model`` over the release in ``release_dir`` and write predictions, metrics, report.

    The predictions are committed in parts as they are made (:mod:`pipelines.beam.prediction_parts`):
    the same call after an interruption predicts only the images and videos that are missing, and
    writes the same bytes as an uninterrupted run.

    Parameters
    ----------
    model : Model
        The model file, its framework (inferred when None) and batch size.
    source : str
        ``"tree"`` (JPEG or ``.npy`` tree), ``"tfds"`` (TFDS records) or ``"auto"`` (the tree when present).
    baselines : ScoreBaselines
        The model's clean error for Relative CE (measured on the release's clean config when None;
        ``metrics.json`` records which was used), the ImageNet-C normaliser (AlexNet's errors by
        default at 224; none by default for the other editions) and the ImageNet-P baseline.
    in_distribution : str, optional
        ImageNet-O only (and required there): an ImageNet val folder or tar, or a release with a
        clean config, whose images of the 200 ImageNet-O classes are the negatives.
    configs : sequence of str, optional
        Evaluate only these ImageNet-C configs (``clean``, ``fog_3``) and ImageNet-P sets
        (``rotate``, ``gaussian_noise_2``) of the release (default: all of them).
    run : RunOptions
        Local worker processes and Beam options (a ``--runner`` runs elsewhere; see
        ``pipelines.beam.runner.make_pipeline``); ``force``: discard the scratch folder of an
        interrupted evaluation of something else in the output folder (another model file, release,
        source or framework) instead of refusing; the progress interval and stream (where the
        progress lines and the last line go); the part limits, when workers commit their
        predictions (see :class:`pipelines.formats.parts.PartWriter`); ``verbose``: a last line
        of each step's seconds (:func:`pipelines.beam.inference.step_seconds`), counted from
        ``started`` (default: this call).

    Returns
    -------
    pathlib.Path or str
        The output folder: a Path when it is local, its URL otherwise.

    Raises
    ------
    ValueError
        When the release holds neither ImageNet-C nor ImageNet-P data, on a bad ``source``, or when
        ``configs`` names a config or set the release does not hold.
    pipelines.release.output_folder.OutputFolderError
        When the output folder is busy, or holds an interrupted evaluation of something else.
    pipelines.beam.shutdown.BuildInterrupted, pipelines.beam.shutdown.BuildStopped
        From a local run stopped by a signal or a dead worker (resumable).
    """
    entered = time.time()
    model_path, framework, batch_size, configs_wanted = model.path, model.framework, model.batch_size, configs
    workers, beam_args, part_records, part_seconds = run.workers, run.beam_args, run.part_records, run.part_seconds
    storage.configure(beam_args)
    tree = adversarial_tree(release_dir)
    if tree is not None and configs_wanted is not None:
        raise ValueError("--configs applies to ImageNet-C and ImageNet-P releases; an ImageNet-A or -O set is "
                         "evaluated whole")
    if tree is not None:  # a packaged ImageNet-A or -O set (package-a, package-o)
        return evaluate_adversarial(release_dir, tree, model, out_dir, in_distribution, run)
    if in_distribution is not None:
        raise ValueError("--in-distribution applies to ImageNet-O releases only (a package-o folder)")
    c = c_release(release_dir)
    configs = c_configs(release_dir, c, source)
    sets = p_sets(release_dir)
    if configs_wanted is not None:
        configs, sets = chosen_configs(configs, sets, configs_wanted)
    for p_set in sets:
        parse_sequence_set(p_set.name)
    if not configs and not sets:
        raise ValueError(_nothing_to_evaluate(release_dir, c, "tree" if source == "tree" else "tfds"))
    if baselines.baseline is None:
        baselines = replace(baselines, baseline=c.edition.scoring.baseline)
    check_evaluation_model(model_path, framework, release_dir, c, configs, sets)
    out = str(out_dir or default_output(release_dir, model_path))
    identity = evaluation_identity(release_dir, model_path, framework or infer_framework(model_path), source=source,
                                   configs=[config.name for config in configs], sets=[p_set.name for p_set in sets])

    def make(scratch, ledger, progress_dir):
        handler = model_handler(model_path, framework, batch_size, threads_per_worker(workers, beam_args))
        pipeline = make_pipeline(workers, beam_args, in_threads=True)
        committed, limits = table_runs(ledger), (part_records, part_seconds)
        predict_c = PredictImageNetC(configs, release_dir, c, handler, scratch, committed, progress_dir, limits)
        predict_p = PredictImageNetP(sets, handler, release_dir, scratch, committed, progress_dir, limits)
        names = ([pipeline | "ImageNetC" >> predict_c] if configs else []) + (
            [pipeline | "ImageNetP" >> predict_p] if sets else [])
        names.append(pipeline | "CommittedParts" >> beam.Create(committed_names(ledger), reshuffle=False))
        refused = count_refused(pipeline, [p.nonfinite for p in (predict_c, predict_p) if p.nonfinite is not None])
        listed = beam.pvalue.AsDict([p.listed for p in (predict_c, predict_p) if p.listed is not None]
                                    | "AllListed" >> beam.Flatten())
        files = (names | "AllParts" >> beam.Flatten()
                 | "GroupPartsByFile" >> beam.GroupByKey()
                 | "WritePredictions" >> beam.ParDo(_WritePredictionFilesFn(scratch, out, c.layout.tree),
                                                    refused, listed).with_outputs("errors", "sets"))
        errors = files.errors | "CollectErrors" >> beam.combiners.ToList()
        set_files = files.sets | "CollectSets" >> beam.combiners.ToList()
        (pipeline
         | "Output" >> beam.Create([out])
         | "WriteMetricsAndReport" >> beam.Map(
             _write_unless_refused, config_errors=beam.pvalue.AsSingleton(errors),
             set_files=beam.pvalue.AsSingleton(set_files), refused=refused, listed=listed,
             model_name=model_name_of(model_path),
             baselines=baselines, edition=c.edition, layout=c.layout))
        return pipeline, {}

    run_times, marked = run_resumable(out, identity, model_path, beam_args, make, run.force, run.progress_interval,
                                      run.out)
    if run.verbose:
        steps = step_seconds(run.started or entered, entered, run_times, marked, time.time())
        print("seconds: " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in steps), file=run.out)
    return output_path(out)


def chosen_configs(configs: Sequence, sets: Sequence, names: Sequence[str]) -> tuple[list, list]:
    """The ImageNet-C configs and ImageNet-P sets of a release that ``names`` chooses, in the
    release's order; a name the release does not hold is refused with the names it does."""
    held = [config.name for config in configs] + [p_set.name for p_set in sets]
    unknown = [name for name in names if name not in held]
    if unknown or not names:
        raise ValueError(f"--configs: the release holds no {unknown[0] if unknown else 'config in an empty list'}; "
                         f"it holds {', '.join(held) or 'none'}")
    return [c for c in configs if c.name in names], [s for s in sets if s.name in names]


def _write_unless_refused(out, refused, listed, set_files, **outputs):
    """Write the metrics and the report, unless the model was refused; refuse an evaluation that
    lost every prediction of a config or set it listed images or videos of. ``set_files``: ``(set,
    path of its prediction file)``, whose top-5 classes are read here: a set's array handed through
    the pipeline instead cost a local runner about 35 times its size in memory, and Beam's local
    runner failed on arrays of 40,000 videos."""
    if refused:
        return
    written = {C_TABLE + name for name, _ in outputs["config_errors"]} | {P_TABLE + name for name, _ in set_files}
    lost = sorted(table for table, count in listed.items() if count and table not in written)
    if lost:
        raise ValueError(f"no prediction of {lost[0]} was committed, of the {listed[lost[0]]} listed; the "
                         "evaluation lost work: rerun it (it resumes from what it committed)")
    set_predictions = [(name, read_set_predictions(path)) for name, path in sorted(set_files)]
    write_evaluation(out, set_predictions=set_predictions, **outputs)
    mark_time("written_ms")
