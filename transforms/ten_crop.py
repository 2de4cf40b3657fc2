"""torchvision-style ten-crop geometry for the adversarial filters (``TenCrop`` on ``Resize``).

An image is decoded, turned upright by its EXIF orientation, converted to RGB (alpha dropped),
its short side resized to ``resize`` (long side truncated, PIL bilinear: torchvision ``Resize``),
and cut into five ``crop`` x ``crop`` crops in torchvision's ``five_crop`` order (top-left,
top-right, bottom-left, bottom-right, centre with round-half-even offsets), then the same five of
the horizontally flipped resized image: crop indices 0..9. See ``docs/reference/algorithms.md``, "Ten crops".
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageOps

from transforms.preprocess import center_crop_box, resize_short_side, to_pil

__all__ = ["CROP_NAMES", "CENTRE_CROP", "upright_rgb", "five_crop_boxes", "ten_crops", "centre_crop", "normalise"]

CROP_NAMES = ("top_left", "top_right", "bottom_left", "bottom_right", "centre",
              "flip_top_left", "flip_top_right", "flip_bottom_left", "flip_bottom_right", "flip_centre")
"""Crop index -> name; ``flip_*`` crops are cut from the flipped image (flip_top_left mirrors the
top-right region of the original)."""
CENTRE_CROP = 4
"""Index of the centre crop (the crop the evaluation transform sees)."""


def upright_rgb(image) -> Image.Image:
    """Decoded ``image`` (bytes or PIL) with its EXIF orientation applied, in RGB.

    Raises
    ------
    ValueError
        If the bytes cannot be decoded.
    """
    pil = to_pil(image)
    try:
        pil = ImageOps.exif_transpose(pil)
    except (OSError, ValueError, SyntaxError):  # a broken EXIF block: keep the stored orientation
        pass
    return pil.convert("RGB")


def five_crop_boxes(width: int, height: int, crop: int) -> tuple:
    """``(left, top, right, bottom)`` of torchvision's five crops, in ``five_crop`` order.

    Raises
    ------
    ValueError
        If the image is smaller than ``crop`` on a side.
    """
    if width < crop or height < crop:
        raise ValueError(f"image {width}x{height} is smaller than the {crop} crop")
    return ((0, 0, crop, crop), (width - crop, 0, width, crop), (0, height - crop, crop, height),
            (width - crop, height - crop, width, height), center_crop_box(width, height, crop))


def ten_crops(image, crop: int = 224, resize: int = 256) -> np.ndarray:
    """The ten crops of an image as uint8 (10, crop, crop, 3), in :data:`CROP_NAMES` order.

    Parameters
    ----------
    image : bytes or PIL.Image.Image
        Encoded or decoded image, any mode.
    crop : int
        Crop size in pixels (224 for ResNet-50 and EfficientNet-Lite0).
    resize : int
        Short side after resizing (256 = 224 / 0.875).
    """
    if resize < crop:
        raise ValueError(f"resize {resize} must be >= crop {crop}")
    resized = resize_short_side(upright_rgb(image), resize)
    boxes = five_crop_boxes(*resized.size, crop)
    flipped = resized.transpose(Image.FLIP_LEFT_RIGHT)
    return np.stack([np.asarray(source.crop(box)) for source in (resized, flipped) for box in boxes])


def centre_crop(image, crop: int = 224, resize: int = 256) -> np.ndarray:
    """Only the centre crop (index 4) of :func:`ten_crops`, uint8 (crop, crop, 3): the evaluation input."""
    resized = resize_short_side(upright_rgb(image), resize)
    return np.asarray(resized.crop(five_crop_boxes(*resized.size, crop)[CENTRE_CROP]))


def normalise(crops: np.ndarray, mean, std) -> np.ndarray:
    """uint8 (..., H, W, 3) -> float32 (..., 3, H, W): ToTensor then Normalize(mean, std), in float32."""
    x = np.asarray(crops, dtype=np.float32) / np.float32(255)
    x = (x - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return np.ascontiguousarray(np.moveaxis(x, -1, -3))
