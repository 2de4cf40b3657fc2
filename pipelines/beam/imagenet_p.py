"""ImageNet-P: PerturbImages turns each source image into one H.264 video per perturbation dataset.

Per image: decode and preprocess (``Resize(256)`` then RGB, no crop:
``transforms.preprocess_uncropped``), then the images are spread over the workers, and each makes
one video per selected (perturbation, difficulty). What crosses that spread is the source entry, not
its bytes or pixels, one per image (a local runner holds every shuffled element in the driver's
memory), so the worker reads and decodes its source again, once for all its videos. A video's frames
come from ``transforms.perturb_sequence`` and ``RandomState(example_seed(release_seed, image_key,
perturbation, difficulty))``; it is encoded as the reference's MP4
(:func:`pipelines.formats.video.encode_h264`: libx264, yuv444p, 1 fps, ``-tune grain`` for the noise
types, ``-crf 20`` otherwise, one thread) and decoded back as the official evaluator does
(``--tfds-frames lossless``: keeps the frames before the encode) for the TFDS PNG frames, made only
for a release whose formats read them (``tfds``, ``webdataset``). Each result is an
:class:`OutputRecord` for ``WriteRelease``: the file ``ImageNet-P/<dataset>/<wnid>/<stem>.mp4``
(``<dataset>`` = ``<perturbation>[_<difficulty>]``, ``<stem>`` = the source file name without its
extension), the TFDS example of config ``<dataset>`` of ``imagenet_p`` (the PNG frames) and its
manifest metadata.

Other editions (``ImageNetPConfig.edition``): the source becomes what that edition's sequences
receive (:func:`transforms.views_p.edition_input`), the tree is the edition's
(``Tiny-ImageNet-P/<dataset>/<wnid>/<stem>.mp4``, ...), and the cifar edition emits each sequence
as a stacked row of ``CIFAR-10-P/<dataset>.npy`` (:mod:`pipelines.beam.npy_release`) with lossless
TFDS frames; the inputs are the editions' own (:mod:`pipelines.inputs.families`).

Two source images whose videos would share a path (``x.JPEG`` and ``x.png`` in one class folder)
cannot both be built: the first by key is, the other is reported in ``failures.jsonl``. The driver
decides it from the listing (:func:`one_image_per_video_name`, the plan's ``exclusive``), so no
image crosses a shuffle for it.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from typing import NamedTuple, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from schemas.configs import ImageNetPConfig
from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS, TFDS_FRAMES
from schemas.imagenet_p_editions import NPY
from schemas.release import (DEFAULT_FORMATS, P_BENCHMARK, ArrayLayout, EncoderSettings, PEditionFacts, PSettings,
                             Release, ReleaseTfds, TfdsFrames, VideoSettings)
from schemas.records import Failure, OutputRecord, SourceEntry, SourceImage
from schemas.tfds_p import imagenet_p_config, p_dataset
from transforms import BadInput, example_rng, example_seed, perturb_sequence
from transforms.views_p import edition_input

from pipelines.beam.build import BuildPlan, BuildResult, SourceSelection, run_build
from pipelines.beam.imagenet_c import source_record
from pipelines.beam.progress import ProgressCounter
from pipelines.beam.runner import RunOptions
from pipelines.beam.write_release import OutputsFn
from pipelines.inputs.families import open_input
from pipelines.inputs.listing import inspect_image, read_entry
from pipelines.formats.release_formats import check_build_formats, examples_read
from pipelines.formats.release_sink import BuildKind
from pipelines.formats.video import (FRAME_RATE, PIXEL_FORMAT, PNG_COMPRESS_LEVEL, decode_video, encode_frames_lossless,
                    encode_h264, encoder_settings, encoder_versions,
                    x264_cpu_capabilities)

__all__ = ["BENCHMARK", "ENCODER_THREADS", "TFDS_FRAMES",
           "DEFAULT_EXAMPLES_PER_SHARD", "ImageNetPConfig", "SequenceTask", "EditionOutputs",
           "video_name", "is_noise", "make_video", "one_image_per_video_name", "PerturbImages",
           "imagenet_p_document", "plan", "build_imagenet_p"]

BENCHMARK = P_BENCHMARK
"""``release.json``'s ``benchmark`` of an ImageNet-P release (its ``edition`` is the catalogue name)."""

ENCODER_THREADS = 1
"""x264 threads per encode: the MP4 bytes depend on the count, so it is fixed."""

DEFAULT_EXAMPLES_PER_SHARD = 32
"""Examples per TFRecord shard on average: 31 PNG frames are about 3 MB, so shards of about 100 MB."""


@dataclass(frozen=True)
class SequenceTask:
    """One video to make: the source entry, its uncropped image, and the dataset it goes to.

    Attributes
    ----------
    entry : SourceEntry
        Key, class and place of the source image.
    image : numpy.ndarray
        ``transforms.views_p.edition_input`` of its bytes: at 224 uint8 (H, W, 3), short side
        256; the RGB image at full size for inception / tinyimagenet / imagenet64; 32x32 for cifar.
    perturbation : str
        A name of :data:`schemas.imagenet_p.PERTURBATIONS`.
    difficulty : int
        One of that perturbation's difficulties.
    """

    entry: SourceEntry
    image: np.ndarray
    perturbation: str
    difficulty: int


class EditionOutputs(NamedTuple):
    """The PCollections an edition transform hands to ``WriteRelease``."""

    records: beam.PCollection
    sources: beam.PCollection
    failures: beam.PCollection
    environments: beam.PCollection


def video_name(entry: SourceEntry) -> str:
    """``<wnid>/<stem>.mp4``: the video's path inside its dataset folder (the reference's layout)."""
    return f"{entry.wnid}/{os.path.splitext(entry.file_name)[0]}.mp4"


def is_noise(perturbation: str) -> bool:
    """True for the perturbations the reference encoded with ``-tune grain``."""
    return PERTURBATIONS[perturbation].rate_control == GRAIN_RATE_CONTROL


def make_video(task: SequenceTask, config: ImageNetPConfig, examples: bool = True) -> Union[OutputRecord, Failure]:
    """The output of one task; a sequence that raises :class:`transforms.BadInput` becomes a Failure.

    Any other exception, of the perturbation or of the encoder (our own frames: an encoder that
    fails on them is the machine's or the code's fault), stops the build.

    Parameters
    ----------
    task : SequenceTask
        The image and the dataset.
    config : ImageNetPConfig
        Release seed, x264 preset, SIMD setting, edition, source family (the top folder of the
        release: ``config.tree``, ``CIFAR-100-P`` for a CIFAR-100 input).
    examples : bool
        Make the TFDS example (its PNG frames, and for ``--tfds-frames decoded`` the decode of the
        video); False where no format of the release reads it
        (:func:`pipelines.formats.release_formats.examples_read`).

    Returns
    -------
    OutputRecord or Failure
        MP4 editions: the video file with its TFDS example; ``.npy`` editions (cifar): a stacked
        row (the raw uint8 frames) of ``<tree>/<dataset>.npy`` with its example (None without
        ``examples``).
    """
    tree = config.tree
    entry, name, difficulty = task.entry, task.perturbation, task.difficulty
    group = imagenet_p_config(name, difficulty)
    npy = config.table.output == NPY
    # a row of an .npy is named by its image key, so that key order is row order
    key = f"{group}/{os.path.splitext(entry.key)[0]}" if npy else f"{group}/{video_name(entry)}"
    try:
        frames = perturb_sequence(task.image, name, example_rng(config.seed, entry.key, name, difficulty),
                                  difficulty, edition=config.edition)
    except BadInput as err:  # this input cannot make this video: reported; any other error is a bug
        return Failure(key, entry.source, "perturb", f"{type(err).__name__}: {err}")
    metadata = {"image_key": entry.key, "wnid": entry.wnid, "label": entry.label, "perturbation": name,
                "difficulty": difficulty, "seed": example_seed(config.seed, entry.key, name, difficulty),
                "frames": len(frames), "frames_sha256": hashlib.sha256(frames.tobytes()).hexdigest()}

    def example(video: np.ndarray) -> Optional[dict]:  # the TFDS example, where a format reads it
        if not examples:
            return None
        return {"video": encode_frames_lossless(video), "label": entry.label, "file_name": entry.file_name}

    if npy:  # lossless arrays: one row of <tree>/<group>.npy (StackedArrays)
        return OutputRecord(key=key, group=group, path=f"{tree}/{group}.npy", data=frames.tobytes(),
                            example=example(frames), metadata=metadata, stacked=True)
    mp4 = encode_h264(frames, noise=is_noise(name), preset=config.preset, threads=ENCODER_THREADS,
                      simd=config.simd)
    decoded = examples and config.tfds_frames == "decoded"
    return OutputRecord(key=key, group=group, path=f"{tree}/{key}", data=mp4,
                        example=example(decode_video(mp4) if decoded else frames), metadata=metadata)


def one_image_per_video_name(entries: Sequence[SourceEntry]) -> tuple[list, list]:
    """The entries to build and a Failure for each other one: of the entries whose videos would
    share a path (:func:`video_name`, case-folded), the first by key is built.

    Parameters
    ----------
    entries : sequence of SourceEntry
        The listed input, in input order.

    Returns
    -------
    kept : list of SourceEntry
        The entries to build, in input order.
    rejected : list of Failure
        One ``list`` failure per other entry, naming the entry that is built.
    """
    first: dict[str, SourceEntry] = {}
    for entry in sorted(entries, key=lambda e: e.key):
        first.setdefault(video_name(entry).casefold(), entry)
    chosen = [(entry, first[video_name(entry).casefold()]) for entry in entries]
    return ([entry for entry, kept in chosen if kept.key == entry.key],
            [_duplicate(entry, kept) for entry, kept in chosen if kept.key != entry.key])


def _duplicate(entry: SourceEntry, kept: SourceEntry) -> Failure:
    """The ``list`` failure of ``entry``, whose videos would take the path of ``kept`` 's."""
    return Failure(entry.key, entry.source, "list",
                   f"duplicate video name: {entry.key} and {kept.key} would both make <dataset>/"
                   f"{video_name(kept)}; {kept.key} is used")


class _DecodeImagesFn(beam.DoFn):
    """SourceImage -> its SourceEntry once the image decodes (no bytes: the entry is what is spread
    over the workers); tagged ``sources`` (one record per decoded image) and ``failures`` (images
    that do not decode)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str]):
        self._config, self._progress_dir = config, progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)

    def process(self, image: SourceImage):
        try:
            info = inspect_image(image.data)
            edition_input(image.data, self._config.table)  # raises here for a bad image; decoded again after the spread
        except BadInput as err:  # this image cannot be built: reported; any other error is a bug
            self._progress.add(failures=1)
            yield beam.pvalue.TaggedOutput("failures", Failure(
                image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        yield image.entry

    def finish_bundle(self):
        self._progress.flush()  # this stage ends long before the workers are torn down

    def teardown(self):
        self._progress.flush()


class _MakeVideosFn(OutputsFn):
    """SourceEntry -> one OutputRecord per selected dataset (the source is read and preprocessed
    again, once); tagged ``failures`` and ``environments`` (this worker's library and encoder
    versions, as JSON). Setup fails when ffmpeg or its libx264 is unusable. ``examples``: make the
    records' TFDS examples (:func:`make_video`)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str], examples: bool = True):
        super().__init__(progress_dir)
        self._config, self._examples = config, examples

    def environment(self) -> dict[str, str]:
        # the CPU level x264 runs at on this worker (release.json's encoder record is the driver's)
        return {**super().environment(), **encoder_versions(),
                "x264_cpu_capabilities": x264_cpu_capabilities(self._config.simd)}

    def process(self, entry: SourceEntry):
        yield from self.report_environment()
        image = edition_input(read_entry(entry), self._config.table)
        for name, difficulty in self._config.pairs:
            output = make_video(SequenceTask(entry, image, name, difficulty), self._config, self._examples)
            yield self.fail(output) if isinstance(output, Failure) else output


class PerturbImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`);
    ``examples``: whether the records carry their TFDS examples (:func:`make_video`)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str] = None, examples: bool = True):
        super().__init__()
        self._config, self._progress_dir, self._examples = config, progress_dir, examples

    def expand(self, images):
        decoded = images | "Decode" >> beam.ParDo(_DecodeImagesFn(self._config, self._progress_dir)).with_outputs(
            "sources", "failures", main="entries")
        videos = (decoded.entries
                  | "SpreadImages" >> beam.Reshuffle()  # one entry per image crosses: no bytes, no fan-out
                  | "PerturbAndEncode" >> beam.ParDo(_MakeVideosFn(self._config, self._progress_dir,
                                                                   self._examples)).with_outputs(
                      "failures", "environments", main="records"))
        failures = (decoded.failures, videos.failures) | "PerturbFailures" >> beam.Flatten()
        return EditionOutputs(videos.records, decoded.sources, failures, videos.environments)


def imagenet_p_document(config: ImageNetPConfig, class_names: Optional[Sequence[str]] = None) -> Release:
    """Edition fields of ``release.json``: the edition's catalogue name, the benchmark (``p``), the
    config, the edition's facts, the encoder settings (MP4 editions) or the array layout (``.npy``),
    and the TFDS configs."""
    dataset = p_dataset(config.edition, config.family, class_names)
    tree = config.tree
    document = Release(edition=config.edition.name, benchmark=BENCHMARK, tree=tree,
                       config=PSettings.from_json(config.to_json()),
                       p_edition=PEditionFacts.from_json(config.table.to_json()), source_family=config.source_family,
                       tfds=ReleaseTfds.of(dataset, config.groups))
    if config.table.output == NPY:
        return replace(document, arrays=ArrayLayout(
            path=f"{tree}/<perturbation>[_<d>].npy", dtype="uint8",
            shape="(N, T, H, W, 3), rows in input order (manifest order)",
            tfds_frames="the rows of the .npy (lossless)"))
    return replace(document, video=VideoSettings(
        container="mp4", codec="libx264", pixel_format=PIXEL_FORMAT, frame_rate=FRAME_RATE, threads=ENCODER_THREADS,
        rate_control={name: " ".join(PERTURBATIONS[name].rate_control) for name in config.perturbations},
        encoder=EncoderSettings.from_json(encoder_settings(config.simd, config.preset, ENCODER_THREADS)),
        tfds_frames=TfdsFrames(source=config.tfds_frames, meaning=TFDS_FRAMES[config.tfds_frames], format="png",
                               compress_level=PNG_COMPRESS_LEVEL)))


def plan(config: ImageNetPConfig, source: SourceSelection = SourceSelection(),
         examples_per_shard: Optional[int] = None, formats: Sequence[str] = DEFAULT_FORMATS) -> BuildPlan:
    """The build of an ImageNet-P release of ``config.edition`` from ``source``. Every edition reads its
    own inputs as ImageNet-C's editions do (:func:`pipelines.inputs.families.open_input`: ImageNet val
    for imagenet, inception and imagenet64, the Tiny-ImageNet folder, the CIFAR-10/100 test pickles);
    the input's source family joins the config and decides the tree and the TFDS dataset. ``.npy``
    editions add the array sink. ``examples_per_shard`` defaults to :data:`DEFAULT_EXAMPLES_PER_SHARD`.
    """
    from pipelines.beam.npy_release import SEQUENCE_ARRAYS_GROUP, StackedArrays

    check_build_formats(formats, BuildKind(P_BENCHMARK, config.edition.name, config.table.output == NPY))
    opened = open_input(config.edition, source.input)
    config = config.with_family(opened.family)
    tree = config.tree

    size = config.table.frame_size
    shapes = {f"{tree}/{name}.npy": (config.table.perturbations[p].frames, size, size, 3)
              for name, (p, _) in zip(config.groups, config.pairs)}
    arrays = StackedArrays(shapes, checksum_part=SEQUENCE_ARRAYS_GROUP)
    examples = examples_read(formats)  # the PNG frames only for a format that reads them

    return BuildPlan(
        selection=source, source=opened, document=imagenet_p_document(config, opened.class_names),
        dataset=p_dataset(config.edition, config.family, opened.class_names), outputs_per_image=len(config.pairs),
        transform=lambda progress_dir: PerturbImages(config, progress_dir, examples),
        sinks=(arrays,) if config.table.output == NPY else (),
        exclusive=one_image_per_video_name,
        examples_per_shard=DEFAULT_EXAMPLES_PER_SHARD if examples_per_shard is None else examples_per_shard,
        formats=tuple(formats))


def build_imagenet_p(output_dir: str, selection: SourceSelection = SourceSelection(),
                     config: ImageNetPConfig = ImageNetPConfig(), run: RunOptions = RunOptions(),
                     examples_per_shard: Optional[int] = None, formats: Sequence[str] = DEFAULT_FORMATS) -> BuildResult:
    """Build an ImageNet-P release of ``config.edition``: :func:`run_build` of :func:`plan`.

    Raises
    ------
    pipelines.formats.video.VideoEncoderError
        Before any work, when ffmpeg or its libx264 cannot be used.
    """
    encoder_versions()
    return run_build(output_dir, plan(config, selection, examples_per_shard, formats), run)
