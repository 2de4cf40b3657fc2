"""ImageNet-P: PerturbImages turns each source image into one H.264 video per perturbation dataset.

Per image: decode and preprocess (``Resize(256)`` then RGB, no crop:
``transforms.preprocess_uncropped``), then one task per selected (perturbation, difficulty). The
tasks are spread over the workers. A task carries the source entry, not its pixels (a shuffle of
up to 20 decoded images per source would pass through the driver of a local run), so it reads and
decodes its source again, milliseconds against the seconds of a video. It makes its frames with
``transforms.perturb_sequence`` and ``RandomState(example_seed(release_seed, image_key,
perturbation, difficulty))``, encodes them as the reference's MP4
(:func:`pipelines.formats.video.encode_h264`: libx264, yuv444p, 1 fps, ``-tune grain`` for the noise
types, ``-crf 20`` otherwise, one thread) and decodes that MP4 back as the official evaluator does
(``--tfds-frames lossless``: keeps the frames before the encode) for the TFDS PNG frames. Each result is an
:class:`OutputRecord` for ``WriteRelease``: the file ``ImageNet-P/<dataset>/<wnid>/<stem>.mp4``
(``<dataset>`` = ``<perturbation>[_<difficulty>]``, ``<stem>`` = the source file name without its
extension), the TFDS example of config ``<dataset>`` of ``imagenet_p`` (the PNG frames) and its
manifest metadata.

Other editions (``ImageNetPConfig.edition``): the source becomes what that edition's sequences
receive (:func:`transforms.views_p.edition_input`), the tree is the edition's
(``Tiny-ImageNet-P/<dataset>/<wnid>/<stem>.mp4``, ...), and the cifar edition emits each sequence
as a stacked row of ``CIFAR-10-P/<dataset>.npy`` (:mod:`pipelines.beam.npy_sequences`) with lossless
TFDS frames; the inputs are the editions' own (:mod:`pipelines.inputs.families`).

Two source images whose videos would share a path (``x.JPEG`` and ``x.png`` in one class folder)
cannot both be built: the first by key is, the other is reported in ``failures.jsonl``.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import NamedTuple, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from schemas.edition import DEFAULT_EDITION, Edition
from schemas.editions import get_edition
from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS, select_perturbations
from schemas.imagenet_p_editions import NPY, PEdition
from schemas.release import P_BENCHMARK, Release, ReleaseTfds
from schemas.records import Failure, OutputRecord, SourceEntry, SourceImage
from schemas.tfds_p import imagenet_p_config, p_dataset
from transforms import example_rng, example_seed, perturb_sequence
from transforms.views_p import edition_input

from pipelines.beam.build import BuildResult, SourceSelection, run_build
from pipelines.beam.imagenet_c import source_record
from pipelines.beam.progress import ProgressCounter
from pipelines.beam.write_release import OutputsFn
from pipelines.inputs.families import Input, open_input
from pipelines.inputs.listing import inspect_image, read_entry
from pipelines.formats.webdataset import check_formats
from pipelines.formats.video import (FRAME_RATE, PIXEL_FORMAT, PNG_COMPRESS_LEVEL, PRESETS, decode_video, encode_frames_lossless,
                    encode_h264, encoder_settings, encoder_versions,
                    x264_cpu_capabilities)

BENCHMARK = P_BENCHMARK
"""``release.json``'s ``benchmark`` of an ImageNet-P release (its ``edition`` is the catalogue name)."""

DIFFICULTIES = tuple(sorted({d for p in PERTURBATIONS.values() for d in p.difficulties}))
"""Every difficulty of some perturbation: (1, 2, 3); 2 and 3 exist for the noise types only."""

DEFAULT_PRESET = "veryslow"
"""x264 preset of a release unless ``--preset`` says otherwise: the reference's."""

ENCODER_THREADS = 1
"""x264 threads per encode: the MP4 bytes depend on the count, so it is fixed."""

TFDS_FRAMES = MappingProxyType({
    "decoded": "the frames cv2.VideoCapture decodes from the release's own MP4, BGR -> RGB, no resize "
               "(what the official evaluator scores)",
    "lossless": "the frames before the H.264 encode (what the reference wrote as PNGs)",
})
"""Choices of what the TFDS ``video`` feature holds (``--tfds-frames``), with their meaning."""

DEFAULT_EXAMPLES_PER_SHARD = 32
"""Examples per TFRecord shard on average: 31 PNG frames are about 3 MB, so shards of about 100 MB."""


@dataclass(frozen=True)
class ImageNetPConfig:
    """What an ImageNet-P build produces for each image.

    Attributes
    ----------
    perturbations : tuple of str
        Perturbation names, in table order (default: all 14).
    difficulties : tuple of int
        Difficulties kept, a subset of 1..3 (default: all). The noise types have 1, 2 and 3;
        the other perturbations only 1.
    preset : str
        x264 preset (:data:`pipelines.formats.video.PRESETS`); the reference's ``'veryslow'`` by default.
    simd : bool
        True (default): x264's SIMD code in cpu-independent mode; False (``--no-simd``): x264's
        plain C code, 2-3x slower. The MP4 bytes are the same either way, on every CPU.
    seed : int
        Release seed of the per-example seeds (>= 0).
    tfds_frames : str
        What the TFDS ``video`` feature holds: ``'decoded'`` (default), the frames OpenCV decodes
        from the release's own MP4 (what the benchmark scores), or ``'lossless'``, the frames
        before the H.264 encode. Either way each frame is stored as a PNG.
    edition : Edition
        The edition (default: the 224 edition; a catalogue name of :data:`schemas.editions.EDITIONS`
        is looked up once, here): ``imagenet``, ``inception``, ``tinyimagenet``, ``imagenet64``
        (MP4 trees) or ``cifar`` (CIFAR-10-P ``.npy`` files).
    """

    perturbations: tuple = tuple(PERTURBATIONS)
    difficulties: tuple = DIFFICULTIES
    preset: str = DEFAULT_PRESET
    simd: bool = True
    seed: int = 0
    tfds_frames: str = "decoded"
    edition: Edition = DEFAULT_EDITION

    def __post_init__(self):
        if not isinstance(self.edition, Edition):
            object.__setattr__(self, "edition", get_edition(self.edition))

    @classmethod
    def select(cls, perturbations: Optional[Sequence[str]] = None, difficulties: Optional[Sequence[int]] = None,
               preset: str = DEFAULT_PRESET, simd: bool = True, seed: int = 0,
               tfds_frames: str = "decoded", edition: Union[str, Edition] = DEFAULT_EDITION) -> "ImageNetPConfig":
        """Validate a selection and put it in table order.

        Raises
        ------
        ValueError
            On an unknown perturbation or preset, a difficulty outside 1..3, a selection that
            names no dataset (e.g. ``rotate`` at difficulty 2), a non-bool ``simd``, a negative seed
            an unknown ``tfds_frames`` or an edition without ImageNet-P.
        """
        chosen = DIFFICULTIES if difficulties is None else tuple(sorted(set(difficulties)))
        if not chosen or any(d not in DIFFICULTIES for d in chosen):
            raise ValueError(f"difficulties must be a non-empty subset of {list(DIFFICULTIES)}, got {difficulties}")
        if preset not in PRESETS:
            raise ValueError(f"unknown x264 preset {preset!r}; valid presets: {', '.join(PRESETS)}")
        if not isinstance(simd, bool):
            raise ValueError(f"simd must be True or False, got {simd!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        if tfds_frames not in TFDS_FRAMES:
            raise ValueError(f"tfds_frames must be one of {', '.join(TFDS_FRAMES)}, got {tfds_frames!r}")
        edition = get_edition(edition)
        if edition.p is None:
            raise ValueError(f"edition {edition.name} has no ImageNet-P")
        config = cls(select_perturbations(perturbations), chosen, preset, simd, seed, tfds_frames, edition)
        if not config.pairs:
            noise = [name for name, p in PERTURBATIONS.items() if len(p.difficulties) > 1]
            raise ValueError(f"no dataset selected: difficulties {list(chosen)} of {', '.join(config.perturbations)}; "
                             f"only {', '.join(noise)} have difficulties 2 and 3")
        return config

    @property
    def table(self) -> PEdition:
        """The P facts of the edition: schedules, frame counts, views, layout."""
        return self.edition.p

    @property
    def tree(self) -> str:
        """Top folder of the release's official layout (``ImageNet-P``, ``Tiny-ImageNet-P``, ``CIFAR-10-P``, ...)."""
        return self.table.trees[0]

    @property
    def pairs(self) -> tuple:
        """``(perturbation, difficulty)`` of every dataset built, in release order."""
        return tuple((name, d) for name in self.perturbations for d in self.difficulties
                     if d in self.table.perturbations[name].difficulties)

    @property
    def groups(self) -> tuple:
        """TFDS config (and folder) names, e.g. ``('gaussian_noise', 'gaussian_noise_2', ...)``."""
        return tuple(imagenet_p_config(name, d) for name, d in self.pairs)

    def to_json(self) -> dict:
        return {"perturbations": list(self.perturbations), "difficulties": list(self.difficulties),
                "preset": self.preset, "simd": self.simd, "seed": self.seed, "tfds_frames": self.tfds_frames,
                "edition": self.edition.name}


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


@dataclass(frozen=True)
class VideoTask:
    """One video to make as the fan-out carries it: the source entry and the dataset, no pixels.

    Attributes
    ----------
    entry : SourceEntry
        Key, class and place of the source image (read again by the task).
    perturbation : str
        A name of :data:`schemas.imagenet_p.PERTURBATIONS`.
    difficulty : int
        One of that perturbation's difficulties.
    """

    entry: SourceEntry
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


def make_video(task: SequenceTask, config: ImageNetPConfig, tree: Optional[str] = None) -> Union[OutputRecord, Failure]:
    """The output of one task; a sequence or an encode that raises becomes a Failure.

    Parameters
    ----------
    task : SequenceTask
        The image and the dataset.
    config : ImageNetPConfig
        Release seed, x264 preset, SIMD setting, edition.
    tree : str, optional
        Top folder of the release (default ``config.tree``; ``CIFAR-100-P`` for a CIFAR-100 input).

    Returns
    -------
    OutputRecord or Failure
        MP4 editions: the video file with its TFDS example; ``.npy`` editions (cifar): a stacked
        row (the raw uint8 frames) of ``<tree>/<dataset>.npy`` with its example.
    """
    tree = tree or config.tree
    entry, name, difficulty = task.entry, task.perturbation, task.difficulty
    group = imagenet_p_config(name, difficulty)
    npy = config.table.output == NPY
    # a row of an .npy is named by its image key, so that key order is row order
    key = f"{group}/{os.path.splitext(entry.key)[0]}" if npy else f"{group}/{video_name(entry)}"
    try:
        frames = perturb_sequence(task.image, name, example_rng(config.seed, entry.key, name, difficulty),
                                  difficulty, edition=config.edition)
    except Exception as err:  # one bad output must not stop the build: it is reported
        return Failure(key, entry.source, "perturb", f"{type(err).__name__}: {err}")
    metadata = {"image_key": entry.key, "wnid": entry.wnid, "label": entry.label, "perturbation": name,
                "difficulty": difficulty, "seed": example_seed(config.seed, entry.key, name, difficulty),
                "frames": len(frames), "frames_sha256": hashlib.sha256(frames.tobytes()).hexdigest()}
    example = {"label": entry.label, "file_name": entry.file_name}
    if npy:  # lossless arrays: one row of <tree>/<group>.npy (WriteSequenceArrays)
        return OutputRecord(key=key, group=group, path=f"{tree}/{group}.npy", data=frames.tobytes(),
                            example={"video": encode_frames_lossless(frames), **example}, metadata=metadata,
                            stacked=True)
    try:
        mp4 = encode_h264(frames, noise=is_noise(name), preset=config.preset, threads=ENCODER_THREADS,
                          simd=config.simd)
        pngs = encode_frames_lossless(decode_video(mp4) if config.tfds_frames == "decoded" else frames)
    except Exception as err:
        return Failure(key, entry.source, "encode", f"{type(err).__name__}: {err}")
    return OutputRecord(key=key, group=group, path=f"{tree}/{key}", data=mp4,
                        example={"video": pngs, **example}, metadata=metadata)


def one_image_per_video_name(name: str, images) -> list:
    """``(video name, SourceImages)`` -> the first image by key, and a Failure for each other one."""
    first, *others = sorted(images, key=lambda image: image.entry.key)
    return [first] + [beam.pvalue.TaggedOutput("failures", Failure(
        image.entry.key, image.entry.source, "list",
        f"duplicate video name: {image.entry.key} and {first.entry.key} would both make <dataset>/"
        f"{video_name(first.entry)}; {first.entry.key} is used")) for image in others]


class _DecodeImagesFn(beam.DoFn):
    """SourceImage -> one VideoTask per selected dataset once the image decodes; tagged ``sources``
    (one record per decoded image) and ``failures`` (images that do not decode)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str]):
        self._config, self._progress_dir = config, progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)

    def process(self, image: SourceImage):
        try:
            info = inspect_image(image.data)
            edition_input(image.data, self._config.table)  # raises here for a bad image; each task decodes it again
        except ValueError as err:
            self._progress.add(failures=1)
            yield beam.pvalue.TaggedOutput("failures", Failure(
                image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        for name, difficulty in self._config.pairs:
            yield VideoTask(image.entry, name, difficulty)

    def finish_bundle(self):
        self._progress.flush()  # this stage ends long before the workers are torn down

    def teardown(self):
        self._progress.flush()


class _MakeVideosFn(OutputsFn):
    """VideoTask -> OutputRecord (the source is read and preprocessed again); tagged ``failures``
    and ``environments`` (this worker's library and encoder versions, as JSON). Setup fails when
    ffmpeg or its libx264 is unusable."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str], tree: Optional[str] = None):
        super().__init__(progress_dir)
        self._config, self._tree = config, tree

    def environment(self) -> dict[str, str]:
        # the CPU level x264 runs at on this worker (release.json's encoder record is the driver's)
        return {**super().environment(), **encoder_versions(),
                "x264_cpu_capabilities": x264_cpu_capabilities(self._config.simd)}

    def process(self, task: VideoTask):
        yield from self.report_environment()
        image = edition_input(read_entry(task.entry), self._config.table)
        output = make_video(SequenceTask(task.entry, image, task.perturbation, task.difficulty), self._config,
                            self._tree)
        yield self.fail(output) if isinstance(output, Failure) else output


class PerturbImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`); ``tree``:
    the release's top folder (default: the edition's first)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str] = None, tree: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir, self._tree = config, progress_dir, tree

    def expand(self, images):
        unique = (images
                  | "KeyByVideoName" >> beam.Map(lambda image: (video_name(image.entry).casefold(), image))
                  | "GroupByVideoName" >> beam.GroupByKey()
                  | "OneImagePerVideoName" >> beam.FlatMapTuple(one_image_per_video_name).with_outputs(
                      "failures", main="images"))
        decoded = unique.images | "Decode" >> beam.ParDo(_DecodeImagesFn(self._config, self._progress_dir)).with_outputs(
            "sources", "failures", main="tasks")
        videos = (decoded.tasks
                  | "SpreadSequences" >> beam.Reshuffle()
                  | "PerturbAndEncode" >> beam.ParDo(_MakeVideosFn(self._config, self._progress_dir, self._tree)).with_outputs(
                      "failures", "environments", main="records"))
        failures = (unique.failures, decoded.failures, videos.failures) | "PerturbFailures" >> beam.Flatten()
        return EditionOutputs(videos.records, decoded.sources, failures, videos.environments)


def p_tree_of(config: ImageNetPConfig, family: Optional[str] = None) -> str:
    """The release's top folder: the tree of the input's source family (``CIFAR-100-P`` for a
    CIFAR-100 input; :meth:`schemas.imagenet_p_editions.PEdition.tree_of`)."""
    return config.table.tree_of(family)


def imagenet_p_document(config: ImageNetPConfig, family: Optional[str] = None,
                        class_names: Optional[Sequence[str]] = None) -> Release:
    """Edition fields of ``release.json``: the edition's catalogue name, the benchmark (``p``), the
    config, the edition's facts, the encoder settings (MP4 editions) or the array layout (``.npy``),
    and the TFDS configs."""
    dataset = p_dataset(config.edition, family, class_names)
    tree = p_tree_of(config, family)
    document = Release(edition=config.edition.name, benchmark=BENCHMARK, tree=tree, config=config.to_json(),
                       p_edition=config.table.to_json(), source_family=family or "imagenet",
                       tfds=ReleaseTfds.of(dataset, config.groups))
    if config.table.output == NPY:
        return replace(document, arrays={"path": f"{tree}/<perturbation>[_<d>].npy", "dtype": "uint8",
                                         "shape": "(N, T, H, W, 3), rows in input order (manifest order)",
                                         "tfds_frames": "the rows of the .npy (lossless)"})
    return replace(document, video={
        "container": "mp4", "codec": "libx264", "pixel_format": PIXEL_FORMAT,
        "frame_rate": FRAME_RATE, "threads": ENCODER_THREADS,
        "rate_control": {name: " ".join(PERTURBATIONS[name].rate_control) for name in config.perturbations},
        "encoder": encoder_settings(config.simd, config.preset, ENCODER_THREADS),
        "tfds_frames": {"source": config.tfds_frames, "meaning": TFDS_FRAMES[config.tfds_frames],
                        "format": "png", "compress_level": PNG_COMPRESS_LEVEL}})


def p_build_options(config: ImageNetPConfig, source: Input) -> dict:
    """``run_build`` options of an ImageNet-P build of any edition from its opened input
    (:func:`pipelines.inputs.families.open_input`): tree, TFDS dataset, ``release.json`` fields and,
    for ``.npy`` editions, the array sink."""
    from pipelines.beam.npy_sequences import WriteSequenceArrays

    family, class_names = source.family, source.class_names
    tree = p_tree_of(config, family)

    def add_sinks(outputs, index, output_dir):
        size = config.table.frame_size
        shapes = {f"{tree}/{name}.npy": (config.table.perturbations[p].frames, size, size, 3)
                  for name, (p, _) in zip(config.groups, config.pairs)}
        _ = outputs.records | "WriteSequenceArrays" >> WriteSequenceArrays(
            output_dir, [e.key for e in index.entries], shapes)

    return {"document": imagenet_p_document(config, family, class_names),
            "dataset": p_dataset(config.edition, family, class_names),
            "make_transform": lambda progress_dir: PerturbImages(config, progress_dir, tree),
            "source": source, "related": lambda entry: video_name(entry).casefold(),
            "add_sinks": add_sinks if config.table.output == NPY else None}  # a sink makes a resumed build redo all


def build_imagenet_p(output_dir: str, selection: SourceSelection = SourceSelection(),
                     config: ImageNetPConfig = ImageNetPConfig(),
                     examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD, **options) -> BuildResult:
    """Build an ImageNet-P release of ``config.edition`` (see :func:`pipelines.beam.build.run_build` for
    ``options``). Every edition reads its own inputs as ImageNet-C's editions do
    (:func:`pipelines.inputs.families.open_input`: ImageNet val for imagenet,
    inception and imagenet64, the Tiny-ImageNet folder, the CIFAR-10/100 test pickles).

    Raises
    ------
    pipelines.formats.video.VideoEncoderError
        Before any work, when ffmpeg or its libx264 cannot be used.
    """
    check_formats(options.get("formats", ()), config.edition.name, config.table.output == NPY)
    encoder_versions()
    return run_build(output_dir, selection, outputs_per_image=len(config.pairs), examples_per_shard=examples_per_shard,
                     **p_build_options(config, open_input(config.edition, selection.input)), **options)
