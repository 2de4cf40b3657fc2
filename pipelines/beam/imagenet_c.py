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
from typing import Iterator, Optional, Sequence, Union

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.conditions import Condition
from schemas.configs import ImageNetCConfig
from schemas.edition import JPEG, NPY, Layout
from schemas.records import Failure, OutputRecord, SourceEntry, SourceImage
from schemas.release import C_BENCHMARK, CLEAN, DEFAULT_FORMATS, CSettings, Release, ReleaseTfds
from schemas.tfds import TfdsDataset
from schemas.tfds_c import c_dataset
from transforms import corrupt, encode_jpeg, encode_png, example_seed, make_rng, preprocess
from transforms.preprocess import BadInput

from pipelines.beam.build import BuildPlan, BuildResult, SourceSelection, run_build
from pipelines.beam.npy_release import StackedArrays
from pipelines.beam.progress import IMAGE_WORK_COUNTER, NAMESPACE, WorkClock
from pipelines.beam.runner import RunOptions
from pipelines.beam.write_release import OutputsFn
from pipelines.formats.release_formats import check_build_formats
from pipelines.formats.release_sink import BuildKind
from pipelines.inputs.families import open_input
from pipelines.inputs.listing import inspect_image, source_note

__all__ = ["BENCHMARK", "ImageNetCConfig", "condition_array", "corrupted_outputs", "c_example", "array_sha256",
           "source_record", "CorruptImages", "imagenet_c_dataset", "imagenet_c_document", "plan", "build_imagenet_c"]

BENCHMARK = C_BENCHMARK
"""``release.json``'s ``benchmark`` of an ImageNet-C release (its ``edition`` is the catalogue name)."""


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
                      clock: Optional[WorkClock] = None) -> Iterator[Union[OutputRecord, Failure]]:
    """Every output of one preprocessed image (one per row of ``config.conditions``);
    a corruption that raises :class:`transforms.BadInput` becomes a Failure, any other exception
    stops the build (a bug, not bad data).

    Parameters
    ----------
    image : SourceImage
        The source (for its key, class and file name).
    crop : numpy.ndarray
        ``transforms.preprocess(..., edition=config.edition)`` of its bytes: uint8 (N, N, 3).
    config : ImageNetCConfig
        The edition, the selection, the release seed, the random mode and the source family (which
        selects the release layout).
    clock : WorkClock, optional
        Counts the CPU time of each output's corruption and encoding (not of its record).
    """
    clock = clock or WorkClock()
    entry = image.entry
    edition = config.edition
    layout = config.layout
    for condition in config.conditions:
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
        except BadInput as err:  # this input cannot make this output: reported; any other error is a bug
            yield Failure(key, entry.source, "corrupt", f"{type(err).__name__}: {err}")
            continue
        yield OutputRecord(
            key=key, group=CLEAN if condition.is_clean else layout.tfds.config(name, severity), path=path,
            data=data, example=c_example(encoded, entry, layout),
            metadata={"image_key": entry.key, "wnid": entry.wnid, "label": entry.label,
                      **condition.manifest_fields(), "seed": seed,
                      "array_sha256": array_sha256(array)},
            stacked=edition.c.encoding != JPEG)


def c_example(encoded: bytes, entry: SourceEntry, layout: Layout) -> dict:
    """The values of an output's TFDS example: those its dataset declares (``file_name`` only where
    the layout's TFDS names carry it: not CIFAR's)."""
    example = {"image": encoded, "label": entry.label}
    if layout.tfds.file_name_feature:
        example["file_name"] = entry.file_name
    return example


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

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._config = config

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
        except BadInput as err:  # this image cannot be built: reported; any other error is a bug
            yield self.fail(Failure(image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        for output in corrupted_outputs(image, crop, self._config, clock):
            yield self.fail(output) if isinstance(output, Failure) else output
        self._image_work.inc(clock.ns // 1000)


class CorruptImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`)."""

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir = config, progress_dir

    def expand(self, images):
        return images | "Corrupt" >> beam.ParDo(
            _CorruptImagesFn(self._config, self._progress_dir)).with_outputs(
            "sources", "failures", "environments", main="records")


def imagenet_c_dataset(config: ImageNetCConfig, class_names: Optional[Sequence[str]] = None) -> TfdsDataset:
    """The TFDS dataset of a build (see :func:`schemas.tfds_c.c_dataset`)."""
    return c_dataset(config.edition, config.family, class_names)


def imagenet_c_document(config: ImageNetCConfig, class_names: Optional[Sequence[str]] = None) -> Release:
    """Edition fields of ``release.json``: the edition's catalogue name, the benchmark (``c``), the
    config, the tree and where TFDS finds the configs."""
    edition, family = config.edition, config.family
    layout = edition.c.layout(family)
    dataset = imagenet_c_dataset(config, class_names)
    return Release(
        edition=edition.name, benchmark=BENCHMARK, tree=layout.tree,
        config=CSettings.from_json({**config.to_json(),
                                    "jpeg_quality": edition.c.jpeg_quality if edition.c.encoding == JPEG else None}),
        encoding=edition.c.encoding, image_size=edition.image_size,
        tfds=ReleaseTfds.of(dataset, config.groups),
        labels=f"{layout.tree}/{layout.labels_file}" if layout.labels_file else None,
        source_family=family or edition.c.default_family)


def plan(config: ImageNetCConfig, source: SourceSelection = SourceSelection(),
         examples_per_shard: Optional[int] = None, formats: Sequence[str] = DEFAULT_FORMATS) -> BuildPlan:
    """The build of an ImageNet-C release of ``config.edition`` from ``source``.

    The edition opens the input (:func:`pipelines.inputs.families.open_input`: ImageNet val, the
    Tiny-ImageNet folder or a CIFAR pickle; the bundled sample of that kind without ``--input``),
    whose source family joins the config and decides the layout (``CIFAR-10-C`` or ``CIFAR-100-C``),
    the TFDS dataset and ``release.json``'s edition fields. ``.npy`` editions add the stacked-array
    sink. ``examples_per_shard`` defaults to the edition's. The graph is the same for all.
    """
    edition = config.edition
    check_build_formats(formats, BuildKind(C_BENCHMARK, edition.name, edition.c.encoding == NPY))
    opened = open_input(edition, source.input)
    config = config.with_family(opened.family)
    layout = config.layout

    arrays = StackedArrays((edition.image_size, edition.image_size, 3), tuple(config.severities),
                           f"{layout.tree}/{layout.labels_file}")

    return BuildPlan(
        selection=source, source=opened, document=imagenet_c_document(config, opened.class_names),
        dataset=imagenet_c_dataset(config, opened.class_names), outputs_per_image=len(config.conditions),
        transform=lambda progress_dir: CorruptImages(config, progress_dir),
        sinks=(arrays,) if edition.c.encoding == NPY else (),
        examples_per_shard=edition.c.examples_per_shard if examples_per_shard is None else examples_per_shard,
        formats=tuple(formats))


def build_imagenet_c(output_dir: str, selection: SourceSelection = SourceSelection(),
                     config: ImageNetCConfig = ImageNetCConfig(), run: RunOptions = RunOptions(),
                     examples_per_shard: Optional[int] = None, formats: Sequence[str] = DEFAULT_FORMATS) -> BuildResult:
    """Build an ImageNet-C release of ``config.edition``: :func:`run_build` of :func:`plan`."""
    return run_build(output_dir, plan(config, selection, examples_per_shard, formats), run)
