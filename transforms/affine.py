"""The geometric maths of ImageNet-P: torchvision 0.2.x ``affine`` and the tilt homography.

ImageNet-P was made with torchvision 0.2.1, whose ``functional.affine`` differs from today's
(rotation centre ``(W/2 + 0.5, H/2 + 0.5)`` and a single shear angle). This module builds that
inverse matrix by hand and hands it to Pillow's ``Image.transform``, as the old torchvision did
(``docs/reference/algorithms.md``, "Affine and tilt"). Tilt is the reference's 3-D rotation homography applied
with ``cv2.warpPerspective``.
"""
from __future__ import annotations

import math

import cv2
import numpy as np
from PIL import Image

__all__ = ["RESAMPLE", "inverse_affine_coefficients", "affine", "tilt_homography", "tilt"]

#: Resampling filters by name (torchvision 0.2.1's default ``resample=0`` is nearest).
RESAMPLE = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR}


def inverse_affine_coefficients(size: tuple[int, int], angle: float, translate: tuple[float, float],
                                scale: float, shear: float) -> tuple[float, ...]:
    """Pillow ``AFFINE`` coefficients of torchvision 0.2.x ``affine``: output -> input map.

    The forward map rotates by ``angle`` and shears by ``shear`` about the centre
    ``(W/2 + 0.5, H/2 + 0.5)``, scales by ``scale`` about it, then translates by ``translate``.
    The floating-point operations follow torchvision 0.2.1's ``_get_inverse_affine_matrix`` in
    order, so the coefficients are bit-identical.

    Parameters
    ----------
    size : (int, int)
        Image width and height, in pixels.
    angle : float
        Rotation in degrees; positive turns clockwise on screen (y points down).
    translate : (float, float)
        Shift (tx, ty) in pixels; positive tx moves content right, positive ty down.
    scale : float
        Zoom factor, > 0 (above 1 enlarges).
    shear : float
        Shear angle in degrees, in (-90, 90).

    Returns
    -------
    tuple of float
        ``(a, b, c, d, e, f)``: the input pixel of output pixel (x, y) is
        ``(a x + b y + c, d x + e y + f)``, pixel centres at half-integers.
    """
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    width, height = size
    cx, cy = width * 0.5 + 0.5, height * 0.5 + 0.5
    tx, ty = translate
    a = math.radians(angle)
    s = math.radians(shear)
    det = math.cos(a + s) * math.cos(a) + math.sin(a + s) * math.sin(a)
    gain = 1.0 / scale / det
    m = [gain * v for v in (math.cos(a + s), math.sin(a + s), 0, -math.sin(a), math.cos(a), 0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return tuple(m)


def affine(image: np.ndarray, *, angle: float = 0.0, translate: tuple[float, float] = (0, 0),
           scale: float = 1.0, shear: float = 0.0, resample: str = "nearest") -> np.ndarray:
    """torchvision 0.2.x ``functional.affine`` of a uint8 image, through Pillow.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3) or (H, W).
    angle, translate, scale, shear : see :func:`inverse_affine_coefficients`.
    resample : {'nearest', 'bilinear'}
        Pillow's filter. Samples falling outside the image are black (0).

    Returns
    -------
    numpy.ndarray
        uint8, same shape as ``image``.
    """
    if resample not in RESAMPLE:
        raise ValueError(f"resample must be one of {sorted(RESAMPLE)}, got {resample!r}")
    pil = Image.fromarray(image)
    coefficients = inverse_affine_coefficients(pil.size, angle, translate, scale, shear)
    return np.asarray(pil.transform(pil.size, Image.AFFINE, coefficients, RESAMPLE[resample]))


def tilt_homography(width: int, height: int, angle: float) -> np.ndarray:
    """The reference's tilt homography: rotate the image plane by ``angle`` about x and y.

    The plane is centred, turned by ``angle`` about the y axis and then the x axis, pushed
    ``f = hypot(w, h)`` away from a pinhole of focal length ``f`` and projected back to pixels
    (algorithms.md, "Affine and tilt"). At 0 degrees this is a zoom of ``f / (1 + f)`` about
    the centre, not the identity.

    Parameters
    ----------
    width, height : int
        Image size, in pixels.
    angle : float
        Tilt about both axes, in degrees.

    Returns
    -------
    numpy.ndarray
        float64, shape (3, 3): forward map, input pixel -> output pixel (homogeneous).
    """
    w, h = width, height
    phi = theta = np.deg2rad(angle)
    f = np.sqrt(w ** 2 + h ** 2)
    to_centre = np.array([[1, 0, -w / 2], [0, 1, -h / 2], [0, 0, 1], [0, 0, 1]])
    about_x = np.array([[1, 0, 0, 0], [0, np.cos(theta), -np.sin(theta), 0],
                        [0, np.sin(theta), np.cos(theta), 0], [0, 0, 0, 1]])
    about_y = np.array([[np.cos(phi), 0, -np.sin(phi), 0], [0, 1, 0, 0],
                        [np.sin(phi), 0, np.cos(phi), 0], [0, 0, 0, 1]])
    push = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, f], [0, 0, 0, 1]])
    project = np.array([[f, 0, w / 2, 0], [0, f, h / 2, 0], [0, 0, 1, 0]])
    return project @ push @ about_x @ about_y @ to_centre


def tilt(image: np.ndarray, angle: float) -> np.ndarray:
    """Warp ``image`` by :func:`tilt_homography` with OpenCV (bilinear, black border).

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3).
    angle : float
        Tilt about both axes, in degrees.

    Returns
    -------
    numpy.ndarray
        uint8, same shape as ``image``.
    """
    height, width = image.shape[:2]
    return cv2.warpPerspective(image, tilt_homography(width, height, angle), (width, height))
