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
from typing import Optional, Sequence

import apache_beam as beam
import numpy as np

from schemas.edition import DEFAULT_EDITION
from schemas.records import Failure, OutputRecord, SourceImage
from schemas.release import VCR_BENCHMARK, Release, ReleaseTfds
from schemas.tfds_vcr import VCR_DATASET, VCR_NATIVE_DATASET
from schemas.vcr import (BINS, CLEAN, DV_RESOLUTION, DV_RESOLUTIONS, OPERATORS, PARAMETER_MODES, VCR_CORRUPTIONS,
                         VCR_TREE, VIF_VARIANT, clean_key, png_path, select_vcr_corruptions, vcr_key)
from transforms import encode_png
from transforms.rng import legacy_random_state
from transforms.vcr import vcr_corrupt, vcr_image, vcr_seed
from transforms.vif import VifReference

from pipelines.beam.write_release import OutputsFn
from pipelines.release.versions import library_versions
from pipelines.inputs.listing import inspect_image

BENCHMARK = VCR_BENCHMARK


@dataclass(frozen=True)
class VcrConfig:
    """What a VCR build produces.

    Attributes
    ----------
    corruptions : tuple of str
        VCR corruption names, in table order (default: all 11 of :data:`schemas.vcr.VCR_CORRUPTIONS`).
    levels : int
        Parameter draws per image and corruption (>= 1).
    seed : int
        Release seed (>= 0).
    per_bin : int
        Examples kept per (corruption, Delta v bin); 0 keeps every draw.
    bins : int
        Delta v bins of the selection (bin ``floor(delta_v * bins)``, clipped to 0..bins-1).
    parameters : str
        ``grid`` (VCR's 1000-point grids) or ``uniform`` (:data:`schemas.vcr.PARAMETER_MODES`).
    operators : str
        ``imagenet-c`` or ``vcr-code`` (:data:`schemas.vcr.OPERATORS`).
    dv_resolution : str
        ``224crop`` (corrupt and measure the 224 crop, default) or ``native`` (the image at its own
        size, as VCR's code; :data:`schemas.vcr.DV_RESOLUTIONS`).
    """

    corruptions: tuple = tuple(VCR_CORRUPTIONS)
    levels: int = 5
    seed: int = 0
    per_bin: int = 0
    bins: int = BINS
    parameters: str = "grid"
    operators: str = "imagenet-c"
    dv_resolution: str = DV_RESOLUTION

    @classmethod
    def select(cls, corruptions: Optional[Sequence[str]] = None, levels: int = 5, seed: int = 0, per_bin: int = 0,
               bins: int = BINS, parameters: str = "grid", operators: str = "imagenet-c",
               dv_resolution: str = DV_RESOLUTION) -> "VcrConfig":
        """Validate a selection (``ValueError`` naming the valid values) and put it in table order."""
        for name, value, low in (("levels", levels, 1), ("seed", seed, 0), ("per_bin", per_bin, 0), ("bins", bins, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if parameters not in PARAMETER_MODES:
            raise ValueError(f"parameters must be one of {', '.join(PARAMETER_MODES)}; got {parameters!r}")
        if operators not in OPERATORS:
            raise ValueError(f"operators must be one of {', '.join(OPERATORS)}; got {operators!r}")
        if dv_resolution not in DV_RESOLUTIONS:
            raise ValueError(f"dv_resolution must be one of {', '.join(DV_RESOLUTIONS)}; got {dv_resolution!r}")
        chosen = select_vcr_corruptions(corruptions)
        if operators == "vcr-code":
            missing = [c for c in chosen if not VCR_CORRUPTIONS[c].code_variant]
            if missing:
                raise ValueError(f"no vcr-code operator for {', '.join(missing)}; leave it out or use "
                                 "--operators imagenet-c")
        return cls(chosen, levels, seed, per_bin, bins, parameters, operators, dv_resolution)

    @property
    def dataset(self):
        """The TFDS dataset: 224 images, or any size for ``native``."""
        return VCR_DATASET if self.dv_resolution == "224crop" else VCR_NATIVE_DATASET

    @property
    def groups(self) -> tuple:
        """TFDS configs and manifest parts: the corruptions, then ``clean``."""
        return (*self.corruptions, CLEAN)

    def to_json(self) -> dict:
        return {"corruptions": list(self.corruptions), "levels": self.levels, "seed": self.seed,
                "per_bin": self.per_bin, "bins": self.bins, "parameters": self.parameters,
                "operators": self.operators, "vif_variant": VIF_VARIANT, "dv_resolution": self.dv_resolution,
                "image_format": "png"}


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
    except ValueError as err:  # too small for the pyramid
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
            except Exception as err:  # one bad output must not stop the build: it is reported
                yield Failure(key, "", "corrupt", f"{type(err).__name__}: {err}")
                continue
            yield {"key": key, "image_key": image_key, "corruption": corruption, "draw": draw, "seed": seed,
                   "parameters": parameters, "vif": value, "delta_v": 1.0 - value,
                   "array_sha256": hashlib.sha256(array.tobytes()).hexdigest(), "rank": selection_rank(seed, key)}


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
            info = inspect_image(image.data)
            crop = vcr_image(image.data, self._config.dv_resolution)
        except ValueError as err:
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
        crop = vcr_image(image.data, self._config.dv_resolution)
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
    return Release(edition=DEFAULT_EDITION, benchmark=BENCHMARK, tree=VCR_TREE, config=config.to_json(),
                   tfds=ReleaseTfds.of(config.dataset, config.groups))


def bin_counts(manifest_rows, bins: int) -> dict:
    """``{corruption: [examples in bin 0..bins-1]}`` of manifest rows (clean rows left out)."""
    counts: dict = {}
    for row in manifest_rows:
        if row["corruption"] != CLEAN:
            counts.setdefault(row["corruption"], [0] * bins)[delta_v_bin(row["delta_v"], bins)] += 1
    return counts


def build_vcr(output_dir: str, selection=None, config: VcrConfig = VcrConfig(), **options):
    """Build a VCR release (see :func:`pipelines.beam.build.run_build` for ``selection`` and ``options``)."""
    from pipelines.beam.build import SourceSelection, run_build

    return run_build(output_dir, selection or SourceSelection(), vcr_document(config), config.dataset,
                     len(config.corruptions) * config.levels + 1,
                     lambda progress_dir: BuildVcrExamples(config, progress_dir), **options)


def read_manifest(release_dir: str) -> list:
    """Every manifest row of a local VCR release, sorted by key."""
    import json
    from pathlib import Path

    rows = []
    for part in sorted(Path(release_dir, "manifest").glob("*.jsonl")):
        rows.extend(json.loads(line) for line in part.read_text(encoding="utf-8").splitlines() if line)
    return sorted(rows, key=lambda r: r["key"])


def short_bins(release_dir: str, config: VcrConfig) -> dict:
    """``{corruption: {bin: examples}}`` of every bin holding fewer examples than ``config.per_bin``
    asked for (empty when ``per_bin`` is 0)."""
    if not config.per_bin:
        return {}
    counts = bin_counts(read_manifest(release_dir), config.bins)
    short = {}
    for corruption in config.corruptions:
        bins = {i: n for i, n in enumerate(counts.get(corruption, [0] * config.bins)) if n < config.per_bin}
        if bins:
            short[corruption] = bins
    return short
