"""Decoding, each edition's preprocessing recipe (224: torchvision-0.2-style Resize(256) +
CenterCrop(224)), and the release JPEG encoder.

See ``../shared/spec/imagenet_c.md`` section 1.2 (C), ``imagenet_p.md`` section 1.1 (P) and
``editions_c.md`` section 1 (the other editions).
"""
from __future__ import annotations

import io
from typing import Union

import numpy as np
from PIL import Image

from schemas.edition import DEFAULT_EDITION, Preprocessing
from schemas.editions import get_edition
from schemas.editions.imagenet import RESIZE_SHORT_SIDE as RESIZE_256
from schemas.imagenet_c import IMAGE_SIZE

RESIZE_SHORT_SIDE = RESIZE_256
"""Short side (pixels) of torchvision's ``Resize(256)`` used before the 224 crops (C and P)."""

JPEG_QUALITY = get_edition(DEFAULT_EDITION).c.jpeg_quality
"""Quality of the JPEGs the reference driver writes (``save(quality=85, optimize=True)``)."""

ImageLike = Union[Image.Image, bytes, bytearray, np.ndarray]


def to_pil(image: ImageLike) -> Image.Image:
    """Open ``image`` (PIL image, encoded bytes or uint8 array) as a PIL image, pixels loaded.

    Raises
    ------
    ValueError
        If the bytes are not a decodable image or the array is not uint8 HxW or HxWxC.
    """
    if isinstance(image, Image.Image):
        return image
    if isinstance(image, (bytes, bytearray, memoryview)):
        try:
            pil = Image.open(io.BytesIO(bytes(image)))
            pil.load()
        except (OSError, SyntaxError, Image.DecompressionBombError) as err:
            raise ValueError(f"cannot decode image: {err}") from err
        return pil
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim not in (2, 3) or (
                image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
            raise ValueError(
                "array images must be uint8 with shape HxW, HxWx1, HxWx3 or HxWx4; "
                f"got {image.dtype} {image.shape}")
        return Image.fromarray(image[..., 0] if image.ndim == 3 and image.shape[2] == 1 else image)
    raise ValueError(f"expected a PIL image, encoded bytes or a uint8 array, got {type(image)!r}")


def resize_short_side(image: Image.Image, size: int = RESIZE_SHORT_SIDE) -> Image.Image:
    """torchvision ``Resize(size)`` with an int size: PIL bilinear, long side truncated.

    The image is returned unchanged when its short side already equals ``size``.
    """
    w, h = image.size
    if (w <= h and w == size) or (h <= w and h == size):
        return image
    if w < h:
        ow, oh = size, int(size * h / w)
    else:
        oh, ow = size, int(size * w / h)
    return image.resize((ow, oh), Image.BILINEAR)


def center_crop_box(width: int, height: int, size: int = IMAGE_SIZE) -> tuple[int, int, int, int]:
    """torchvision ``CenterCrop(size)`` box ``(left, top, right, bottom)``.

    Offsets are ``int(round((dim - size) / 2))`` with Python 3's round-half-to-even.
    """
    top = int(round((height - size) / 2.0))
    left = int(round((width - size) / 2.0))
    return left, top, left + size, top + size


def center_crop(image: Union[Image.Image, np.ndarray], size: int = IMAGE_SIZE):
    """torchvision ``CenterCrop(size)`` of a PIL image or an HxW[xC] array (same type back)."""
    if isinstance(image, np.ndarray):
        left, top, right, bottom = center_crop_box(image.shape[1], image.shape[0], size)
        return image[top:bottom, left:right]
    return image.crop(center_crop_box(*image.size, size))


def center_crop_fraction(image: Image.Image, fraction: float) -> Image.Image:
    """The inception driver's crop: ``(int(fraction*H), int(fraction*W))`` at offsets
    ``int(round((H - th) / 2))``, ``int(round((W - tw) / 2))`` (round half to even)."""
    w, h = image.size
    th, tw = int(fraction * h), int(fraction * w)
    top, left = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
    return image.crop((left, top, left + tw, top + th))


def center_square(image: Image.Image) -> Image.Image:
    """The centred square of side ``min(H, W)``, offsets ``(dim - side) // 2`` (identity on squares)."""
    w, h = image.size
    side = min(w, h)
    top, left = (h - side) // 2, (w - side) // 2
    return image.crop((left, top, left + side, top + side))


_FILTERS = {"bilinear": Image.BILINEAR, "box": Image.BOX}

#: Operation name of a :class:`schemas.edition.Preprocessing` step -> function(PIL image, *args).
STEPS = {
    "resize_short_side": resize_short_side,
    "center_crop": center_crop,
    "center_crop_fraction": center_crop_fraction,
    "center_square": center_square,
    "resize": lambda image, side, resample: image.resize((side, side), _FILTERS[resample]),
}


def apply_recipe(image: Image.Image, recipe: Preprocessing) -> Image.Image:
    """Apply the steps of ``recipe`` in order to a PIL image."""
    for operation, *arguments in recipe.steps:
        image = STEPS[operation](image, *arguments)
    return image


def preprocess(image: ImageLike, edition: str = DEFAULT_EDITION) -> np.ndarray:
    """ImageNet-C preprocessing of an edition: RGB, then the edition's recipe.

    ``imagenet`` (default): Resize(256), CenterCrop(224). ``inception``: centre 0.875 crop,
    bilinear 299x299. ``imagenet64``: bilinear 64x64 of the whole image. ``tinyimagenet``: centred
    square, bilinear 64x64. ``cifar``: centred square, BOX 32x32 (both identities on the
    datasets' own square images).

    Parameters
    ----------
    image : PIL.Image.Image, bytes or numpy.ndarray
        Any image Pillow reads; greyscale, RGBA, CMYK and palette images become RGB first.
    edition : str
        One of :data:`transforms.EDITIONS`.

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (N, N, 3), N the edition's side, values 0..255.
    """
    recipe = get_edition(edition).preprocessing
    rgb = to_pil(image).convert("RGB")
    return np.asarray(apply_recipe(rgb, recipe), dtype=np.uint8).copy()


def preprocess_uncropped(image: ImageLike) -> np.ndarray:
    """ImageNet-P preprocessing: Resize(256) *then* RGB, no crop (spec P 0.3).

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (H, W, 3) with min(H, W) = 256.
    """
    return np.asarray(resize_short_side(to_pil(image)).convert("RGB"), dtype=np.uint8).copy()


def encode_jpeg(array: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    """Encode a uint8 RGB array as the reference driver saves it: Pillow JPEG, q85, optimize.

    Pillow's defaults apply: baseline, 4:2:0 chroma subsampling.
    """
    if not (isinstance(array, np.ndarray) and array.dtype == np.uint8 and array.ndim == 3
            and array.shape[2] == 3):
        raise ValueError(f"encode_jpeg expects a uint8 HxWx3 array, got {getattr(array, 'dtype', type(array))} "
                         f"{getattr(array, 'shape', '')}")
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="JPEG", quality=quality, optimize=True)
    return buf.getvalue()
