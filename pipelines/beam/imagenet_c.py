"""ImageNet-C: CorruptImages fans each source image out over corruptions x severities.

Every edition goes through the same graph, driven by its :class:`schemas.edition.Edition`
(``config.edition``): the preprocessing, the severity tables, the output encoding and where the
outputs go. Described here for the default edition (224):

Per image: decode and preprocess once (RGB, Resize(256), CenterCrop(224)), then for every selected
(corruption, severity) apply ``transforms.corrupt`` with ``example_rng(release_seed, image_key,
corruption, severity, mode)`` (``RandomState(example_seed(...))`` in the default reference mode,
the faster PCG64 stream in mode ``'fast'``) and encode with ``transforms.encode_jpeg`` (Pillow q85,
optimize). Each result is an :class:`OutputRecord` for ``WriteRelease``: the file
``ImageNet-C/<corruption>/<severity>/<wnid>/<file>``, the TFDS example of config
``<corruption>_<severity>`` of ``imagenet2012_corrupted``, and its manifest metadata. Editions
that save ``.npy`` (CIFAR) emit the raw uint8 array as a stacked row instead of a JPEG file
(:mod:`pipelines.beam.npy_release` writes the stacks) and a PNG in the TFDS example.

The fan-out is the table :func:`schemas.conditions.fan_out`: by default its first row is the
clean config, the preprocessed crop itself encoded the same way (``ImageNet-C/clean/<wnid>/<file>``,
TFDS config ``clean``), so that a model's clean error is measured on exactly the images that were
corrupted. A layout carries it when it has a ``clean_template`` (:class:`schemas.edition.Layout`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.conditions import Condition, fan_out
from schemas.edition import DEFAULT_EDITION, JPEG, Edition, Layout
from schemas.editions import get_edition
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES, select_corruptions
from schemas.records import Failure, OutputRecord, SourceImage
from schemas.release import C_BENCHMARK, CLEAN, Release, ReleaseTfds
from schemas.tfds import TfdsDataset
from schemas.tfds_c import c_dataset
from transforms import RNG_MODES, corrupt, encode_jpeg, encode_png, example_seed, make_rng, preprocess

from pipelines.beam.progress import IMAGE_WORK_COUNTER, NAMESPACE, WorkClock
from pipelines.beam.write_release import OutputsFn
from pipelines.inputs.listing import inspect_image, source_note

BENCHMARK = C_BENCHMARK
"""``release.json``'s ``benchmark`` of an ImageNet-C release (its ``edition`` is the catalogue name)."""


@dataclass(frozen=True)
class ImageNetCConfig:
    """What an ImageNet-C build produces for each image.

    Attributes
    ----------
    corruptions : tuple of str
        Corruption names, in table order (default: all 19).
    severities : tuple of int
        Severities 1..5 (default: all).
    seed : int
        Release seed of the per-example seeds (>= 0).
    rng : str
        Random mode of the per-example streams, one of :data:`transforms.RNG_MODES`:
        ``'reference'`` (the reference's legacy ``RandomState``) or ``'fast'``.
    edition : Edition
        The edition (default: the 224 edition); a catalogue name of :data:`schemas.editions.EDITIONS`
        is looked up once, here.
    clean : bool
        Also write the clean config where the edition's layout has one (``--no-clean`` leaves it out).
    """

    corruptions: tuple = tuple(CORRUPTIONS)
    severities: tuple = SEVERITIES
    seed: int = 0
    rng: str = "reference"
    edition: Edition = DEFAULT_EDITION
    clean: bool = True

    def __post_init__(self):
        if not isinstance(self.edition, Edition):
            object.__setattr__(self, "edition", get_edition(self.edition))

    @classmethod
    def select(cls, corruptions: Optional[Sequence[str]] = None, severities: Optional[Sequence[int]] = None,
               seed: int = 0, rng: str = "reference", edition: Union[str, Edition] = DEFAULT_EDITION,
               clean: bool = True) -> "ImageNetCConfig":
        """Validate a selection and put it in table order.

        Raises
        ------
        ValueError
            On an unknown corruption, a severity outside 1..5, a negative seed, an unknown
            random mode, an unknown edition or a non-bool ``clean``.
        """
        edition = get_edition(edition)
        chosen = SEVERITIES if severities is None else tuple(sorted(set(severities)))
        if not chosen or any(s not in SEVERITIES for s in chosen):
            raise ValueError(f"severities must be a non-empty subset of {list(SEVERITIES)}, got {severities}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        if rng not in RNG_MODES:
            raise ValueError(f"rng mode must be one of {', '.join(RNG_MODES)}; got {rng!r}")
        if not isinstance(clean, bool):
            raise ValueError(f"clean must be True or False, got {clean!r}")
        return cls(select_corruptions(corruptions), chosen, seed, rng, edition, clean)

    @property
    def pairs(self) -> tuple:
        """``(corruption, severity)`` pairs in release order."""
        return tuple((c, s) for c in self.corruptions for s in self.severities)

    def layout(self, family: Optional[str] = None) -> Layout:
        """The release layout of this edition for source ``family`` (default: the edition's first)."""
        return self.edition.c.layout(family)

    def conditions_of(self, family: Optional[str] = None) -> tuple:
        """Every output config of an image, in release order (:func:`schemas.conditions.fan_out`):
        the clean row first when asked for and the layout has one, then the pairs."""
        clean = self.clean and self.layout(family).clean_template is not None
        return fan_out(self.corruptions, self.severities, clean)

    @property
    def conditions(self) -> tuple:
        """:meth:`conditions_of` the edition's default source family."""
        return self.conditions_of()

    def groups_of(self, family: Optional[str] = None) -> tuple:
        """TFDS config names, e.g. ``('clean', 'gaussian_noise_1', ...)`` (``frosted_glass_blur_1`` for CIFAR)."""
        names = self.layout(family).tfds
        return tuple(CLEAN if c.is_clean else names.config(c.corruption, c.severity) for c in self.conditions_of(family))

    @property
    def groups(self) -> tuple:
        """TFDS config names of the edition's default source family."""
        return self.groups_of()

    def to_json(self) -> dict:
        return {"corruptions": list(self.corruptions), "severities": list(self.severities), "seed": self.seed,
                "rng": self.rng, "edition": self.edition.name, "clean": bool(self.conditions and self.conditions[0].is_clean)}


def condition_array(crop: np.ndarray, condition: Condition, key: str, config: ImageNetCConfig
                    ) -> tuple[np.ndarray, Optional[int]]:
    """The image of one fan-out row before encoding, and its per-example seed (None: no draw).

    The clean row is the crop itself; a corruption row is ``transforms.corrupt`` of it with the
    example's own random stream, as the edition makes it.
    """
    if condition.is_clean:
        return crop, None
    name, severity = condition.corruption, condition.severity
    seed = example_seed(config.seed, key, name, severity)  # example_rng's own seed, derived once
    return corrupt(crop, name, severity, make_rng(seed, config.rng), edition=config.edition), seed


def corrupted_outputs(image: SourceImage, crop: np.ndarray, config: ImageNetCConfig,
                      family: Optional[str] = None, clock: Optional[WorkClock] = None
                      ) -> Iterator[Union[OutputRecord, Failure]]:
    """Every output of one preprocessed image (one per row of ``config.conditions_of(family)``);
    a corruption that raises becomes a Failure.

    Parameters
    ----------
    image : SourceImage
        The source (for its key, class and file name).
    crop : numpy.ndarray
        ``transforms.preprocess(..., edition=config.edition)`` of its bytes: uint8 (N, N, 3).
    config : ImageNetCConfig
        The edition, the selection, the release seed and the random mode.
    family : str, optional
        Source family of the input (selects the release layout; default: the edition's first).
    clock : WorkClock, optional
        Counts the CPU time of each output's corruption and encoding (not of its record).
    """
    clock = clock or WorkClock()
    entry = image.entry
    edition = config.edition
    layout = edition.c.layout(family)
    for condition in config.conditions_of(family):
        name, severity = condition.corruption, condition.severity
        key = f"{condition.folder}/{entry.key}"
        template = layout.clean_template if condition.is_clean else layout.path_template
        path = f"{layout.tree}/" + template.format(
            corruption=name, severity=severity, wnid=entry.wnid, file_name=entry.file_name)
        try:
            with clock:
                array, seed = condition_array(crop, condition, entry.key, config)
                if edition.c.encoding == JPEG:
                    data = encoded = encode_jpeg(array, edition.c.jpeg_quality)
                else:  # a raw row of <tree>/<corruption>.npy, a lossless PNG in the TFDS example
                    data, encoded = array.tobytes(), encode_png(array)
        except Exception as err:  # one bad output must not stop the build: it is reported
            yield Failure(key, entry.source, "corrupt", f"{type(err).__name__}: {err}")
            continue
        yield OutputRecord(
            key=key, group=CLEAN if condition.is_clean else layout.tfds.config(name, severity), path=path,
            data=data, example={"image": encoded, "label": entry.label, "file_name": entry.file_name},
            metadata={"image_key": entry.key, "wnid": entry.wnid, "label": entry.label,
                      **condition.manifest_fields(), "seed": seed,
                      "array_sha256": array_sha256(array)},
            stacked=edition.c.encoding != JPEG)


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of an array's bytes in C order (``array.tobytes()``), hashed from its buffer
    without copying it."""
    return hashlib.sha256(memoryview(np.ascontiguousarray(array)).cast("B")).hexdigest()


def source_record(image: SourceImage, info: dict) -> dict:
    """The ``sources.jsonl`` record of an image that was decoded."""
    entry = image.entry
    return {"key": entry.key, "source": entry.source, "wnid": entry.wnid, "label": entry.label, "bytes": len(image.data),
            "sha256": hashlib.sha256(image.data).hexdigest(), **info,
            "note": source_note(info, entry.file_name)}


class _CorruptImagesFn(OutputsFn):
    """SourceImage -> OutputRecords; tagged ``sources`` (one record per decoded image),
    ``failures`` and ``environments`` (this worker's library versions, as JSON). Counts each
    image's own work in the counter :data:`pipelines.beam.progress.IMAGE_WORK_COUNTER`."""

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str], family: Optional[str] = None):
        super().__init__(progress_dir)
        self._config, self._family = config, family

    def setup(self):
        super().setup()
        self._image_work = Metrics.counter(NAMESPACE, IMAGE_WORK_COUNTER)

    def process(self, image: SourceImage):
        yield from self.report_environment()
        clock = WorkClock()
        try:
            info = inspect_image(image.data)
            with clock:
                crop = preprocess(image.data, edition=self._config.edition)
        except ValueError as err:
            yield self.fail(Failure(image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        for output in corrupted_outputs(image, crop, self._config, self._family, clock):
            yield self.fail(output) if isinstance(output, Failure) else output
        self._image_work.inc(clock.ns // 1000)


class CorruptImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`);
    ``family``: the input's source family (default: the edition's first)."""

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str] = None, family: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir, self._family = config, progress_dir, family

    def expand(self, images):
        return images | "Corrupt" >> beam.ParDo(
            _CorruptImagesFn(self._config, self._progress_dir, self._family)).with_outputs(
            "sources", "failures", "environments", main="records")


def imagenet_c_dataset(config: ImageNetCConfig, family: Optional[str] = None,
                       class_names: Optional[Sequence[str]] = None) -> TfdsDataset:
    """The TFDS dataset of a build (see :func:`schemas.tfds_c.c_dataset`)."""
    return c_dataset(config.edition, family, class_names)


def imagenet_c_document(config: ImageNetCConfig, family: Optional[str] = None,
                        class_names: Optional[Sequence[str]] = None) -> Release:
    """Edition fields of ``release.json``: the edition's catalogue name, the benchmark (``c``), the
    config, the tree and where TFDS finds the configs."""
    edition = config.edition
    layout = edition.c.layout(family)
    dataset = imagenet_c_dataset(config, family, class_names)
    return Release(
        edition=edition.name, benchmark=BENCHMARK, tree=layout.tree,
        config={**config.to_json(), "jpeg_quality": edition.c.jpeg_quality if edition.c.encoding == JPEG else None},
        encoding=edition.c.encoding, image_size=edition.image_size,
        tfds=ReleaseTfds.of(dataset, config.groups_of(family)),
        labels=f"{layout.tree}/{layout.labels_file}" if layout.labels_file else None,
        source_family=family or edition.c.default_family)
