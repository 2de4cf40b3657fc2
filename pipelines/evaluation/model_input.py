"""What a model sees: one image or frame of a release as the evaluator of its benchmark feeds it.

- 224 ImageNet-C / P / VCR (``ImageNet-C/test.py``): CenterCrop(224) (a no-op on 224 release
  images), ToTensor (C x H x W float32 in [0, 1]) and ImageNet mean/std, :func:`model_input`;
- the other editions: the edition's side N and its ``model_input`` mean and std (CIFAR models take
  32x32 RGB in [0, 1], as RobustBench's), :func:`edition_model_input`; P frames are centre-cropped
  to N first (only the 64 editions' motion_blur frames are not square), :func:`frame_model_input`;
- ImageNet-A (``natural-adv-examples/eval.py``): Resize(256), CenterCrop(224), ImageNet mean/std,
  :func:`model_input_a`.

Every function returns float32 (3, N, N).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np
from PIL import Image

from schemas.baselines import MODEL_INPUT_MEAN, MODEL_INPUT_STD
from schemas.edition import Edition
from schemas.filter_models import IMAGENET_MEAN, IMAGENET_STD
from transforms.preprocess import center_crop, to_pil
from transforms.ten_crop import centre_crop, normalise

__all__ = ["A_SIDE", "A_RESIZE", "model_input", "edition_model_input", "image_model_input", "frame_model_input",
           "model_input_a"]

_MEAN = np.asarray(MODEL_INPUT_MEAN, dtype=np.float32)[:, None, None]
_STD = np.asarray(MODEL_INPUT_STD, dtype=np.float32)[:, None, None]
A_SIDE, A_RESIZE = 224, 256


def model_input(image) -> np.ndarray:
    """One image as a 224 model sees it: float32 array (3, 224, 224), normalised per channel.

    Parameters
    ----------
    image : bytes, PIL.Image.Image or uint8 array (H, W, 3)
        An encoded or decoded RGB image (other modes are converted to RGB).
    """
    rgb = np.asarray(center_crop(to_pil(image).convert("RGB")), dtype=np.float32)
    return (rgb.transpose(2, 0, 1) / np.float32(255) - _MEAN) / _STD


def edition_model_input(image, edition: Edition) -> np.ndarray:
    """One image as a model of ``edition`` sees it: float32 (3, N, N), ``(x / 255 - mean) / std``.

    Raises
    ------
    ValueError
        If the image is not N x N.
    """
    rgb = np.asarray(to_pil(image).convert("RGB"), dtype=np.float32)
    side = edition.image_size
    if rgb.shape[:2] != (side, side):
        raise ValueError(f"{edition.name} images are {side}x{side}, got {rgb.shape[1]}x{rgb.shape[0]}")
    mean = np.asarray(edition.model_input.mean, dtype=np.float32)[:, None, None]
    std = np.asarray(edition.model_input.std, dtype=np.float32)[:, None, None]
    return (rgb.transpose(2, 0, 1) / np.float32(255) - mean) / std


def image_model_input(edition: Edition) -> Callable:
    """``image -> float32 (3, N, N)`` of an ImageNet-C edition: :func:`model_input` where the edition
    crops an image of any size (:attr:`schemas.edition.ModelInput.crop_any_size`), else
    :func:`edition_model_input` with the edition's mean and std."""
    return model_input if edition.model_input.crop_any_size else partial(edition_model_input, edition=edition)


def _cropped_frame_input(frame, edition: Edition) -> np.ndarray:
    return edition_model_input(center_crop(Image.fromarray(np.asarray(frame)), edition.image_size), edition)


def frame_model_input(edition: Edition) -> Callable:
    """``frame -> float32 (3, N, N)``: the model input of an ImageNet-P edition's frames
    (:func:`model_input` where the edition crops an image of any size; otherwise centre-cropped to
    N, then :func:`edition_model_input`)."""
    return model_input if edition.model_input.crop_any_size else partial(_cropped_frame_input, edition=edition)


def model_input_a(data: bytes) -> np.ndarray:
    """The reference ImageNet-A evaluation input of one image: float32 (3, 224, 224)."""
    return normalise(centre_crop(data, A_SIDE, A_RESIZE), IMAGENET_MEAN, IMAGENET_STD)
