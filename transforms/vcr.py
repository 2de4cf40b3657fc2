"""VCR's continuous corruptions: parameters drawn over continuous ranges, then the ImageNet-C operator.

One example = one image, one corruption, one draw number. Its stream is a fresh
``numpy.random.RandomState(vcr_seed(...))``: the parameters are drawn from it first (in the order
of :data:`schemas.vcr.VCR_CORRUPTIONS`), then the corruption consumes it exactly as ImageNet-C's
function does. The parameter values (never an index) are returned, so the example can be
described and regenerated.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
from PIL import Image

from schemas.vcr import DV_RESOLUTIONS, GRID_POINTS, OPERATORS, PARAMETER_MODES, VCR_CORRUPTIONS, Parameter

from . import blur
from .assets import frost_texture
from .corruptions import FUNCTIONS, to_uint8
from .preprocess import BadInput, encode_png, preprocess, to_pil
from .seeds import example_seed
from .units import clip_to_255, to_unit
from .weather import FROST_CHOICES

__all__ = ["VCR_CODE_GLASS_SIDE", "vcr_seed", "draw_parameters", "apply_corruption", "vcr_corrupt", "vcr_image"]

VCR_CODE_GLASS_SIDE = 32
"""VCR's glass blur displaces pixels in the top-left 32x32 square only (a CIFAR leftover)."""


def vcr_seed(release_seed: int, image_key: str, corruption: str, draw: int) -> int:
    """The 32-bit seed of one VCR example: :func:`transforms.example_seed` of ``vcr/<corruption>``."""
    return example_seed(release_seed, image_key, f"vcr/{corruption}", draw)


def _check_name(name: str):
    if name not in VCR_CORRUPTIONS:
        raise ValueError(f"unknown VCR corruption {name!r}; valid names: {', '.join(VCR_CORRUPTIONS)}")
    return VCR_CORRUPTIONS[name]


def _draw(parameter: Parameter, rng: np.random.RandomState, mode: str):
    if parameter.integer:
        return int(rng.randint(int(parameter.low), int(parameter.high) + 1))
    if mode == "uniform":
        return float(rng.uniform(parameter.low, parameter.high))
    return float(np.linspace(parameter.low, parameter.high, GRID_POINTS)[rng.randint(GRID_POINTS)])


def draw_parameters(name: str, rng: np.random.RandomState, mode: str = "grid") -> dict:
    """Draw the parameters of VCR corruption ``name``.

    Parameters
    ----------
    name : str
        One of :data:`schemas.vcr.VCR_CORRUPTIONS`.
    rng : numpy.random.RandomState
        One draw per parameter, in table order: ``randint(1000)`` (the grid index) in mode
        ``grid``, ``uniform(low, high)`` in mode ``uniform``, ``randint(low, high + 1)`` for integers.
    mode : str
        One of :data:`schemas.vcr.PARAMETER_MODES`.

    Returns
    -------
    dict
        Keyword -> value (Python float / int) for the ImageNet-C function, the fixed ones included.
    """
    corruption = _check_name(name)
    if mode not in PARAMETER_MODES:
        raise ValueError(f"parameter mode must be one of {', '.join(PARAMETER_MODES)}; got {mode!r}")
    values = {p.name: _draw(p, rng, mode) for p in corruption.parameters}
    return {**values, **corruption.fixed}


def _glass_blur_vcr_code(x, rng, *, sigma, max_delta, iterations):
    """VCR code's glass blur: as ImageNet-C's, but the displacement loop runs over 32x32 pixels."""
    image = (blur.gaussian_rgb(to_unit(x), sigma) * 255).astype(np.uint8)
    corner = image[:VCR_CODE_GLASS_SIDE, :VCR_CODE_GLASS_SIDE]
    shifts = rng.randint(-max_delta, max_delta, size=(blur.glass_pixel_count(corner.shape, max_delta, iterations), 2))
    blur.displace_pixels(corner, shifts, max_delta, iterations)
    return clip_to_255(blur.gaussian_rgb(image / 255., sigma))


def _frost_vcr_code(x, rng, *, image_weight, frost_weight):
    """VCR code's frost: texture ``randint(5)`` resized (Pillow bicubic) to the image, in BGR, no crop."""
    texture = frost_texture(rng.randint(FROST_CHOICES))  # BGR, as VCR's PIL load then reversal gives
    height, width = x.shape[:2]
    resized = np.asarray(Image.fromarray(np.ascontiguousarray(texture)).resize((width, height), Image.BICUBIC))
    return np.clip(image_weight * x.astype(np.float64) + frost_weight * resized, 0, 255)


_VCR_CODE_FUNCTIONS = {"glass_blur": _glass_blur_vcr_code, "frost": _frost_vcr_code}


def apply_corruption(image: np.ndarray, name: str, parameters: Mapping, rng: np.random.RandomState,
                     operators: str = "imagenet-c") -> np.ndarray:
    """Apply VCR corruption ``name`` with given ``parameters`` to a 224x224 crop.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 (H, W, 3) RGB: the 224 crop (:func:`transforms.preprocess`) or a native-size image
        (ImageNet-C's frost needs a texture at least as large: use ``operators='vcr-code'``,
        which resizes it, for images beyond 315x560).
    name : str
        One of :data:`schemas.vcr.VCR_CORRUPTIONS`.
    parameters : mapping
        Keyword values, as :func:`draw_parameters` returns them.
    rng : numpy.random.RandomState
        Consumed as the ImageNet-C function consumes it.
    operators : str
        ``imagenet-c`` or ``vcr-code`` (:data:`schemas.vcr.OPERATORS`).

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``image``, truncated as VCR and ImageNet-C truncate.

    Raises
    ------
    transforms.BadInput
        ImageNet-C's frost on an image larger than the drawn texture (a native-size image): this
        input cannot make this output, and a build records it in ``failures.jsonl``.
    ValueError
        An unknown name or operator set, or an image that is not uint8 (H, W, 3).
    """
    corruption = _check_name(name)
    if operators not in OPERATORS:
        raise ValueError(f"operators must be one of {', '.join(OPERATORS)}; got {operators!r}")
    if operators == "vcr-code" and not corruption.code_variant:
        raise ValueError(f"{name} has no vcr-code operator here (VCR's code uses an unseeded, unpinned "
                         "albumentations MotionBlur); build it with operators 'imagenet-c'")
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
        raise ValueError(f"image must be a uint8 RGB array of shape (H, W, 3); got {got}")
    function = _VCR_CODE_FUNCTIONS.get(name, FUNCTIONS[name]) if operators == "vcr-code" else FUNCTIONS[name]
    try:
        return np.ascontiguousarray(to_uint8(function(image, rng, **parameters)))
    except ValueError as err:
        if name == "frost" and operators == "imagenet-c":  # the random crop cannot fit
            raise BadInput(f"ImageNet-C's frost crops a texture at least as large as the image, and the drawn "
                           f"texture is smaller than {image.shape[0]}x{image.shape[1]}; use operators "
                           f"'vcr-code' (texture resized) for native-size images ({err})") from None
        raise


def vcr_corrupt(image: np.ndarray, name: str, rng: np.random.RandomState, *, mode: str = "grid",
                operators: str = "imagenet-c") -> tuple[np.ndarray, dict]:
    """Draw the parameters of ``name`` from ``rng``, then corrupt ``image`` with the same stream.

    Returns
    -------
    (numpy.ndarray, dict)
        The uint8 corrupted image (the shape of ``image``) and the parameter values used.
    """
    parameters = draw_parameters(name, rng, mode)
    return apply_corruption(image, name, parameters, rng, operators), parameters


def vcr_image(data, dv_resolution: str = "224crop") -> np.ndarray:
    """The clean image a VCR example is made from and measured against.

    Parameters
    ----------
    data : bytes, PIL.Image.Image or numpy.ndarray
        An encoded or decoded image.
    dv_resolution : str
        ``224crop``: RGB, Resize(256), CenterCrop(224) (:func:`transforms.preprocess`);
        ``native``: RGB at the image's own size.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3).

    Raises
    ------
    transforms.BadInput
        If the image does not decode, or is refused (:func:`transforms.preprocess.to_pil`).
    ValueError
        An unknown ``dv_resolution`` (the caller's error).
    """
    if dv_resolution not in DV_RESOLUTIONS:
        raise ValueError(f"dv_resolution must be one of {', '.join(DV_RESOLUTIONS)}; got {dv_resolution!r}")
    if dv_resolution == "224crop":
        return preprocess(data)
    return np.asarray(to_pil(data).convert("RGB"), dtype=np.uint8).copy()
