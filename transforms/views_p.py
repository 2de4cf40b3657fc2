"""The steps of the ImageNet-P editions' views (:class:`schemas.imagenet_p_editions.Arrangement`).

The steps are those of the editions' preprocessing recipes (:data:`transforms.preprocess.STEPS`),
applied through PIL to a uint8 (H, W, 3) array: ``resize_short_side`` (``Resize(s)``: PIL bilinear, short side ``s``, long side truncated,
unchanged if already ``s``), ``center_crop`` (``CenterCrop(s)``), ``center_crop_fraction`` (the
inception driver's central ``int(f*H) x int(f*W)`` crop, offsets rounded half to even) and
``resize`` (PIL resize to ``s x s``, aspect not kept). See ``docs/reference/algorithms.md``, "Editions of ImageNet-P".
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from PIL import Image

from .preprocess import STEPS, center_crop, preprocess_uncropped, resize_short_side, to_pil

__all__ = ["apply_steps", "view_function", "edition_input"]


def apply_steps(image: np.ndarray, steps: tuple) -> np.ndarray:
    """Apply ``steps`` (``(name, *arguments)`` tuples) in order to a uint8 array, through PIL.

    An empty list returns ``image`` itself.
    """
    if not steps:
        return image
    pil = Image.fromarray(image)
    for name, *arguments in steps:
        pil = STEPS[name](pil, *arguments)
    return np.asarray(pil, dtype=np.uint8).copy()


def view_function(steps: tuple) -> Callable[[np.ndarray], np.ndarray]:
    """``image -> apply_steps(image, steps)``: the ``view`` argument of a sequence function."""
    return lambda image: apply_steps(image, steps)


def edition_input(image, edition) -> np.ndarray:
    """What ``perturb_sequence(..., edition=...)`` receives for a source image of a P edition.

    Parameters
    ----------
    image : PIL.Image.Image, bytes or numpy.ndarray
        The source image (any format Pillow reads).
    edition : schemas.imagenet_p_editions.PEdition
        The edition's P facts; its ``input`` decides: ``'resized256'`` (224):
        :func:`transforms.preprocess_uncropped`; ``'full'``: RGB at full resolution;
        ``'cifar32'``: a 32x32 image as it is, any other size torchvision ``Resize(32)`` then
        ``CenterCrop(32)`` of its RGB (how an ImageNet-style photograph stands in for a CIFAR image).

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3) RGB.

    Raises
    ------
    transforms.BadInput
        If the image does not decode, or is refused (:func:`transforms.preprocess.to_pil`).
    """
    if edition.input == "resized256":
        return preprocess_uncropped(image)
    rgb = to_pil(image).convert("RGB")
    if edition.input == "cifar32" and rgb.size != (edition.frame_size, edition.frame_size):
        rgb = center_crop(resize_short_side(rgb, edition.frame_size), edition.frame_size)
    return np.asarray(rgb, dtype=np.uint8).copy()
