"""Pure image functions: the ImageNet-C corruptions and ImageNet-P perturbations.

No Beam, no TensorFlow, no file writes; the frost textures are the one file read
(:mod:`transforms.assets`).

:func:`corrupt` and :func:`perturb_sequence` are imported on first use (PEP 562): importing a
light module of the package (:mod:`transforms.preprocess`, as an evaluation's workers do) does not
import the corruptions' libraries (numba, SciPy, scikit-image: half a second).
"""
import importlib
from typing import TYPE_CHECKING

from schemas.imagenet_c import CORRUPTIONS, BENCHMARK_CORRUPTIONS, EXTRA_CORRUPTIONS, SEVERITIES

from schemas.imagenet_p import PERTURBATIONS
from schemas.editions import EDITIONS

from .heap import retain_freed_memory
from .preprocess import BadInput, encode_jpeg, encode_png, preprocess, preprocess_uncropped
from .rng import RNG_MODES, FastRandomState, make_rng
from .seeds import example_rng, example_seed
from .vif import delta_v, vif

if TYPE_CHECKING:  # what __getattr__ binds on first use, for readers and type checkers
    from .corruptions import corrupt
    from .perturbations import perturb_sequence

_LAZY = {"corrupt": "corruptions", "perturb_sequence": "perturbations"}
"""The module of each function imported on first use."""

__all__ = [
    "EDITIONS", "CORRUPTIONS", "BENCHMARK_CORRUPTIONS", "EXTRA_CORRUPTIONS", "SEVERITIES", "PERTURBATIONS",
    "corrupt", "perturb_sequence", "BadInput", "encode_jpeg", "encode_png", "preprocess", "preprocess_uncropped",
    "example_seed", "example_rng", "make_rng", "RNG_MODES", "FastRandomState",
    "vif", "delta_v", "retain_freed_memory",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
