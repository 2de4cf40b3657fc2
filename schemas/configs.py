"""What a build of each benchmark makes: :class:`ImageNetCConfig`, :class:`ImageNetPConfig`, :class:`VcrConfig`.

Plain frozen dataclasses, free of Beam: the CLI makes and checks them before ``pipelines`` is
imported, and the benchmark modules (:mod:`pipelines.beam.imagenet_c`, :mod:`pipelines.beam.imagenet_p`,
:mod:`pipelines.beam.vcr`) plan a build from them. Each ``select`` validates a selection once, where
the config is made (``ValueError`` naming the valid values), and puts it in table order.
``to_json`` is the ``config`` of ``release.json`` (the build adds its own keys to it).

The source family of the input (``imagenet``, ``tinyimagenet``, ``cifar10``, ``cifar100``) is part of
an ImageNet-C or -P config: :meth:`ImageNetCConfig.with_family` sets it once the input is opened
(None: the edition's first). It is not in ``to_json``; ``release.json`` records it as ``source_family``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence, Union

from schemas.conditions import fan_out
from schemas.edition import DEFAULT_EDITION, Edition, Layout
from schemas.editions import get_edition
from schemas.imagenet_c import CORRUPTIONS, RNG_MODES, SEVERITIES, select_corruptions
from schemas.imagenet_p import DEFAULT_PRESET, DIFFICULTIES, PERTURBATIONS, PRESETS, TFDS_FRAMES, select_perturbations
from schemas.imagenet_p_editions import PEdition
from schemas.release import CLEAN
from schemas.tfds_p import imagenet_p_config
from schemas.tfds_vcr import VCR_DATASET, VCR_NATIVE_DATASET
from schemas.vcr import (BINS, DV_RESOLUTION, DV_RESOLUTIONS, OPERATORS, PARAMETER_MODES, VCR_CORRUPTIONS,
                         VIF_VARIANT, select_vcr_corruptions)
from schemas.vcr import CLEAN as VCR_CLEAN

__all__ = ["ImageNetCConfig", "ImageNetPConfig", "VcrConfig"]


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")


def _check_family(edition: Edition, family: Optional[str]) -> None:
    if family is not None and family not in edition.sources:
        raise ValueError(f"unknown source family {family!r} for edition {edition.name}; "
                         f"valid: {', '.join(edition.sources)}")


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
        Random mode of the per-example streams, one of :data:`schemas.imagenet_c.RNG_MODES`:
        ``'reference'`` (the reference's legacy ``RandomState``) or ``'fast'``.
    edition : Edition
        The edition (default: the 224 edition); a catalogue name of :data:`schemas.editions.EDITIONS`
        is looked up once, here.
    clean : bool
        Also write the clean config where the edition's layout has one (``--no-clean`` leaves it out).
    family : str, optional
        Source family of the input: selects the release layout (``CIFAR-10-C`` or ``CIFAR-100-C``);
        None: the edition's first. Set by :meth:`with_family` once the input is opened.
    """

    corruptions: tuple = tuple(CORRUPTIONS)
    severities: tuple = SEVERITIES
    seed: int = 0
    rng: str = "reference"
    edition: Edition = DEFAULT_EDITION
    clean: bool = True
    family: Optional[str] = None

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
        _check_seed(seed)
        if rng not in RNG_MODES:
            raise ValueError(f"rng mode must be one of {', '.join(RNG_MODES)}; got {rng!r}")
        if not isinstance(clean, bool):
            raise ValueError(f"clean must be True or False, got {clean!r}")
        return cls(select_corruptions(corruptions), chosen, seed, rng, edition, clean)

    def with_family(self, family: Optional[str]) -> "ImageNetCConfig":
        """This config for an input of source ``family`` (``ValueError`` for one the edition does not read)."""
        _check_family(self.edition, family)
        return replace(self, family=family)

    @property
    def source_family(self) -> str:
        """:attr:`family`, or the edition's first where it is None."""
        return self.family or self.edition.c.default_family

    @property
    def pairs(self) -> tuple:
        """``(corruption, severity)`` pairs in release order."""
        return tuple((c, s) for c in self.corruptions for s in self.severities)

    @property
    def layout(self) -> Layout:
        """The release layout of this edition for the source family."""
        return self.edition.c.layout(self.family)

    @property
    def conditions(self) -> tuple:
        """Every output config of an image, in release order (:func:`schemas.conditions.fan_out`):
        the clean row first when asked for and the layout has one, then the pairs."""
        clean = self.clean and self.layout.clean_template is not None
        return fan_out(self.corruptions, self.severities, clean)

    @property
    def groups(self) -> tuple:
        """TFDS config names, e.g. ``('clean', 'gaussian_noise_1', ...)`` (``frosted_glass_blur_1`` for CIFAR)."""
        names = self.layout.tfds
        return tuple(CLEAN if c.is_clean else names.config(c.corruption, c.severity) for c in self.conditions)

    def to_json(self) -> dict:
        conditions = replace(self, family=None).conditions  # as the edition's first family lays it out
        return {"corruptions": list(self.corruptions), "severities": list(self.severities), "seed": self.seed,
                "rng": self.rng, "edition": self.edition.name, "clean": bool(conditions and conditions[0].is_clean)}


@dataclass(frozen=True)
class ImageNetPConfig:
    """What an ImageNet-P build produces for each image.

    Attributes
    ----------
    perturbations : tuple of str
        Perturbation names, in table order (default: all 14).
    difficulties : tuple of int
        Difficulties kept, a subset of :data:`schemas.imagenet_p.DIFFICULTIES` (default: all). The
        noise types have 1, 2 and 3; the other perturbations only 1.
    preset : str
        x264 preset (:data:`schemas.imagenet_p.PRESETS`); the reference's ``'veryslow'`` by default.
    simd : bool
        True (default): x264's SIMD code in cpu-independent mode; False (``--no-simd``): x264's
        plain C code, 2-3x slower. The MP4 bytes are the same either way, on every CPU.
    seed : int
        Release seed of the per-example seeds (>= 0).
    tfds_frames : str
        What the TFDS ``video`` feature holds (:data:`schemas.imagenet_p.TFDS_FRAMES`): ``'decoded'``
        (default), the frames OpenCV decodes from the release's own MP4 (what the benchmark scores),
        or ``'lossless'``, the frames before the H.264 encode. Either way each frame is stored as a PNG.
    edition : Edition
        The edition (default: the 224 edition; a catalogue name of :data:`schemas.editions.EDITIONS`
        is looked up once, here): ``imagenet``, ``inception``, ``tinyimagenet``, ``imagenet64``
        (MP4 trees) or ``cifar`` (CIFAR-10-P ``.npy`` files).
    family : str, optional
        Source family of the input: selects the tree (``CIFAR-100-P`` for a CIFAR-100 input); None:
        the edition's first. Set by :meth:`with_family` once the input is opened.
    """

    perturbations: tuple = tuple(PERTURBATIONS)
    difficulties: tuple = DIFFICULTIES
    preset: str = DEFAULT_PRESET
    simd: bool = True
    seed: int = 0
    tfds_frames: str = "decoded"
    edition: Edition = DEFAULT_EDITION
    family: Optional[str] = None

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
        _check_seed(seed)
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

    def with_family(self, family: Optional[str]) -> "ImageNetPConfig":
        """This config for an input of source ``family`` (``ValueError`` for one the edition does not read)."""
        _check_family(self.edition, family)
        return replace(self, family=family)

    @property
    def source_family(self) -> str:
        """:attr:`family`, or ``'imagenet'`` where it is None."""
        return self.family or "imagenet"

    @property
    def table(self) -> PEdition:
        """The P facts of the edition: schedules, frame counts, views, layout."""
        return self.edition.p

    @property
    def tree(self) -> str:
        """Top folder of the release's official layout for the source family (``ImageNet-P``,
        ``Tiny-ImageNet-P``, ``CIFAR-10-P``, ``CIFAR-100-P`` for a CIFAR-100 input, ...;
        :meth:`schemas.imagenet_p_editions.PEdition.tree_of`)."""
        return self.table.tree_of(self.family)

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
        return (*self.corruptions, VCR_CLEAN)

    def to_json(self) -> dict:
        return {"corruptions": list(self.corruptions), "levels": self.levels, "seed": self.seed,
                "per_bin": self.per_bin, "bins": self.bins, "parameters": self.parameters,
                "operators": self.operators, "vif_variant": VIF_VARIANT, "dv_resolution": self.dv_resolution,
                "image_format": "png"}
