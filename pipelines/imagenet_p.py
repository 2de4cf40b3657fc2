"""ImageNet-P: PerturbImages turns each source image into one H.264 video per perturbation dataset.

Per image: decode and preprocess (``Resize(256)`` then RGB, no crop:
``transforms.preprocess_uncropped``), then one task per selected (perturbation, difficulty). The
tasks are spread over the workers. A task carries the source entry, not its pixels (a shuffle of
up to 20 decoded images per source would pass through the driver of a local run), so it reads and
decodes its source again, milliseconds against the seconds of a video. It makes its frames with
``transforms.perturb_sequence`` and ``RandomState(example_seed(release_seed, image_key,
perturbation, difficulty))``, encodes them as the reference's MP4
(:func:`pipelines.video.encode_h264`: libx264, yuv444p, 1 fps, ``-tune grain`` for the noise
types, ``-crf 20`` otherwise, one thread) and as lossless PNG frames. Each result is an
:class:`OutputRecord` for ``WriteRelease``: the file ``imagenet-p/<dataset>/<wnid>/<stem>.mp4``
(``<dataset>`` = ``<perturbation>[_<difficulty>]``, ``<stem>`` = the source file name without its
extension), the TFDS example of config ``<dataset>`` of ``imagenet_p`` (the PNG frames) and its
manifest metadata.

Two source images whose videos would share a path (``x.JPEG`` and ``x.png`` in one class folder)
cannot both be built: the first by key is, the other is reported in ``failures.jsonl``.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS, select_perturbations
from schemas.release import P_TREE
from schemas.records import Failure, OutputRecord, SourceEntry, SourceImage
from schemas.tfds_p import IMAGENET_P, imagenet_p_config
from transforms import example_rng, example_seed, perturb_sequence, preprocess_uncropped

from .build import BuildResult, SourceSelection, run_build
from .imagenet_c import source_record
from .progress import ProgressCounter
from .release import OutputsFn
from .sources import inspect_image, read_entry
from .video import (FRAME_RATE, PIXEL_FORMAT, PNG_COMPRESS_LEVEL, PRESETS, encode_frames_lossless,
                    encode_h264, encoder_versions)

EDITION = P_TREE
"""Name of the edition and of its folder tree in a release."""

DIFFICULTIES = tuple(sorted({d for p in PERTURBATIONS.values() for d in p.difficulties}))
"""Every difficulty of some perturbation: (1, 2, 3); 2 and 3 exist for the noise types only."""

DEFAULT_PRESET = "veryslow"
"""x264 preset of a release unless ``--preset`` says otherwise: the reference's."""

ENCODER_THREADS = 1
"""x264 threads per encode: the MP4 bytes depend on the count, so it is fixed."""

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
        x264 preset (:data:`pipelines.video.PRESETS`); the reference's ``'veryslow'`` by default.
    simd : bool
        False: x264's plain C code, so the MP4 bytes do not depend on the CPU. True: 2-4x faster
        encodes whose bytes may differ between CPU generations.
    seed : int
        Release seed of the per-example seeds (>= 0).
    """

    perturbations: tuple = tuple(PERTURBATIONS)
    difficulties: tuple = DIFFICULTIES
    preset: str = DEFAULT_PRESET
    simd: bool = False
    seed: int = 0

    @classmethod
    def select(cls, perturbations: Optional[Sequence[str]] = None, difficulties: Optional[Sequence[int]] = None,
               preset: str = DEFAULT_PRESET, simd: bool = False, seed: int = 0) -> "ImageNetPConfig":
        """Validate a selection and put it in table order.

        Raises
        ------
        ValueError
            On an unknown perturbation or preset, a difficulty outside 1..3, a selection that
            names no dataset (e.g. ``rotate`` at difficulty 2), a non-bool ``simd`` or a negative seed.
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
        config = cls(select_perturbations(perturbations), chosen, preset, simd, seed)
        if not config.pairs:
            noise = [name for name, p in PERTURBATIONS.items() if len(p.difficulties) > 1]
            raise ValueError(f"no dataset selected: difficulties {list(chosen)} of {', '.join(config.perturbations)}; "
                             f"only {', '.join(noise)} have difficulties 2 and 3")
        return config

    @property
    def pairs(self) -> tuple:
        """``(perturbation, difficulty)`` of every dataset built, in release order."""
        return tuple((name, d) for name in self.perturbations for d in self.difficulties
                     if d in PERTURBATIONS[name].difficulties)

    @property
    def groups(self) -> tuple:
        """TFDS config (and folder) names, e.g. ``('gaussian_noise', 'gaussian_noise_2', ...)``."""
        return tuple(imagenet_p_config(name, d) for name, d in self.pairs)

    def to_json(self) -> dict:
        return {"perturbations": list(self.perturbations), "difficulties": list(self.difficulties),
                "preset": self.preset, "simd": self.simd, "seed": self.seed}


@dataclass(frozen=True)
class SequenceTask:
    """One video to make: the source entry, its uncropped image, and the dataset it goes to.

    Attributes
    ----------
    entry : SourceEntry
        Key, class and place of the source image.
    image : numpy.ndarray
        ``transforms.preprocess_uncropped`` of its bytes: uint8 (H, W, 3), short side 256.
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


def make_video(task: SequenceTask, config: ImageNetPConfig) -> Union[OutputRecord, Failure]:
    """The output of one task; a sequence or an encode that raises becomes a Failure.

    Parameters
    ----------
    task : SequenceTask
        The image and the dataset.
    config : ImageNetPConfig
        Release seed, x264 preset and SIMD setting.
    """
    entry, name, difficulty = task.entry, task.perturbation, task.difficulty
    group = imagenet_p_config(name, difficulty)
    key = f"{group}/{video_name(entry)}"
    try:
        frames = perturb_sequence(task.image, name, example_rng(config.seed, entry.key, name, difficulty),
                                  difficulty)
    except Exception as err:  # one bad output must not stop the build: it is reported
        return Failure(key, entry.source, "perturb", f"{type(err).__name__}: {err}")
    try:
        mp4 = encode_h264(frames, noise=is_noise(name), preset=config.preset, threads=ENCODER_THREADS,
                          simd=config.simd)
        pngs = encode_frames_lossless(frames)
    except Exception as err:
        return Failure(key, entry.source, "encode", f"{type(err).__name__}: {err}")
    return OutputRecord(
        key=key, group=group, path=f"{EDITION}/{key}", data=mp4,
        example={"video": pngs, "label": entry.label, "file_name": entry.file_name},
        metadata={"image_key": entry.key, "wnid": entry.wnid, "label": entry.label, "perturbation": name,
                  "difficulty": difficulty, "seed": example_seed(config.seed, entry.key, name, difficulty),
                  "frames": len(frames), "frames_sha256": hashlib.sha256(frames.tobytes()).hexdigest()})


def one_image_per_video_name(name: str, images) -> list:
    """``(video name, SourceImages)`` -> the first image by key, and a Failure for each other one."""
    first, *others = sorted(images, key=lambda image: image.entry.key)
    return [first] + [beam.pvalue.TaggedOutput("failures", Failure(
        image.entry.key, image.entry.source, "list",
        f"duplicate video name: {image.entry.key} and {first.entry.key} would both make <dataset>/"
        f"{video_name(first.entry)}; {first.entry.key} is used")) for image in others]


class DecodeImagesFn(beam.DoFn):
    """SourceImage -> one VideoTask per selected dataset once the image decodes; tagged ``sources``
    (one record per decoded image) and ``failures`` (images that do not decode)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str]):
        self._config, self._progress_dir = config, progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)

    def process(self, image: SourceImage):
        try:
            info = inspect_image(image.data)
            preprocess_uncropped(image.data)  # raises here for a bad image; each task decodes it again
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


class MakeVideosFn(OutputsFn):
    """VideoTask -> OutputRecord (the source is read and preprocessed again); tagged ``failures``
    and ``environments`` (this worker's library and encoder versions, as JSON). Setup fails when
    ffmpeg or its libx264 is unusable."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._config = config

    def environment(self) -> dict[str, str]:
        return {**super().environment(), **encoder_versions()}

    def process(self, task: VideoTask):
        yield from self.report_environment()
        image = preprocess_uncropped(read_entry(task.entry))
        output = make_video(SequenceTask(task.entry, image, task.perturbation, task.difficulty), self._config)
        yield self.fail(output) if isinstance(output, Failure) else output


class PerturbImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`)."""

    def __init__(self, config: ImageNetPConfig, progress_dir: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir = config, progress_dir

    def expand(self, images):
        unique = (images
                  | "KeyByVideoName" >> beam.Map(lambda image: (video_name(image.entry).casefold(), image))
                  | "GroupByVideoName" >> beam.GroupByKey()
                  | "OneImagePerVideoName" >> beam.FlatMapTuple(one_image_per_video_name).with_outputs(
                      "failures", main="images"))
        decoded = unique.images | "Decode" >> beam.ParDo(DecodeImagesFn(self._config, self._progress_dir)).with_outputs(
            "sources", "failures", main="tasks")
        videos = (decoded.tasks
                  | "SpreadSequences" >> beam.Reshuffle()
                  | "PerturbAndEncode" >> beam.ParDo(MakeVideosFn(self._config, self._progress_dir)).with_outputs(
                      "failures", "environments", main="records"))
        failures = (unique.failures, decoded.failures, videos.failures) | "PerturbFailures" >> beam.Flatten()
        return EditionOutputs(videos.records, decoded.sources, failures, videos.environments)


def imagenet_p_document(config: ImageNetPConfig) -> dict:
    """Edition fields of ``release.json``: the config, the encoder settings and the TFDS configs."""
    dataset = IMAGENET_P
    return {"edition": EDITION, "tree": EDITION, "config": config.to_json(),
            "video": {"container": "mp4", "codec": "libx264", "pixel_format": PIXEL_FORMAT,
                      "frame_rate": FRAME_RATE, "threads": ENCODER_THREADS,
                      "rate_control": {name: " ".join(PERTURBATIONS[name].rate_control)
                                       for name in config.perturbations},
                      "tfds_frames": {"format": "png", "compress_level": PNG_COMPRESS_LEVEL}},
            "tfds": {"data_dir": "tfds", "name": dataset.name, "version": dataset.version,
                     "split": dataset.split, "configs": list(config.groups)}}


def build_imagenet_p(output_dir: str, selection: SourceSelection = SourceSelection(),
                     config: ImageNetPConfig = ImageNetPConfig(),
                     examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD, **options) -> BuildResult:
    """Build an ImageNet-P release (see :func:`pipelines.build.run_build` for ``options``).

    Raises
    ------
    pipelines.video.VideoEncoderError
        Before any work, when ffmpeg or its libx264 cannot be used.
    """
    encoder_versions()
    return run_build(output_dir, selection, imagenet_p_document(config), IMAGENET_P, len(config.pairs),
                     lambda progress_dir: PerturbImages(config, progress_dir), examples_per_shard=examples_per_shard,
                     related=lambda entry: video_name(entry).casefold(), **options)
