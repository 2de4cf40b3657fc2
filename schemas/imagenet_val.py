"""The ImageNet 2012 validation set as an input: its ground truth (file name -> wnid) and the
image file extensions the reference driver reads.

``data/imagenet_validation_labels.txt`` is tensorflow-datasets' ``imagenet2012/validation_labels.txt``
(4.9.x): line ``i`` (1-based) is the wnid of ``ILSVRC2012_val_<i as 8 digits>.JPEG``.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Optional

__all__ = ["VALIDATION_IMAGES", "IMAGE_EXTENSIONS", "validation_wnids", "validation_wnid", "OFFICIAL_VAL_TAR",
           "OFFICIAL_VAL_TAR_BYTES", "OFFICIAL_VAL_TAR_SHA256"]

VALIDATION_IMAGES = 50_000

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm")
"""Extensions (compared case-insensitively) the reference's ImageFolder keeps; other files are not images."""
_VALIDATION_NAME = re.compile(r"ILSVRC2012_val_(\d{8})\.JPEG")


@lru_cache(maxsize=None)
def validation_wnids() -> tuple[str, ...]:
    """The 50,000 validation wnids in file-number order."""
    text = resources.files("schemas").joinpath("data/imagenet_validation_labels.txt").read_text()
    wnids = tuple(text.split())
    if len(wnids) != VALIDATION_IMAGES:
        raise RuntimeError(f"schemas/data/imagenet_validation_labels.txt must hold {VALIDATION_IMAGES} wnids")
    return wnids


def validation_wnid(file_name: str) -> Optional[str]:
    """The wnid of validation file ``ILSVRC2012_val_NNNNNNNN.JPEG``, or None for any other name."""
    match = _VALIDATION_NAME.fullmatch(file_name)
    if not match or not 1 <= int(match.group(1)) <= VALIDATION_IMAGES:
        return None
    return validation_wnids()[int(match.group(1)) - 1]


OFFICIAL_VAL_TAR = "ILSVRC2012_img_val.tar"
"""File name of the official validation archive; an input of this name must be that archive."""
OFFICIAL_VAL_TAR_BYTES = 6_744_924_160
OFFICIAL_VAL_TAR_SHA256 = "c7e06a6c0baccf06d8dbeb6577d71efff84673a5dbdd50633ab44f8ea0456ae0"
"""Size and SHA-256 of the official archive (as tensorflow-datasets' url_checksums record them);
it holds :data:`VALIDATION_IMAGES` members."""
