"""A perceptual hash for near-duplicate hints: the 64-bit difference hash (dHash)."""
from __future__ import annotations

import numpy as np
from PIL import Image

__all__ = ["difference_hash", "hamming"]


def difference_hash(image: Image.Image) -> str:
    """16 hex digits: for each row of the 9 x 8 greyscale thumbnail, whether each pixel is brighter
    than its right neighbour. Near-duplicates differ in few bits (:func:`hamming`)."""
    small = np.asarray(image.convert("L").resize((9, 8), Image.BILINEAR), dtype=np.int16)
    bits = (small[:, 1:] > small[:, :-1]).ravel()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def hamming(a: str, b: str) -> int:
    """Number of differing bits of two :func:`difference_hash` values."""
    return bin(int(a, 16) ^ int(b, 16)).count("1")
