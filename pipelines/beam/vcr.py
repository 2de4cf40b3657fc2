"""VCR: BuildVcrExamples draws continuous corruptions per image, measures Delta v, selects a test set.

The edition transform of ``imagenet-cp build-vcr`` (driven by :func:`pipelines.beam.build.run_build`,
written by :class:`pipelines.beam.write_release.WriteRelease`):

1. ``Measure``: per image, decode and preprocess once (RGB, Resize(256), CenterCrop(224); or RGB at
   the native size with ``dv_resolution='native'``, VCR's own convention); for
   every selected corruption and draw number 0..levels-1, draw the parameters and corrupt with
   ``RandomState(vcr_seed(release_seed, image_key, corruption, draw))``
   (:func:`transforms.vcr.vcr_corrupt`), then measure ``vif`` / ``delta_v`` of the uint8 result
   against the crop. Only the description of each candidate travels on, not its pixels.
2. ``SelectTestSet``: candidates grouped by (corruption, Delta v bin); each bin keeps its first
   ``per_bin`` candidates in the order of a SHA-256 rank of (seed, key) (all when ``per_bin`` is 0),
   so the choice depends on no order, worker or shard.
3. ``Render``: the selected candidates meet their source image again; each is regenerated from its
   seed (checked against the measured pixels' SHA-256) and written once as PNG, beside the clean
   crop ``vcr/clean/<wnid>/<stem>.png`` it was measured against.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Optional

import apache_beam as beam
import numpy as np

from schemas.configs import VcrConfig
from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.records import Failure, OutputRecord, SourceImage
from schemas.release import VCR_BENCHMARK, Release, ReleaseTfds, VcrSettings
from schemas.vcr import CLEAN, VCR_TREE, VcrExample, clean_key, png_path, vcr_key
from transforms import BadInput, encode_png
from transforms.rng import legacy_random_state
from transforms.vcr import vcr_corrupt, vcr_image, vcr_seed
from transforms.vif import VifReference

from pipelines.beam.build import DEFAULT_EXAMPLES_PER_SHARD, BuildPlan, BuildResult, SourceSelection, run_build
from pipelines.beam.runner import RunOptions
from pipelines.beam.write_release import OutputsFn
from pipelines.evaluation.vcr_scores import read_vcr_manifest
from pipelines.release.versions import library_versions
from pipelines.inputs.families import open_input
from pipelines.inputs.listing import inspect_image

__all__ = ["BENCHMARK", "VcrConfig", "delta_v_bin", "selection_rank", "measure_candidates", "BuildVcrExamples",
           "vcr_document", "bin_counts", "plan", "build_vcr", "short_bins"]

BENCHMARK = VCR_BENCHMARK


def delta_v_bin(value: float, bins: int) -> int:
    """Selection bin of a Delta v: ``floor(value * bins)`` clipped to 0..bins-1."""
    return min(max(int(math.floor(value * bins)), 0), bins - 1)


def selection_rank(seed: int, key: str) -> str:
    """Order of candidates inside a bin: hex SHA-256 of the example's seed and key."""
    return hashlib.sha256(f"vcr-select/v1\0{seed}\0{key}".encode("utf-8")).hexdigest()


def measure_candidates(image_key: str, crop: np.ndarray, config: VcrConfig):
    """Yield a candidate description (dict) or a :class:`Failure` for every draw of one clean image."""
    try:
        vif = VifReference(crop)  # the image's pyramid and statistics, once for all its draws
    except BadInput as err:  # too small for the pyramid; any other error is a bug
        yield Failure(image_key, "", "measure", str(err))
        return
    for corruption in config.corruptions:
        for draw in range(config.levels):
            key = vcr_key(corruption, draw, image_key)
            seed = vcr_seed(config.seed, image_key, corruption, draw)
            try:
                array, parameters = vcr_corrupt(crop, corruption, legacy_random_state(seed),
                                                mode=config.parameters, operators=config.operators)
                value = vif(array)
            except BadInput as err:  # this input cannot make this draw: reported; any other error is a bug
                yield Failure(key, "", "corrupt", f"{type(err).__name__}: {err}")
                continue
            yield {"key": key, "image_key": image_key, "corruption": corruption, "draw": draw, "seed": seed,
                   "parameters": parameters, "vif": value, "delta_v": 1.0 - value,
                   "array_sha256": hashlib.sha256(array.tobytes()).hexdigest(), "rank": selection_rank(seed, key)}


def _decoded(image: SourceImage, config: VcrConfig):
    """``(inspect_image's info, the clean crop)`` of one source image; the measure and the render
    stages decode the same way, so an image one of them refuses (``BadInput``) the other refuses too."""
    return inspect_image(image.data), vcr_image(image.data, config.dv_resolution)


class _VcrFn(OutputsFn):
    def environment(self) -> dict:
        import pyrtools

        return {**library_versions(), "pyrtools": pyrtools.__version__}


class _MeasureFn(_VcrFn):
    """SourceImage -> ``((corruption, bin), candidate)``; tagged ``sources``, ``failures``, ``environments``."""

    def __init__(self, config: VcrConfig, progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._config = config

    def process(self, image: SourceImage):
        from pipelines.beam.imagenet_c import source_record

        yield from self.report_environment()
        try:
            info, crop = _decoded(image, self._config)
        except BadInput as err:  # this image cannot be built: reported; any other error is a bug
            yield self.fail(Failure(image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        for candidate in measure_candidates(image.entry.key, crop, self._config):
            if isinstance(candidate, Failure):
                yield self.fail(Failure(candidate.key, image.entry.source, candidate.stage, candidate.reason))
            else:
                yield (candidate["corruption"], delta_v_bin(candidate["delta_v"], self._config.bins)), candidate


def _select(element, per_bin: int):
    """``((corruption, bin), [candidate])`` -> ``(image_key, candidate)`` for the kept candidates."""
    (_, index), candidates = element
    ranked = sorted(candidates, key=lambda c: (c["rank"], c["key"]))
    for candidate in ranked[:per_bin] if per_bin else ranked:
        yield candidate["image_key"], dict(candidate, bin=index)


def _record(key, group, image_entry, png, delta_v, metadata) -> OutputRecord:
    return OutputRecord(key=key, group=group, path=png_path(key), data=png,
                        example={"image": png, "label": image_entry.label, "file_name": key, "delta_v": float(delta_v)},
                        metadata={"image_key": image_entry.key, "wnid": image_entry.wnid, "label": image_entry.label,
                                  **metadata})


class _RenderFn(_VcrFn):
    """``(image_key, {'images': [SourceImage], 'selected': [candidate]})`` -> the clean crop and every
    selected example as PNG OutputRecords; a regeneration that differs becomes a Failure."""

    def __init__(self, config: VcrConfig, progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._config = config

    def process(self, element):
        _, joined = element
        images, selected = list(joined["images"]), sorted(joined["selected"], key=lambda c: c["key"])
        if not images:
            return
        image = images[0]
        entry = image.entry
        try:
            _, crop = _decoded(image, self._config)
        except BadInput:  # the measure stage listed it among the failures already
            return
        clean = clean_key(entry.key)
        yield _record(clean, CLEAN, entry, encode_png(crop), 0.0,
                      {"corruption": CLEAN, "clean_path": png_path(clean), "vif": 1.0, "delta_v": 0.0,
                       "parameters": {}, "seed": None,
                       "array_sha256": hashlib.sha256(crop.tobytes()).hexdigest()})
        for candidate in selected:
            array, parameters = vcr_corrupt(crop, candidate["corruption"], legacy_random_state(candidate["seed"]),
                                            mode=self._config.parameters, operators=self._config.operators)
            digest = hashlib.sha256(array.tobytes()).hexdigest()
            if digest != candidate["array_sha256"] or parameters != candidate["parameters"]:
                yield self.fail(Failure(candidate["key"], entry.source, "corrupt",
                                        "regenerated pixels differ from the measured ones (non-deterministic "
                                        "corruption); left out"))
                continue
            metadata = {k: candidate[k] for k in ("corruption", "draw", "seed", "parameters", "vif", "delta_v", "bin",
                                                  "array_sha256")}
            yield _record(candidate["key"], candidate["corruption"], entry, encode_png(array), candidate["delta_v"],
                          {**metadata, "clean_path": png_path(clean)})


@dataclass(frozen=True)
class _Outputs:
    records: beam.PCollection
    sources: beam.PCollection
    failures: beam.PCollection
    environments: beam.PCollection


class BuildVcrExamples(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``: measure every
    draw, select the test set per Delta v bin, render the kept examples and their clean crops."""

    def __init__(self, config: VcrConfig, progress_dir: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir = config, progress_dir

    def expand(self, images):
        config, progress = self._config, self._progress_dir
        measured = images | "Measure" >> beam.ParDo(_MeasureFn(config, progress)).with_outputs(
            "sources", "failures", "environments", main="candidates")
        selected = (measured.candidates
                    | "GroupBins" >> beam.GroupByKey()
                    | "SelectTestSet" >> beam.FlatMap(_select, config.per_bin))
        keyed = images | "KeyImages" >> beam.Map(lambda image: (image.entry.key, image))
        rendered = ({"images": keyed, "selected": selected}
                    | "JoinSources" >> beam.CoGroupByKey()
                    | "Render" >> beam.ParDo(_RenderFn(config, progress)).with_outputs(
                        "failures", "environments", main="records"))
        return _Outputs(
            records=rendered.records, sources=measured.sources,
            failures=(measured.failures, rendered.failures) | "VcrFailures" >> beam.Flatten(),
            environments=(measured.environments, rendered.environments) | "VcrEnvironments" >> beam.Flatten())


def vcr_document(config: VcrConfig) -> Release:
    """Edition fields of ``release.json``."""
    return Release(edition=DEFAULT_EDITION, benchmark=BENCHMARK, tree=VCR_TREE,
                   config=VcrSettings.from_json(config.to_json()),
                   tfds=ReleaseTfds.of(config.dataset, config.groups))


def bin_counts(examples: Iterable[VcrExample], bins: int) -> dict:
    """``{corruption: [examples in bin 0..bins-1]}`` of a release's examples (clean crops left out)."""
    counts: dict = {}
    for row in examples:
        if row.corruption != CLEAN:
            counts.setdefault(row.corruption, [0] * bins)[delta_v_bin(row.delta_v, bins)] += 1
    return counts


def plan(config: VcrConfig, source: SourceSelection = SourceSelection(),
         examples_per_shard: Optional[int] = None) -> BuildPlan:
    """The build of a VCR release from ``source`` (ImageNet val, or its bundled sample):
    ``levels`` draws per image and corruption plus the clean crop. ``examples_per_shard`` defaults
    to :data:`pipelines.beam.build.DEFAULT_EXAMPLES_PER_SHARD`."""
    return BuildPlan(
        selection=source, source=open_input(get_edition(), source.input), document=vcr_document(config),
        dataset=config.dataset, outputs_per_image=len(config.corruptions) * config.levels + 1,
        transform=lambda progress_dir: BuildVcrExamples(config, progress_dir),
        examples_per_shard=DEFAULT_EXAMPLES_PER_SHARD if examples_per_shard is None else examples_per_shard)


def build_vcr(output_dir: str, selection: SourceSelection = SourceSelection(), config: VcrConfig = VcrConfig(),
              run: RunOptions = RunOptions(), examples_per_shard: Optional[int] = None) -> BuildResult:
    """Build a VCR release: :func:`run_build` of :func:`plan`."""
    return run_build(output_dir, plan(config, selection, examples_per_shard), run)


def short_bins(release_dir: str, config: VcrConfig) -> dict:
    """``{corruption: {bin: examples}}`` of every bin holding fewer examples than ``config.per_bin``
    asked for (empty when ``per_bin`` is 0)."""
    if not config.per_bin:
        return {}
    counts = bin_counts(read_vcr_manifest(release_dir), config.bins)
    short = {}
    for corruption in config.corruptions:
        bins = {i: n for i, n in enumerate(counts.get(corruption, [0] * config.bins)) if n < config.per_bin}
        if bins:
            short[corruption] = bins
    return short
