"""VCR (visually-continuous corruption robustness): the continuous parameter ranges, as data.

Each corruption of VCR's sampler draws every parameter independently and uniformly from its own
1000-point ``linspace(low, high)`` grid, or an integer uniformly from ``low..high``
(``docs/reference/algorithms.md``, "VCR corruptions"). The keyword names are those of the ImageNet-C
functions (:mod:`schemas.imagenet_c`), which apply them; ``fixed`` holds keywords VCR does not
draw. The bin count, spline and human-file settings of the analysis live here too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

from schemas.records import ManifestRecord
from schemas.selection import select_names

__all__ = ["GRID_POINTS", "PARAMETER_MODES", "OPERATORS", "DV_RESOLUTION", "VIF_VARIANT", "Parameter", "VcrCorruption",
           "VCR_CORRUPTIONS", "select_vcr_corruptions", "BINS", "SMOOTHING", "SPLINE_DEGREE", "CURVE_POINTS",
           "EMPTY_BIN_MODES", "KNOT_MODES", "LABEL_SPACES", "DV_RESOLUTIONS", "FORMULAS", "VCR_TREE", "CLEAN",
           "vcr_key", "clean_key", "png_path", "VcrExample"]

GRID_POINTS = 1000
"""Points of every parameter grid (VCR's ``TRANSFORMATION_LEVEL``)."""

PARAMETER_MODES = ("grid", "uniform")
"""``grid``: a uniform draw among the 1000 grid values (VCR's distribution, the default);
``uniform``: ``U(low, high)`` for grid parameters (an optional continuous mode of ours)."""

OPERATORS = ("imagenet-c", "vcr-code")
"""``imagenet-c``: the ImageNet-C operators over VCR's ranges (default); ``vcr-code``: VCR's own
variants where they differ (glass blur displacing only the top-left 32x32 pixels, frost resized to
the image without a crop and in BGR); motion blur has no ``vcr-code`` variant (docs/guides/vcr.md)."""

DV_RESOLUTION = "224crop"
"""Default of where Delta v is measured: on the 224x224 crop the model sees. ``native``: on the
decoded image at its own size, as VCR's code (the model then sees Resize(256) + CenterCrop(224) of
the corrupted native image)."""

VIF_VARIANT = "vcr-steerable-v1"
"""Name of the VIF of :mod:`transforms.vif` (algorithms.md, "VIF"), as human files must declare it."""


@dataclass(frozen=True)
class Parameter:
    """One drawn parameter.

    Attributes
    ----------
    name : str
        Keyword of the ImageNet-C function.
    low, high : float
        Range, both ends included.
    integer : bool
        True: ``randint(low, high + 1)``; False: a value of ``linspace(low, high, GRID_POINTS)``.
    """

    name: str
    low: float
    high: float
    integer: bool = False


@dataclass(frozen=True)
class VcrCorruption:
    """One VCR corruption: the ImageNet-C function it applies and how its parameters are drawn."""

    name: str
    parameters: tuple
    fixed: Mapping = field(default_factory=lambda: MappingProxyType({}))
    code_variant: bool = True  # False: the VCR code's own operator is not reproduced


def _grid(name, low, high):
    return Parameter(name, low, high)


_TABLE = (
    VcrCorruption("gaussian_noise", (_grid("sigma", 0.0001, 1.0),)),
    VcrCorruption("shot_noise", (_grid("scale", 1.0, 5.0),)),
    VcrCorruption("impulse_noise", (_grid("amount", 0.0, 0.5),)),
    VcrCorruption("defocus_blur", (_grid("radius", 0.0, 10.0), _grid("alias_blur", 0.0, 1.0))),
    VcrCorruption("glass_blur", (_grid("sigma", 0.0, 5.0), Parameter("max_delta", 1, 9, integer=True)),
                  MappingProxyType({"iterations": 1})),
    # VCR's sampler uses albumentations' MotionBlur (unseeded, unpinned); these are the ranges of
    # its ImageMagick variant motion_blur_v2, the operator ImageNet-C uses.
    VcrCorruption("motion_blur", (_grid("radius", 10.0, 40.0), _grid("sigma", 10.0, 30.0)), code_variant=False),
    VcrCorruption("frost", (_grid("image_weight", 0.01, 1.0), _grid("frost_weight", 0.01, 1.0))),
    VcrCorruption("contrast", (_grid("factor", 0.0001, 0.3),)),
    VcrCorruption("brightness", (_grid("delta", 0.0, 1.0),)),
    VcrCorruption("jpeg_compression", (Parameter("quality", 1, 49, integer=True),)),
    VcrCorruption("gaussian_blur", (_grid("sigma", 0.00001, 5.0),)),
)

#: name -> VcrCorruption, in the order of the table above.
VCR_CORRUPTIONS: Mapping[str, VcrCorruption] = MappingProxyType({c.name: c for c in _TABLE})


def select_vcr_corruptions(names: Optional[Iterable[str]] = None) -> tuple[str, ...]:
    """The VCR corruptions to build, in table order; all 11 when ``names`` is None."""
    return select_names(VCR_CORRUPTIONS, names, "VCR corruption")


# --- analysis (algorithms.md, "VCR analysis") ---------------------------------------------------

BINS = 20
"""Delta v bins of the analysis: bin i holds i/n < Delta v < (i+1)/n (strict)."""
SMOOTHING = 0.04
"""``UnivariateSpline`` smoothing factor ``s``."""
SPLINE_DEGREE = 3
CURVE_POINTS = 10_000
"""Points of the evaluation grid ``j / 10000``, j = 0..9999 (it stops at 0.9999)."""
EMPTY_BIN_MODES = ("zero", "drop")
"""``zero``: an empty bin counts as 0 (VCR's code, the default); ``drop``: it is left out of the fit."""
KNOT_MODES = ("left", "centre")
"""Where bin i sits on the Delta v axis: ``left`` i/n (VCR's code, the default) or ``centre`` (i + 0.5)/n."""
LABEL_SPACES = ("imagenet1000", "imagenet16")
DV_RESOLUTIONS = ("native", "224crop")

#: The formulas written beside HMRI and MRSI (our reading of the paper's definitions).
FORMULAS = MappingProxyType({
    "A_m": "integral of f_m over [0, 0.9999] (trapezoid on 10,000 points)",
    "A_h": "integral of f_h",
    "A_m-h": "integral of max(f_m - f_h, 0)",
    "A_h-m": "integral of max(f_h - f_m, 0)",
    "HMRI": "(A_h - A_h-m) / A_h = integral of min(f_m, f_h) / A_h",
    "MRSI": "A_m-h / A_m",
    "f": "f(t_j) = min over j' <= j of clip(S(t_j'), 0, 1), S the UnivariateSpline of the bin values",
})


# --- release layout and TFDS ---------------------------------------------------------------------

VCR_TREE = "vcr"
"""Folder of a VCR release's PNG tree: ``vcr/<corruption>/<draw>/<wnid>/<stem>.png`` and the clean
crops ``vcr/clean/<wnid>/<stem>.png`` they were measured against."""
CLEAN = "clean"
"""Group (TFDS config, manifest part, tree folder) of the clean crops."""


def vcr_key(corruption: str, draw: int, image_key: str) -> str:
    """Output key of one example: ``<corruption>/<draw>/<wnid>/<file>``."""
    return f"{corruption}/{draw}/{image_key}"


def clean_key(image_key: str) -> str:
    """Output key of a clean crop: ``clean/<wnid>/<file>``."""
    return f"{CLEAN}/{image_key}"


def png_path(key: str) -> str:
    """Release path of an output key: ``vcr/<key without its extension>.png``."""
    stem = key.rsplit(".", 1)[0] if "." in key.rsplit("/", 1)[-1] else key
    return f"{VCR_TREE}/{stem}.png"


@dataclass(frozen=True)
class VcrExample:
    """One VCR manifest row as evaluation reads it: a corrupted example or a clean crop.

    Attributes
    ----------
    key : str
        Output key (:func:`vcr_key`, or :func:`clean_key` for a clean crop).
    path : str
        The PNG relative to the release directory (:func:`png_path`).
    image_key : str
        Key of the source image it was made from.
    corruption : str
        The corruption's name, or :data:`CLEAN`.
    label : int
        The class index.
    delta_v : float
        Its measured ``1 - VIF`` (0 for a clean crop).
    """

    key: str
    path: str
    image_key: str
    corruption: str
    label: int
    delta_v: float

    @classmethod
    def from_record(cls, record: ManifestRecord) -> "VcrExample":
        """The example of a manifest record of a VCR release."""
        fields = record.fields
        return cls(key=record.key, path=record.path, image_key=fields["image_key"], corruption=fields["corruption"],
                   label=fields["label"], delta_v=fields["delta_v"])
