"""The one file read of ``transforms``: the frost textures, verified by SHA-256.

Textures are looked for, in order, in ``$IMAGENET_CP_FROST_DIR``, in ``transforms/_assets/frost``
(where ``imagenet-cp fetch-assets`` puts them) and in ``~/.cache/imagenet-cp/frost``.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from schemas.assets import FROST_DIR_ENV, FROST_FILES, FROST_SHA256

__all__ = ["PACKAGE_FROST_DIR", "USER_FROST_DIR", "FrostAssetError", "frost_search_dirs", "sha256_hex",
           "find_frost_dir", "frost_texture"]

PACKAGE_FROST_DIR = Path(__file__).resolve().parent / "_assets" / "frost"
USER_FROST_DIR = Path.home() / ".cache" / "imagenet-cp" / "frost"

_HOW_TO_FIX = (
    "Run `imagenet-cp fetch-assets` (or `make install`), which takes byte-identical copies from the "
    "imagecorruptions==1.1.2 wheel on PyPI; or point {env} at a directory holding frost1.png ... "
    "frost6.jpg; or `imagenet-cp fetch-assets --source DIR_OR_URL`."
).format(env=FROST_DIR_ENV)


class FrostAssetError(RuntimeError):
    """A frost texture is missing or its bytes differ from the reference's."""


def frost_search_dirs() -> list[Path]:
    """Directories searched for frost textures, in order."""
    dirs = []
    if os.environ.get(FROST_DIR_ENV):
        dirs.append(Path(os.environ[FROST_DIR_ENV]))
    return dirs + [PACKAGE_FROST_DIR, USER_FROST_DIR]


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def find_frost_dir() -> Path:
    """The first searched directory that holds all six verified textures.

    Raises
    ------
    FrostAssetError
        With the files that are missing or wrong, and how to fix it.
    """
    problems = []
    for folder in frost_search_dirs():
        bad = [n for n in FROST_FILES
               if not (folder / n).is_file() or sha256_hex((folder / n).read_bytes()) != FROST_SHA256[n]]
        if not bad:
            return folder
        if len(bad) < len(FROST_FILES) or folder == frost_search_dirs()[0]:
            problems.append(f"{folder}: missing or wrong {', '.join(bad)}")
    detail = "; ".join(problems) or "no textures in " + ", ".join(map(str, frost_search_dirs()))
    raise FrostAssetError(f"frost textures not available ({detail}). {_HOW_TO_FIX}")


@lru_cache(maxsize=None)
def frost_texture(index: int, scale=None) -> np.ndarray:
    """Texture ``index`` (0..5) as ``cv2.imread`` gives it: BGR uint8, alpha dropped. Read-only.

    With ``scale`` (e.g. 0.3), the texture is shrunk as the 64 and 32 editions do it:
    ``cv2.resize(F, (0, 0), fx=scale, fy=scale)`` (INTER_LINEAR; OpenCV maps coordinates with
    1/scale, which differs from a resize to the same size given as ``dsize``).
    """
    if scale is not None:
        image = cv2.resize(np.asarray(frost_texture(index)), (0, 0), fx=scale, fy=scale)
        image.setflags(write=False)
        return image
    path = find_frost_dir() / FROST_FILES[index]
    image = cv2.imread(str(path))
    if image is None:
        raise FrostAssetError(f"cannot decode {path}. {_HOW_TO_FIX}")
    image.setflags(write=False)
    return image
