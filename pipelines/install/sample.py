"""The bundled sample: real photographs from scikit-image, laid out as an ImageNet validation folder.

``val/<wnid>/ILSVRC2012_val_NNNNNNNN.JPEG``, so that a build without ``--input`` runs on a fresh
machine. Each photograph gets a plausible ImageNet class; its file name is that of a validation
image of the same class in the ground truth, so flat and folder layouts label it alike. Two are
greyscale, as some ImageNet JPEGs are.
"""
from __future__ import annotations

import io
import os
from types import MappingProxyType

import numpy as np
from PIL import Image

from schemas.imagenet_val import validation_wnids

__all__ = ["SAMPLE_PHOTOGRAPHS", "SAMPLE_JPEG_QUALITY", "sample_arrays", "sample_file_names", "write_sample"]

#: Photograph (``skimage.data`` function, index for multi-image ones) -> wnid (class name).
SAMPLE_PHOTOGRAPHS = MappingProxyType({
    ("chelsea", None): "n02123045",            # tabby, tabby cat
    ("coffee", None): "n07920052",             # espresso
    ("rocket", None): "n04008634",             # projectile, missile
    ("astronaut", None): "n04350905",          # suit (a space suit)
    ("stereo_motorcycle", 0): "n03785016",     # moped (left view)
    ("stereo_motorcycle", 1): "n03785016",     # moped (right view)
    ("camera", None): "n04485082",             # tripod (greyscale)
    ("clock", None): "n04548280",              # wall clock (greyscale)
})

SAMPLE_JPEG_QUALITY = 95
"""Quality of the sample JPEGs (ImageNet's own are mostly between 90 and 96)."""


def sample_arrays() -> list[tuple[str, np.ndarray]]:
    """``(wnid, uint8 image)`` of every sample photograph, in table order."""
    import skimage.data

    images = []
    for (function, index), wnid in SAMPLE_PHOTOGRAPHS.items():
        image = getattr(skimage.data, function)()
        images.append((wnid, np.asarray(image if index is None else image[index], dtype=np.uint8)))
    return images


def sample_file_names() -> list[str]:
    """Validation file names for the sample, in table order: the k-th photograph of a class gets
    the k-th validation image of that class."""
    positions: dict[str, list[int]] = {}
    for number, wnid in enumerate(validation_wnids(), start=1):
        positions.setdefault(wnid, []).append(number)
    used: dict[str, int] = {}
    names = []
    for wnid in SAMPLE_PHOTOGRAPHS.values():
        k = used[wnid] = used.get(wnid, -1) + 1
        names.append(f"ILSVRC2012_val_{positions[wnid][k]:08d}.JPEG")
    return names


def write_sample(folder: str) -> str:
    """Write the sample JPEGs to ``folder/<wnid>/<file>`` and return ``folder``."""
    for (wnid, image), name in zip(sample_arrays(), sample_file_names()):
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="JPEG", quality=SAMPLE_JPEG_QUALITY)
        os.makedirs(os.path.join(folder, wnid), exist_ok=True)
        with open(os.path.join(folder, wnid, name), "wb") as stream:
            stream.write(buffer.getvalue())
    return folder
