"""ImageNet-C (224 edition): the corruption list and every severity table, as data.

This module is the one place where ImageNet-C parameters live. Transform functions take
these values as keyword arguments; they never hold severity constants themselves.

The values are those of ``hendrycks/robustness`` @ 8190fe3, ``make_imagenet_c.py``
(see ``docs/reference/algorithms.md``, "Severity tables"). Each table has one row per severity
1..5; each row is a mapping of keyword arguments for the corruption function.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

import numpy as np

from schemas.selection import select_names

__all__ = ["IMAGE_SIZE", "PLASMA_MAPSIZE", "SEVERITIES", "RNG_MODES", "CATEGORIES", "Corruption", "severity_rows",
           "zoom_factors", "CORRUPTIONS", "BENCHMARK_CORRUPTIONS", "EXTRA_CORRUPTIONS", "corruption_names_text",
           "select_corruptions"]

IMAGE_SIZE = 224
"""Side of the square crop every corruption of the 224 edition receives (pixels).

The other editions' sides and tables are in :mod:`schemas.editions`."""

PLASMA_MAPSIZE = 256
"""Side of fog's plasma fractal (pixels, a power of two >= IMAGE_SIZE); fog keeps its top-left crop."""

SEVERITIES = (1, 2, 3, 4, 5)

#: Random modes of the per-example streams (:mod:`transforms.rng`), the reference mode first:
#: ``'reference'`` (the reference's legacy ``RandomState``) or ``'fast'`` (PCG64).
RNG_MODES = ("reference", "fast")

#: Categories in release order; they are also the names of the official release tars.
CATEGORIES = ("noise", "blur", "weather", "digital", "extra")


@dataclass(frozen=True)
class Corruption:
    """One ImageNet-C corruption: its name, category and per-severity parameters."""

    name: str
    category: str
    severity_params: tuple  # 5 mappings of keyword arguments, severity 1..5

    @property
    def is_benchmark(self) -> bool:
        """True for the 15 corruptions that enter mCE, False for the 4 extras."""
        return self.category != "extra"

    def params(self, severity: int) -> Mapping:
        """Keyword arguments of the corruption function at ``severity`` (1..5)."""
        return self.severity_params[severity - 1]


def severity_rows(**columns) -> tuple:
    """Turn column lists (one value per severity) into 5 read-only keyword mappings."""
    lengths = {len(v) for v in columns.values()}
    assert lengths == {5}, columns
    return tuple(
        MappingProxyType({key: values[i] for key, values in columns.items()})
        for i in range(5)
    )


def zoom_factors(start, stop, step) -> tuple:
    """``np.arange(start, stop, step)`` as floats: its float error keeps the end point in several
    lists (12 factors at 224 severity 1; 7 and 12 at 64/32 severities 1-2), so build them with it."""
    return tuple(float(z) for z in np.arange(start, stop, step))


_rows, _zoom_factors = severity_rows, zoom_factors


_ELASTIC_BASE = 244  # sic: the reference scales by 244, not 224 (the author's comment: 224 was meant)

_TABLE = (
    # --- noise ---
    Corruption("gaussian_noise", "noise", _rows(sigma=[0.08, 0.12, 0.18, 0.26, 0.38])),
    Corruption("shot_noise", "noise", _rows(scale=[60, 25, 12, 5, 3])),
    Corruption("impulse_noise", "noise", _rows(amount=[0.03, 0.06, 0.09, 0.17, 0.27])),
    # --- blur ---
    Corruption("defocus_blur", "blur", _rows(
        radius=[3, 4, 6, 8, 10], alias_blur=[0.1, 0.5, 0.5, 0.5, 0.5])),
    Corruption("glass_blur", "blur", _rows(
        sigma=[0.7, 0.9, 1, 1.1, 1.5], max_delta=[1, 2, 2, 3, 4], iterations=[2, 1, 3, 2, 2])),
    Corruption("motion_blur", "blur", _rows(
        radius=[10, 15, 15, 15, 20], sigma=[3, 5, 8, 12, 15])),
    Corruption("zoom_blur", "blur", _rows(factors=[
        _zoom_factors(1, 1.11, 0.01),
        _zoom_factors(1, 1.16, 0.01),
        _zoom_factors(1, 1.21, 0.02),
        _zoom_factors(1, 1.26, 0.02),
        _zoom_factors(1, 1.31, 0.03),
    ])),
    # --- weather ---
    Corruption("snow", "weather", _rows(
        loc=[0.1, 0.2, 0.55, 0.55, 0.55],
        scale=[0.3, 0.3, 0.3, 0.3, 0.3],
        zoom=[3, 2, 4, 4.5, 2.5],
        threshold=[0.5, 0.5, 0.9, 0.85, 0.85],
        blur_radius=[10, 12, 12, 12, 12],
        blur_sigma=[4, 4, 8, 8, 12],
        blend=[0.8, 0.7, 0.7, 0.65, 0.55])),
    Corruption("frost", "weather", _rows(
        image_weight=[1, 0.8, 0.7, 0.65, 0.6], frost_weight=[0.4, 0.6, 0.7, 0.7, 0.75],
        texture_scale=[None] * 5)),
    Corruption("fog", "weather", _rows(
        strength=[1.5, 2, 2.5, 2.5, 3], wibble_decay=[2, 2, 1.7, 1.5, 1.4], mapsize=[PLASMA_MAPSIZE] * 5)),
    Corruption("brightness", "weather", _rows(delta=[0.1, 0.2, 0.3, 0.4, 0.5])),
    # --- digital ---
    Corruption("contrast", "digital", _rows(factor=[0.4, 0.3, 0.2, 0.1, 0.05])),
    Corruption("elastic_transform", "digital", _rows(
        alpha=[_ELASTIC_BASE * 2, _ELASTIC_BASE * 2, _ELASTIC_BASE * 0.05,
               _ELASTIC_BASE * 0.07, _ELASTIC_BASE * 0.12],
        sigma=[_ELASTIC_BASE * 0.7, _ELASTIC_BASE * 0.08, _ELASTIC_BASE * 0.01,
               _ELASTIC_BASE * 0.01, _ELASTIC_BASE * 0.01],
        affine_jitter=[_ELASTIC_BASE * 0.1, _ELASTIC_BASE * 0.2, _ELASTIC_BASE * 0.02,
                       _ELASTIC_BASE * 0.02, _ELASTIC_BASE * 0.02])),
    Corruption("pixelate", "digital", _rows(factor=[0.6, 0.5, 0.4, 0.3, 0.25])),
    Corruption("jpeg_compression", "digital", _rows(quality=[25, 18, 15, 10, 7])),
    # --- extra (not in mCE) ---
    Corruption("speckle_noise", "extra", _rows(sigma=[0.15, 0.2, 0.35, 0.45, 0.6])),
    Corruption("gaussian_blur", "extra", _rows(sigma=[1, 2, 3, 4, 6])),
    Corruption("spatter", "extra", _rows(
        loc=[0.65, 0.65, 0.65, 0.65, 0.67],
        scale=[0.3, 0.3, 0.3, 0.3, 0.4],
        blur_sigma=[4, 3, 2, 1, 1],
        threshold=[0.69, 0.68, 0.68, 0.65, 0.65],
        intensity=[0.6, 0.6, 0.5, 1.5, 1.5],
        mud=[False, False, False, True, True])),
    Corruption("saturate", "extra", _rows(
        multiplier=[0.3, 0.1, 2, 5, 20], offset=[0, 0, 0, 0.1, 0.2])),
)

#: name -> Corruption, in benchmark order (15 benchmark corruptions, then the 4 extras).
CORRUPTIONS: Mapping[str, Corruption] = MappingProxyType({c.name: c for c in _TABLE})

#: The 15 corruptions that enter mCE, in benchmark order.
BENCHMARK_CORRUPTIONS = tuple(c.name for c in _TABLE if c.is_benchmark)

#: The 4 extra corruptions, reported apart from mCE.
EXTRA_CORRUPTIONS = tuple(c.name for c in _TABLE if not c.is_benchmark)


def corruption_names_text() -> str:
    """A human-readable list of valid names, for error messages."""
    return ", ".join(CORRUPTIONS)


def select_corruptions(names: Optional[Iterable[str]] = None) -> tuple[str, ...]:
    """The corruptions to run, in table order; all of them when ``names`` is None (see
    :func:`schemas.selection.select_names`)."""
    return select_names(CORRUPTIONS, names, "corruption")
