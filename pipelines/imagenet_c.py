"""ImageNet-C: CorruptImages fans each source image out over corruptions x severities.

Per image: decode and preprocess once (RGB, Resize(256), CenterCrop(224)), then for every selected
(corruption, severity) apply ``transforms.corrupt`` with ``example_rng(release_seed, image_key,
corruption, severity, mode)`` (``RandomState(example_seed(...))`` in the default reference mode,
the faster PCG64 stream in mode ``'fast'``) and encode with ``transforms.encode_jpeg`` (Pillow q85,
optimize). Each result is an :class:`OutputRecord` for ``WriteRelease``: the file
``imagenet-c/<corruption>/<severity>/<wnid>/<file>``, the TFDS example of config
``<corruption>_<severity>`` of ``imagenet2012_corrupted``, and its manifest metadata.

The fan-out is the table :func:`schemas.conditions.fan_out`: by default its first row is the
clean config, the preprocessed crop itself encoded the same way (``imagenet-c/clean/<wnid>/<file>``,
TFDS config ``clean``), so that a model's clean error is measured on exactly the images that were
corrupted.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from schemas.conditions import Condition, fan_out
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES, select_corruptions
from schemas.records import Failure, OutputRecord, SourceImage
from schemas.release import C_TREE
from schemas.tfds import IMAGENET2012_CORRUPTED
from transforms import RNG_MODES, corrupt, encode_jpeg, example_rng, example_seed, preprocess
from transforms.preprocess import JPEG_QUALITY

from .release import OutputsFn
from .sources import inspect_image, source_note

EDITION = C_TREE
"""Name of the edition and of its folder tree in a release."""


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
    clean : bool
        Also write the clean config (``--no-clean`` leaves it out).
    """

    corruptions: tuple = tuple(CORRUPTIONS)
    severities: tuple = SEVERITIES
    seed: int = 0
    rng: str = "reference"
    clean: bool = True

    @classmethod
    def select(cls, corruptions: Optional[Sequence[str]] = None, severities: Optional[Sequence[int]] = None,
               seed: int = 0, rng: str = "reference", clean: bool = True) -> "ImageNetCConfig":
        """Validate a selection and put it in table order.

        Raises
        ------
        ValueError
            On an unknown corruption, a severity outside 1..5, a negative seed, an unknown
            random mode or a non-bool ``clean``.
        """
        chosen = SEVERITIES if severities is None else tuple(sorted(set(severities)))
        if not chosen or any(s not in SEVERITIES for s in chosen):
            raise ValueError(f"severities must be a non-empty subset of {list(SEVERITIES)}, got {severities}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        if rng not in RNG_MODES:
            raise ValueError(f"rng mode must be one of {', '.join(RNG_MODES)}; got {rng!r}")
        if not isinstance(clean, bool):
            raise ValueError(f"clean must be True or False, got {clean!r}")
        return cls(select_corruptions(corruptions), chosen, seed, rng, clean)

    @property
    def pairs(self) -> tuple:
        """``(corruption, severity)`` pairs in release order."""
        return tuple((c, s) for c in self.corruptions for s in self.severities)

    @property
    def conditions(self) -> tuple:
        """Every output config of an image, in release order (:func:`schemas.conditions.fan_out`)."""
        return fan_out(self.corruptions, self.severities, self.clean)

    @property
    def groups(self) -> tuple:
        """TFDS config names, e.g. ``('clean', 'gaussian_noise_1', ...)``."""
        return tuple(c.config for c in self.conditions)

    def to_json(self) -> dict:
        return {"corruptions": list(self.corruptions), "severities": list(self.severities), "seed": self.seed,
                "rng": self.rng, "clean": self.clean}


def condition_array(crop: np.ndarray, condition: Condition, key: str, config: ImageNetCConfig
                    ) -> tuple[np.ndarray, Optional[int]]:
    """The image of one fan-out row before encoding, and its per-example seed (None: no draw).

    The clean row is the crop itself; a corruption row is ``transforms.corrupt`` of it with the
    example's own random stream.
    """
    if condition.is_clean:
        return crop, None
    name, severity = condition.corruption, condition.severity
    rng = example_rng(config.seed, key, name, severity, config.rng)
    return corrupt(crop, name, severity, rng), example_seed(config.seed, key, name, severity)


def corrupted_outputs(image: SourceImage, crop: np.ndarray, config: ImageNetCConfig
                      ) -> Iterator[Union[OutputRecord, Failure]]:
    """Every output of one preprocessed image (one per row of ``config.conditions``); a
    corruption that raises becomes a Failure.

    Parameters
    ----------
    image : SourceImage
        The source (for its key, class and file name).
    crop : numpy.ndarray
        ``transforms.preprocess`` of its bytes: uint8 (224, 224, 3).
    config : ImageNetCConfig
        The selection, the release seed and the random mode.
    """
    entry = image.entry
    for condition in config.conditions:
        key = f"{condition.folder}/{entry.key}"
        try:
            array, seed = condition_array(crop, condition, entry.key, config)
            jpeg = encode_jpeg(array)
        except Exception as err:  # one bad output must not stop the build: it is reported
            yield Failure(key, entry.source, "corrupt", f"{type(err).__name__}: {err}")
            continue
        yield OutputRecord(
            key=key, group=condition.config, path=f"{EDITION}/{key}", data=jpeg,
            example={"image": jpeg, "label": entry.label, "file_name": entry.file_name},
            metadata={"image_key": entry.key, "wnid": entry.wnid, "label": entry.label,
                      **condition.manifest_fields(), "seed": seed,
                      "array_sha256": hashlib.sha256(array.tobytes()).hexdigest()})


def source_record(image: SourceImage, info: dict) -> dict:
    """The ``sources.jsonl`` record of an image that was decoded."""
    entry = image.entry
    return {"key": entry.key, "source": entry.source, "wnid": entry.wnid, "label": entry.label, "bytes": len(image.data),
            "sha256": hashlib.sha256(image.data).hexdigest(), **info,
            "note": source_note(info, entry.file_name)}


class CorruptImagesFn(OutputsFn):
    """SourceImage -> OutputRecords; tagged ``sources`` (one record per decoded image),
    ``failures`` and ``environments`` (this worker's library versions, as JSON)."""

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str]):
        super().__init__(progress_dir)
        self._config = config

    def process(self, image: SourceImage):
        yield from self.report_environment()
        try:
            info = inspect_image(image.data)
            crop = preprocess(image.data)
        except ValueError as err:
            yield self.fail(Failure(image.entry.key, image.entry.source, "decode", str(err)))
            return
        yield beam.pvalue.TaggedOutput("sources", source_record(image, info))
        for output in corrupted_outputs(image, crop, self._config):
            yield self.fail(output) if isinstance(output, Failure) else output


class CorruptImages(beam.PTransform):
    """``images`` (SourceImage) -> ``records``, ``sources``, ``failures``, ``environments``.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`)."""

    def __init__(self, config: ImageNetCConfig, progress_dir: Optional[str] = None):
        super().__init__()
        self._config, self._progress_dir = config, progress_dir

    def expand(self, images):
        return images | "Corrupt" >> beam.ParDo(CorruptImagesFn(self._config, self._progress_dir)).with_outputs(
            "sources", "failures", "environments", main="records")


def imagenet_c_document(config: ImageNetCConfig) -> dict:
    """Edition fields of ``release.json``: the config and where TFDS finds the configs."""
    dataset = IMAGENET2012_CORRUPTED
    return {"edition": EDITION, "tree": EDITION, "config": {**config.to_json(), "jpeg_quality": JPEG_QUALITY},
            "tfds": {"data_dir": "tfds", "name": dataset.name, "version": dataset.version,
                     "split": dataset.split, "configs": list(config.groups)}}
