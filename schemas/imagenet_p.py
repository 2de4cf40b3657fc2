"""ImageNet-P (224 edition): the perturbation list and every frame schedule, as data.

This module is the one place where ImageNet-P parameters live. The sequence functions in
:mod:`transforms.perturbations` take these values as keyword arguments; they hold no schedule
constants themselves.

The values are those of ``hendrycks/robustness`` @ 8190fe3, ``make_imagenet_p.py`` (see
``docs/reference/algorithms.md``, "Schedules"). A per-frame value is a :class:`Ramp` of the
frame index, evaluated with the reference's own arithmetic so that every float is bit-identical.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

from schemas.selection import select_names

__all__ = ["CATEGORIES", "SETS", "GRAIN_RATE_CONTROL", "CRF20_RATE_CONTROL", "PRESETS", "DEFAULT_PRESET", "TFDS_FRAMES",
           "Ramp", "Perturbation", "PERTURBATIONS", "TEST_PERTURBATIONS", "VALIDATION_PERTURBATIONS", "DIFFICULTIES",
           "perturbation_names_text", "select_perturbations"]

#: Release categories in order; they are also the names of the official release tars.
#: Which test perturbation sits in which tar is inferred from the official archive's naming.
CATEGORIES = ("noise", "blur", "weather", "digital", "validation")

#: The two sets of the benchmark, in the order of the reference script's comments.
SETS = ("test", "validation")

#: x264 rate-control options of the reference encoder (algorithms.md): noise types keep the default
#: CRF 23 with the film-grain tune, every other perturbation uses CRF 20.
GRAIN_RATE_CONTROL = ("-tune", "grain")
CRF20_RATE_CONTROL = ("-crf", "20")

PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
           "veryslow", "placebo")
"""x264 presets, fastest first; the reference used ``veryslow``."""

DEFAULT_PRESET = "veryslow"
"""x264 preset of a release unless ``--preset`` says otherwise: the reference's."""

TFDS_FRAMES = MappingProxyType({
    "decoded": "the frames cv2.VideoCapture decodes from the release's own MP4, BGR -> RGB, no resize "
               "(what the official evaluator scores)",
    "lossless": "the frames before the H.264 encode (what the reference wrote as PNGs)",
})
"""Choices of what the TFDS ``video`` feature holds (``--tfds-frames``), with their meaning."""


@dataclass(frozen=True)
class Ramp:
    """A per-frame value linear in the frame index: ``(start + step * i) / divisor``.

    The operations run in that order (multiply, add, divide), which reproduces the reference's
    expressions bit for bit, e.g. ``(i * 2.5 + 40) / 100.`` for scale or ``0.25 + 0.035 * i``
    for the Gaussian-blur sigma (``divisor=1`` divides exactly).
    """

    start: float
    step: float
    divisor: float = 1

    def at(self, frame: int) -> float:
        """The value at frame index ``frame`` (0-based)."""
        return (self.start + self.step * frame) / self.divisor

    def values(self, frames: int) -> tuple:
        """The values at frames 0..frames-1."""
        return tuple(self.at(i) for i in range(frames))


@dataclass(frozen=True)
class Perturbation:
    """One ImageNet-P perturbation: name, release tar, subset, frame count, per-difficulty parameters.

    ``category`` is one of :data:`CATEGORIES`, ``subset`` one of :data:`SETS`, and
    ``rate_control`` the x264 options of its reference MP4 encode.

    ``difficulty_params[d - 1]`` holds the keyword arguments of the sequence function at
    difficulty ``d``; a :class:`Ramp` among them is expanded to one value per frame by
    :meth:`params`.
    """

    name: str
    category: str
    subset: str
    frames: int
    rate_control: tuple
    difficulty_params: tuple

    @property
    def difficulties(self) -> tuple:
        """The valid difficulties: (1, 2, 3) for the noise types, (1,) for the others."""
        return tuple(range(1, len(self.difficulty_params) + 1))

    def dataset_name(self, difficulty: int) -> str:
        """The reference's folder / config name: ``name`` at difficulty 1, else ``name_<d>``."""
        return self.name if difficulty == 1 else f"{self.name}_{difficulty}"

    def params(self, difficulty: int) -> Mapping:
        """Keyword arguments of the sequence function at ``difficulty`` (1-based).

        Each :class:`Ramp` becomes a tuple of ``frames`` per-frame values; a perturbation
        without a per-frame schedule (the noises, spatter) gets the count itself as ``frames``.
        """
        row = self.difficulty_params[difficulty - 1]
        params = {key: value.values(self.frames) if isinstance(value, Ramp) else value
                  for key, value in row.items()}
        if not any(isinstance(value, Ramp) for value in row.values()):
            params["frames"] = self.frames
        return MappingProxyType(params)


def _levels(**columns) -> tuple:
    """Turn column lists (one value per difficulty) into read-only keyword mappings."""
    lengths = {len(v) for v in columns.values()}
    assert len(lengths) == 1, columns
    return tuple(
        MappingProxyType({key: values[d] for key, values in columns.items()})
        for d in range(lengths.pop())
    )


def _single(**params) -> tuple:
    """The one difficulty of a non-noise perturbation (difficulty is a frame stride at evaluation)."""
    return (MappingProxyType(dict(params)),)


_FRAMES = 31
_TRANSLATE_FRAMES = 41

_TABLE = (
    # --- test set ---
    Perturbation("gaussian_noise", "noise", "test", _FRAMES, GRAIN_RATE_CONTROL,
                 _levels(sigma=[0.03, 0.05, 0.08])),
    Perturbation("shot_noise", "noise", "test", _FRAMES, GRAIN_RATE_CONTROL,
                 _levels(photons=[300, 120, 60])),
    Perturbation("motion_blur", "blur", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(radius=10, sigma=3, angles=Ramp(-30 * 4, 4))),  # (i - 30) * 4 degrees
    Perturbation("zoom_blur", "blur", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(scales=Ramp(1, 0.004))),  # zoom of layer i; frame i averages layers 0..i
    Perturbation("snow", "weather", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(loc=0.05, scale=0.3, zoom=3, threshold=0.5, blur_radius=14, blur_sigma=4,
                         angles=Ramp(-150, 4), blend=0.85)),
    Perturbation("brightness", "weather", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(deltas=Ramp(-15 * 2, 2, 100.))),  # (i - 15) * 2 / 100.
    Perturbation("translate", "digital", "test", _TRANSLATE_FRAMES, CRF20_RATE_CONTROL,
                 _single(shifts=Ramp(-20, 1), resample="nearest")),  # pixels, +x = right
    Perturbation("rotate", "digital", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(angles=Ramp(-15, 1), resample="bilinear")),  # degrees, clockwise
    Perturbation("tilt", "digital", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(angles=Ramp(-15, 1))),  # degrees about both the x and the y axis
    Perturbation("scale", "digital", "test", _FRAMES, CRF20_RATE_CONTROL,
                 _single(scales=Ramp(40, 2.5, 100.), resample="bilinear")),  # (i * 2.5 + 40) / 100.
    # --- validation set ---
    Perturbation("speckle_noise", "validation", "validation", _FRAMES, GRAIN_RATE_CONTROL,
                 _levels(sigma=[0.05, 0.10, 0.15])),
    Perturbation("gaussian_blur", "validation", "validation", _FRAMES, CRF20_RATE_CONTROL,
                 _single(sigmas=Ramp(0.25, 0.035), truncate=6.0)),
    Perturbation("spatter", "validation", "validation", _FRAMES, CRF20_RATE_CONTROL,
                 _single(loc=0.65, scale=0.27, blur_sigma=3.7, threshold=0.69, intensity=0.6,
                         drip_kernel=(0.05, 0.1, 0.15, 0.7))),
    Perturbation("shear", "validation", "validation", _FRAMES, CRF20_RATE_CONTROL,
                 _single(shears=Ramp(-15, 1), resample="bilinear")),  # degrees
)

#: name -> Perturbation: the 10 test perturbations, then the 4 validation ones.
PERTURBATIONS: Mapping[str, Perturbation] = MappingProxyType({p.name: p for p in _TABLE})

#: The 10 perturbations of the ImageNet-P test set.
TEST_PERTURBATIONS = tuple(p.name for p in _TABLE if p.subset == "test")

#: The 4 perturbations of the ImageNet-P validation set.
VALIDATION_PERTURBATIONS = tuple(p.name for p in _TABLE if p.subset == "validation")

DIFFICULTIES = tuple(sorted({d for p in _TABLE for d in p.difficulties}))
"""Every difficulty of some perturbation: (1, 2, 3); 2 and 3 exist for the noise types only."""


def perturbation_names_text() -> str:
    """A human-readable list of valid names, for error messages."""
    return ", ".join(PERTURBATIONS)


def select_perturbations(names: Optional[Iterable[str]] = None) -> tuple[str, ...]:
    """The perturbations to run, in table order; all of them when ``names`` is None (see
    :func:`schemas.selection.select_names`)."""
    return select_names(PERTURBATIONS, names, "perturbation")
