"""Weather corruptions of ImageNet-C: snow, frost, fog, and the extra spatter.

Each function takes the NxNx3 uint8 (N the edition's side) RGB image, a ``numpy.random.RandomState`` that it consumes
exactly as the reference consumes NumPy's global stream, and the keyword parameters of one row of
the edition's table (:mod:`schemas.editions`). It returns what the reference hands to ``np.uint8`` (values
in [0, 255], not yet truncated). See ``docs/reference/algorithms.md``, "Weather".

Where the reference works in float32, scalars are cast to float32 explicitly, so the arithmetic
does not depend on whether a table value arrives as a Python float or a NumPy float64.
"""
from __future__ import annotations

import cv2
from .jit import numba
import numpy as np
from skimage.filters import gaussian

from .assets import frost_texture
from .geometry import clipped_zoom
from .motion import magick_motion_blur
from .units import to_unit

__all__ = ["FROST_CHOICES", "SNOW_ANGLE_RANGE", "WATER_COLOUR", "MUD_COLOUR", "plasma_fractal", "fog", "frost",
           "liquid_layer", "water_mask", "add_water", "add_mud", "spatter", "snow_layer", "add_snow", "snow"]

FROST_CHOICES = 5
"""The reference draws ``randint(5)``: frost1..frost5; frost6.jpg is never used."""

SNOW_ANGLE_RANGE = (-135.0, -45.0)
"""Range (degrees) of the uniform draw for the direction of snow's motion blur."""

WATER_COLOUR = (175, 238, 238)
"""Spatter's water colour, 0..255 in the image's (RGB) channel order: pale turquoise."""

MUD_COLOUR = (63, 42, 20)
"""Spatter's mud colour, 0..255 in RGB order: brown."""

_PLASMA_WIBBLE = 100.0  # initial amplitude of the diamond-square displacements
_CANNY_THRESHOLDS = (50, 150)  # hysteresis thresholds of the water edges
_WATER_DISTANCE_CAP = 20  # pixels: distances to an edge are truncated here
_WATER_EMBOSS = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], dtype=np.float32)
_BOX = (3, 3)  # cv2.blur window of the water mask
_MUD_MIN = 0.8  # smoothed mud coverage below this is dropped


# ----------------------------------------------------------------------------------------- fog

def plasma_fractal(mapsize: int, wibble_decay: float, rng: np.random.RandomState) -> np.ndarray:
    """Diamond-square plasma fractal with wrap-around neighbours (algorithms.md, "Plasma fractal").

    Parameters
    ----------
    mapsize : int
        Side of the map in pixels; a power of two >= 2.
    wibble_decay : float
        Factor (> 0) by which the displacement amplitude shrinks at each halving of the step;
        larger values give smoother maps.
    rng : numpy.random.RandomState
        Draws 3 ``uniform(-w, w, (n, n))`` arrays per level, n = 1, 2, 4, ..., mapsize / 2
        (for mapsize 256: 24 arrays, 65,535 numbers).

    Returns
    -------
    numpy.ndarray
        float64, shape (mapsize, mapsize), values in [0, 1] (min 0, max 1).
    """
    if isinstance(mapsize, bool) or not isinstance(mapsize, (int, np.integer)) or mapsize < 2 \
            or mapsize & (mapsize - 1):
        raise ValueError(f"mapsize must be a power of two >= 2, got {mapsize!r}")
    if not wibble_decay > 0:
        raise ValueError(f"wibble_decay must be > 0, got {wibble_decay!r}")
    plasma = np.empty((mapsize, mapsize), dtype=np.float64)
    plasma[0, 0] = 0.0
    step, wibble = int(mapsize), _PLASMA_WIBBLE
    while step >= 2:
        # The reference draws the three arrays after computing each sum; the draws depend only on
        # the shapes, so they can come first: same stream, same values.
        shape = (mapsize // step,) * 2
        jitter = [rng.uniform(-wibble, wibble, shape) for _ in range(3)]
        _plasma_level(plasma, step, wibble, jitter[0], jitter[1], jitter[2])
        step //= 2
        wibble /= wibble_decay
    plasma -= plasma.min()
    return plasma / plasma.max()


@numba.njit(cache=True)
def _plasma_level(plasma, step, wibble, square_jitter, row_jitter, col_jitter):
    """One diamond-square level in place: the reference's NumPy expressions, value by value.

    With ``n = mapsize / step`` points a side and indices mod n (``np.roll``), corners
    ``c[a, b] = plasma[a step, b step]`` and centres ``e[a, b] = plasma[a step + h, b step + h]``
    (h = step / 2): ``e = ((c[a, b] + c[a+1, b]) + (c[a, b+1] + c[a+1, b+1])) / 4 + wibble * J1``,
    then the edge midpoints ``plasma[a step, b step + h] = ((e[a, b] + e[a-1, b]) + (c[a, b] +
    c[a, b+1])) / 4 + wibble * J2`` and ``plasma[a step + h, b step] = ((e[a, b] + e[a, b-1]) +
    (c[a, b] + c[a+1, b])) / 4 + wibble * J3``.
    """
    n = plasma.shape[0] // step
    half = step // 2
    for a in range(n):
        below = (a + 1) % n
        for b in range(n):
            right = (b + 1) % n
            total = (plasma[a * step, b * step] + plasma[below * step, b * step]) + \
                (plasma[a * step, right * step] + plasma[below * step, right * step])
            plasma[a * step + half, b * step + half] = total / 4 + wibble * square_jitter[a, b]
    for a in range(n):
        above, below = (a - 1) % n, (a + 1) % n
        for b in range(n):
            left, right = (b - 1) % n, (b + 1) % n
            centre = plasma[a * step + half, b * step + half]
            corner = plasma[a * step, b * step]
            rows = (centre + plasma[above * step + half, b * step + half]) + (corner + plasma[a * step, right * step])
            plasma[a * step, b * step + half] = rows / 4 + wibble * row_jitter[a, b]
            cols = (centre + plasma[a * step + half, left * step + half]) + (corner + plasma[below * step, b * step])
            plasma[a * step + half, b * step] = cols / 4 + wibble * col_jitter[a, b]


def fog(x: np.ndarray, rng: np.random.RandomState, *, strength: float, wibble_decay: float,
        mapsize: int) -> np.ndarray:
    """ImageNet-C fog: a plasma fractal added to the image, then the contrast squeezed (algorithms.md).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, shape (H, W, 3) with H, W <= ``mapsize``.
    rng : numpy.random.RandomState
        Consumed by :func:`plasma_fractal` (3 uniform arrays per level: 24 for mapsize 256).
    strength : float
        Weight of the fog layer (values in [0, 1]) added to the image in [0, 1].
    wibble_decay : float
        Smoothness of the fog, see :func:`plasma_fractal`.
    mapsize : int
        Side of the plasma map (a power of two >= H, W; the edition's table gives it: 256 at
        224, 512 at 299, N at 64 and 32); its top-left H x W corner is used.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].
    """
    u = to_unit(x)
    peak = u.max()
    height, width = x.shape[:2]
    if height > mapsize or width > mapsize:
        raise ValueError(f"fog's plasma map ({mapsize}) is smaller than the image ({height}x{width})")
    fog_layer = plasma_fractal(mapsize, wibble_decay, rng)[:height, :width]
    _add_fog(u, fog_layer, float(strength), peak, peak + strength)
    return u


@numba.njit(cache=True)
def _add_fog(u, fog_layer, strength, peak, scale):
    """In place, per value, the reference's float64 ``clip((u + strength * fog) * peak / scale, 0, 1) * 255``."""
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            layer = strength * fog_layer[i, j]
            for k in range(u.shape[2]):
                u[i, j, k] = min(max((u[i, j, k] + layer) * peak / scale, 0.0), 1.0) * 255


# --------------------------------------------------------------------------------------- frost

def frost(x: np.ndarray, rng: np.random.RandomState, *, image_weight: float,
          frost_weight: float, texture_scale=None) -> np.ndarray:
    """ImageNet-C frost: a random crop of a frost photograph blended over the image (algorithms.md).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, shape (H, W, 3), RGB; H, W smaller than the (scaled) textures.
    rng : numpy.random.RandomState
        Draws ``randint(5)`` (the texture), then ``randint(0, rows - H)`` and ``randint(0, cols - W)``
        (the crop's top-left corner; upper bounds excluded).
    image_weight, frost_weight : float
        Weights of the image and of the texture, both on the raw 0..255 values.
    texture_scale : float, optional
        Shrink the textures first by ``cv2.resize(F, (0, 0), fx=s, fy=s)`` (0.3 in the 64
        editions, 0.2 at 32; see :func:`transforms.assets.frost_texture`); None keeps them.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].

    Raises
    ------
    transforms.assets.FrostAssetError
        If the textures are missing or differ from the reference's, with how to fetch them.
    """
    texture = frost_texture(rng.randint(FROST_CHOICES), texture_scale)
    height, width = x.shape[:2]
    top = rng.randint(0, texture.shape[0] - height)
    left = rng.randint(0, texture.shape[1] - width)
    # the window's channels reversed (BGR -> RGB) into a contiguous copy: bytes moved, not computed
    crop = cv2.cvtColor(texture[top:top + height, left:left + width], cv2.COLOR_BGR2RGB)
    pixels = np.ascontiguousarray(x)
    if pixels.shape != crop.shape:
        raise ValueError(f"frost needs an RGB image of shape (H, W, 3), got {pixels.shape}")
    out = np.empty(pixels.shape)
    _blend_frost(pixels.reshape(-1), crop.reshape(-1), float(image_weight), float(frost_weight), out.reshape(-1))
    return out


@numba.njit(cache=True)
def _blend_frost(x, crop, image_weight, frost_weight, out):
    """Per value, the reference's float64 ``clip(image_weight * x + frost_weight * crop, 0, 255)``.

    The two products and their sum in NumPy's order, then its ``clip`` comparisons (-0.0 and NaN
    kept), in one pass over the flat image and its texture window (uint8, the same size).
    """
    for m in range(x.shape[0]):
        v = image_weight * np.float64(x[m]) + frost_weight * np.float64(crop[m])
        v = 0.0 if v < 0.0 else v
        out[m] = 255.0 if v > 255.0 else v


# -------------------------------------------------------------------------------------- spatter

def liquid_layer(rng: np.random.RandomState, shape: tuple, *, loc: float, scale: float,
                 blur_sigma: float, threshold: float) -> np.ndarray:
    """Spatter's liquid layer: smoothed Gaussian noise with everything below ``threshold`` set to 0.

    Parameters
    ----------
    rng : numpy.random.RandomState
        Draws one ``normal(loc, scale, shape)``.
    shape : tuple of int
        (H, W) of the layer.
    loc, scale : float
        Mean and standard deviation of the noise.
    blur_sigma : float
        Standard deviation (pixels) of scikit-image's ``gaussian`` (mode 'nearest', truncate 4).
    threshold : float
        Values below it become 0 (dry).

    Returns
    -------
    numpy.ndarray
        float64, shape ``shape``: 0 where dry, else >= ``threshold``.
    """
    layer = gaussian(rng.normal(loc, scale, shape), sigma=blur_sigma)
    layer[layer < threshold] = 0
    return layer


def water_mask(liquid: np.ndarray, intensity: float) -> np.ndarray:
    """Spatter's water mask: embossed drop outlines from a thresholded liquid layer (water mode).

    Canny edges of the layer, distance to them (capped at 20 px), box blur, histogram equalisation,
    an emboss kernel and another box blur give a relief; it is weighted by the layer itself,
    normalised to a maximum of 1 and scaled by ``intensity``.

    Parameters
    ----------
    liquid : numpy.ndarray
        float, shape (H, W), values in [0, 1]: the output of :func:`liquid_layer`. It is quantised
        to uint8 by truncation of ``liquid * 255``.
    intensity : float
        Strength of the water (the mask's maximum).

    Returns
    -------
    numpy.ndarray
        float32, shape (H, W, 4), BGRA: the three colour channels are equal, values in
        [0, intensity]; alpha is ``intensity``. NaN everywhere if the layer is entirely dry (as in
        the reference).
    """
    layer = (liquid * 255).astype(np.uint8)
    distance = cv2.distanceTransform(255 - cv2.Canny(layer, *_CANNY_THRESHOLDS), cv2.DIST_L2, 5)
    _, distance = cv2.threshold(distance, _WATER_DISTANCE_CAP, _WATER_DISTANCE_CAP, cv2.THRESH_TRUNC)
    relief = cv2.equalizeHist(cv2.blur(distance, _BOX).astype(np.uint8))
    relief = cv2.blur(cv2.filter2D(relief, cv2.CV_8U, _WATER_EMBOSS), _BOX).astype(np.float32)
    mask = cv2.cvtColor(layer * relief, cv2.COLOR_GRAY2BGRA)
    mask /= np.max(mask, axis=(0, 1))
    mask *= np.float32(intensity)
    return mask


def add_water(u: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Tint an image with :data:`WATER_COLOUR` through a :func:`water_mask`.

    Parameters
    ----------
    u : numpy.ndarray
        float32, shape (H, W, 3), RGB in [0, 1].
    mask : numpy.ndarray
        float32, shape (H, W, 4), from :func:`water_mask` (alpha is ignored).

    Returns
    -------
    numpy.ndarray
        float32, shape (H, W, 3): ``clip(u + mask * colour, 0, 1) * 255``.
    """
    colour = (np.asarray(WATER_COLOUR) / 255.0).astype(np.float32)
    return np.clip(u + mask[..., :3] * colour, 0, 1) * np.float32(255)


def add_mud(u: np.ndarray, liquid: np.ndarray, threshold: float, spread: float) -> np.ndarray:
    """Spatter's mud (severities 4-5): smoothed wet area painted :data:`MUD_COLOUR`.

    Parameters
    ----------
    u : numpy.ndarray
        float32, shape (H, W, 3), RGB in [0, 1].
    liquid : numpy.ndarray
        float, shape (H, W): the output of :func:`liquid_layer`.
    threshold : float
        Pixels with ``liquid > threshold`` are wet.
    spread : float
        Standard deviation (pixels) of the Gaussian that smooths the wet area; smoothed coverage
        below 0.8 is dropped.

    Returns
    -------
    numpy.ndarray
        float32, shape (H, W, 3), values in [0, 255].
    """
    cover = gaussian((liquid > threshold).astype(np.float32), sigma=spread)
    cover[cover < _MUD_MIN] = 0
    cover = cover[..., np.newaxis]
    colour = (np.asarray(MUD_COLOUR) / 255.0).astype(np.float32) * cover
    return np.clip(u * (1 - cover) + colour, 0, 1) * np.float32(255)


def spatter(x: np.ndarray, rng: np.random.RandomState, *, loc: float, scale: float, blur_sigma: float,
            threshold: float, intensity: float, mud: bool) -> np.ndarray:
    """ImageNet-C spatter (extra): water drops (``mud=False``) or mud splashes (algorithms.md).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, shape (H, W, 3), RGB.
    rng : numpy.random.RandomState
        Draws one ``normal(loc, scale, (H, W))``, see :func:`liquid_layer`.
    loc, scale, blur_sigma, threshold : float
        The liquid layer, see :func:`liquid_layer`.
    intensity : float
        Water: strength of the mask (:func:`water_mask`). Mud: spread of the splashes in pixels
        (:func:`add_mud`).
    mud : bool
        False for water (severities 1-3), True for mud (4-5).

    Returns
    -------
    numpy.ndarray
        float32, shape (H, W, 3), values in [0, 255].
    """
    u = x.astype(np.float32) / np.float32(255)
    liquid = liquid_layer(rng, x.shape[:2], loc=loc, scale=scale, blur_sigma=blur_sigma,
                          threshold=threshold)
    if mud:
        return add_mud(u, liquid, threshold, intensity)
    return add_water(u, water_mask(liquid, intensity))


# ----------------------------------------------------------------------------------------- snow

def snow_layer(rng: np.random.RandomState, side: int, *, loc: float, scale: float, zoom: float,
               threshold: float) -> np.ndarray:
    """Snow flakes before the motion blur: zoomed Gaussian noise, thresholded, as 8-bit grey.

    Parameters
    ----------
    rng : numpy.random.RandomState
        Draws one ``normal(loc, scale, (side, side))``.
    side : int
        Side of the square layer in pixels.
    loc, scale : float
        Mean and standard deviation of the noise.
    zoom : float
        Magnification (>= 1) of :func:`transforms.geometry.clipped_zoom`; larger gives bigger flakes.
    threshold : float
        Values below it become 0 (no snow).

    Returns
    -------
    numpy.ndarray
        uint8, shape (side, side): ``clip(layer, 0, 1) * 255`` truncated.
    """
    layer = clipped_zoom(rng.normal(loc, scale, (side, side))[..., np.newaxis], zoom)
    flakes = np.empty((side, side), dtype=np.uint8)
    _threshold_to_uint8(layer.reshape(-1), float(threshold), flakes.reshape(-1))
    return flakes


@numba.njit(cache=True)
def _threshold_to_uint8(layer, threshold, out):
    """Per value, ``layer[layer < threshold] = 0``, then ``(clip(layer, 0, 1) * 255).astype(uint8)``.

    NumPy's comparisons (a value below the threshold becomes 0.0; the clip keeps NaN), then the
    float64 product truncated, for products in [0, 255].
    """
    for m in range(layer.shape[0]):
        v = layer[m]
        v = 0.0 if v < threshold else v
        v = 0.0 if v < 0.0 else v
        v = 1.0 if v > 1.0 else v
        out[m] = np.uint8(v * 255.0)


def add_snow(u: np.ndarray, flakes: np.ndarray, blend: float) -> np.ndarray:
    """Whiten an image and add blurred flakes twice (as drawn and rotated by 180 degrees).

    Parameters
    ----------
    u : numpy.ndarray
        float32, shape (H, W, 3), RGB in [0, 1].
    flakes : numpy.ndarray
        uint8, shape (H, W): the motion-blurred :func:`snow_layer`.
    blend : float
        Weight of the image against its whitened copy ``max(u, 1.5 * grey + 0.5)``.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W, 3), values in [0, 255].
    """
    u = np.ascontiguousarray(u)
    grey = cv2.cvtColor(u, cv2.COLOR_RGB2GRAY)
    out = np.empty(u.shape)
    _whiten_and_add_flakes(u, grey, flakes, np.float32(blend), np.float32(1 - blend), out)
    return out


@numba.njit(cache=True)
def _whiten_and_add_flakes(u, grey, flakes, image_weight, white_weight, out):
    """Per pixel, the reference's snow blend in its dtypes and order (float32, then float64):

    ``w = max(u, grey * 1.5 + 0.5)``; ``v = image_weight * u + white_weight * w``;
    ``out = clip(v + f / 255 + f_rot / 255, 0, 1) * 255``, with ``f`` the flakes at the pixel
    and ``f_rot`` those of the image rotated by 180 degrees.

    Row by row: the row's per-pixel terms (``grey * 1.5 + 0.5`` and the two flakes over 255),
    then each repeated at the pixel's three channels, then one pass over the row's contiguous
    values. The first and the last pass vectorise. ``u`` and ``out``: C-contiguous, (H, W, 3).
    """
    height, width = grey.shape
    whites, falling, turning = np.empty(width, np.float32), np.empty(width), np.empty(width)
    white, flake, turned = np.empty(3 * width, np.float32), np.empty(3 * width), np.empty(3 * width)
    rows, results = u.reshape(height, 3 * width), out.reshape(height, 3 * width)
    for i in range(height):
        shade, above, below = grey[i], flakes[i], flakes[height - 1 - i]
        for j in range(width):
            whites[j] = shade[j] * np.float32(1.5) + np.float32(0.5)
            falling[j] = above[j] / 255.0
            turning[j] = below[width - 1 - j] / 255.0
        for j in range(width):
            for k in range(3):
                white[3 * j + k], flake[3 * j + k], turned[3 * j + k] = whites[j], falling[j], turning[j]
        row, result = rows[i], results[i]
        for m in range(3 * width):
            value = row[m]
            whitened = value if value >= white[m] else white[m]
            blended = image_weight * value + white_weight * whitened
            total = (np.float64(blended) + flake[m]) + turned[m]
            result[m] = min(max(total, 0.0), 1.0) * 255


def snow(x: np.ndarray, rng: np.random.RandomState, *, loc: float, scale: float, zoom: float,
         threshold: float, blur_radius: float, blur_sigma: float, blend: float) -> np.ndarray:
    """ImageNet-C snow: motion-blurred flakes over a whitened image (algorithms.md).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, shape (H, H, 3), RGB.
    rng : numpy.random.RandomState
        Draws ``normal(loc, scale, (H, H))`` (:func:`snow_layer`), then the blur direction
        ``uniform(-135, -45)`` degrees.
    loc, scale, zoom, threshold : float
        The flakes, see :func:`snow_layer`.
    blur_radius, blur_sigma : float
        ImageMagick motion blur of the flakes (pixels), see :func:`transforms.motion.magick_motion_blur`.
    blend : float
        See :func:`add_snow`.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, H, 3), values in [0, 255].
    """
    u = x.astype(np.float32) / np.float32(255)
    flakes = snow_layer(rng, x.shape[0], loc=loc, scale=scale, zoom=zoom, threshold=threshold)
    flakes = magick_motion_blur(flakes, blur_radius, blur_sigma, rng.uniform(*SNOW_ANGLE_RANGE))
    return add_snow(u, flakes, blend)
