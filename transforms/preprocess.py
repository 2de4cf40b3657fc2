"""Decoding, torchvision-0.2-style Resize(256) + CenterCrop(224), and the release JPEG encoder.

See ``../shared/spec/imagenet_c.md`` section 1.2 (C) and ``imagenet_p.md`` section 1.1 (P).
"""
from __future__ import annotations

import io
from typing import Union

import numpy as np
from PIL import Image

from schemas.imagenet_c import IMAGE_SIZE

RESIZE_SHORT_SIDE = 256
"""Short side (pixels) of torchvision's ``Resize(256)`` used before every crop."""

JPEG_QUALITY = 85
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


def preprocess(image: ImageLike) -> np.ndarray:
    """ImageNet-C preprocessing: RGB, then Resize(256), then CenterCrop(224).

    Parameters
    ----------
    image : PIL.Image.Image, bytes or numpy.ndarray
        Any image Pillow reads; greyscale, RGBA, CMYK and palette images become RGB first.

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (224, 224, 3), values 0..255.
    """
    rgb = to_pil(image).convert("RGB")
    return np.asarray(center_crop(resize_short_side(rgb)), dtype=np.uint8).copy()


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
