"""Pure image functions: the ImageNet-C corruptions and ImageNet-P perturbations.

No Beam, no TensorFlow, no file writes; the frost textures are the one file read
(:mod:`transforms.assets`).
"""
from schemas.imagenet_c import CORRUPTIONS, BENCHMARK_CORRUPTIONS, EXTRA_CORRUPTIONS, SEVERITIES

from schemas.imagenet_p import PERTURBATIONS
from schemas.editions import EDITIONS

from .corruptions import corrupt
from .heap import retain_freed_memory
from .perturbations import perturb_sequence
from .preprocess import BadInput, encode_jpeg, encode_png, preprocess, preprocess_uncropped
from .rng import RNG_MODES, FastRandomState, make_rng
from .seeds import example_rng, example_seed
from .vif import delta_v, vif

__all__ = [
    "EDITIONS", "CORRUPTIONS", "BENCHMARK_CORRUPTIONS", "EXTRA_CORRUPTIONS", "SEVERITIES", "PERTURBATIONS",
    "corrupt", "perturb_sequence", "BadInput", "encode_jpeg", "encode_png", "preprocess", "preprocess_uncropped",
    "example_seed", "example_rng", "make_rng", "RNG_MODES", "FastRandomState",
    "vif", "delta_v", "retain_freed_memory",
]
