"""ImageNet-P perturbation sequences of every edition, and ``perturb_sequence``.

Every sequence function takes the RGB image its edition prepares (at 224: the image after
``Resize(256)`` and before any crop, the output of :func:`transforms.preprocess_uncropped`), a
``numpy.random.RandomState``, the keyword parameters of one row of the edition's schedule
(:data:`schemas.imagenet_p.PERTURBATIONS` at 224) and a ``view``, and returns the frames the
reference saves as lossless PNGs before its H.264 encode: uint8, shape (T, S, S, 3), S the side
of the view (224 by default, the 224 edition's ``CenterCrop(224)``). Geometric perturbations act
on the whole image and crop afterwards; the others
crop first (``docs/reference/algorithms.md``, "ImageNet-P").

Random draws follow the reference's ledger (algorithms.md), with one deliberate deviation:
Gaussian-noise frames draw from the given ``RandomState`` instead of torch's generator.

The other editions (inception 299, tinyimagenet 64, imagenet64 64, cifar 32; algorithms.md,
"Editions of ImageNet-P")
run the same functions with the ``view`` argument set where 224 applies ``CenterCrop(224)``, on the
image their table's :class:`schemas.imagenet_p_editions.Arrangement` prepares, with their own
schedules (``perturb_sequence(..., edition=NAME)``).
"""
from __future__ import annotations

import cv2
import numpy as np
from skimage.filters import gaussian

from schemas.imagenet_c import IMAGE_SIZE
from schemas.imagenet_p import PERTURBATIONS, perturbation_names_text
from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.imagenet_p_editions import PEdition

from .affine import affine, tilt as tilt_image
from .color import hsv2rgb, rgb2hsv
from .motion import magick_motion_blur
from .preprocess import RESIZE_SHORT_SIDE, center_crop
from .rng import check_rng
from .views_p import apply_steps, view_function
from .weather import add_water, liquid_layer, snow_layer, water_mask

__all__ = ["gaussian_noise", "shot_noise", "speckle_noise", "motion_blur", "zoom_blur", "gaussian_blur", "snow",
           "drip", "spatter", "brightness", "translate", "rotate", "scale", "shear", "tilt", "FUNCTIONS",
           "check_uncropped_image", "check_edition_input", "perturb_sequence"]


def _crop(image: np.ndarray) -> np.ndarray:
    """torchvision ``CenterCrop(224)`` of the resized image: the 224 edition's default ``view``."""
    return center_crop(image, IMAGE_SIZE)


def _sequence(frames) -> np.ndarray:
    """Stack S x S x 3 frames into one contiguous uint8 (T, S, S, 3) array."""
    return np.ascontiguousarray(np.stack(list(frames)).astype(np.uint8, copy=False))


def _to_frame(u: np.ndarray) -> np.ndarray:
    """The reference's ``np.uint8(255 * u)``: truncation toward zero, no clipping."""
    return (255 * u).astype(np.uint8)


# ---------------------------------------------------------------------------------------- noise

def gaussian_noise(image: np.ndarray, rng: np.random.RandomState, *, sigma: float, frames: int,
                   view=_crop) -> np.ndarray:
    """Clean crop, then independent Gaussian-noise copies, in torch-like float32 maths.

    Frame 0 is the crop; frame i >= 1 is ``trunc(255 * clip(t + sigma * n_i, 0, 1))`` with
    ``t = crop / 255`` as a CHW float32 tensor (torchvision ``ToTensor``) and ``n_i`` a
    standard-normal (3, S, S) draw cast to float32. The reference used torch's
    ``randn_like``; this draws ``rng.standard_normal`` instead (the one deliberate deviation).

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Draws ``standard_normal((3, S, S))`` once per frame 1..frames-1.
    sigma : float
        Noise standard deviation in units of the full range (1 = 255 levels), >= 0.
    frames : int
        Sequence length, >= 1.

    Returns
    -------
    numpy.ndarray
        uint8, shape (frames, S, S, 3), S the side of ``view``.
    """
    x = view(image)
    tensor = x.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    sigma32 = np.float32(sigma)

    def noisy():
        noise = rng.standard_normal(tensor.shape).astype(np.float32)
        t = np.clip(tensor + sigma32 * noise, np.float32(0), np.float32(1))
        return (t * np.float32(255)).astype(np.uint8).transpose(1, 2, 0)

    return _sequence([x] + [noisy() for _ in range(1, frames)])


def shot_noise(image: np.ndarray, rng: np.random.RandomState, *, photons: float, frames: int,
               view=_crop) -> np.ndarray:
    """Clean crop, then independent Poisson (photon-count) copies.

    Frame i >= 1 is ``trunc(255 * clip(Poisson(u * photons) / photons, 0, 1))``, u = crop / 255.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Draws ``poisson(u * photons)`` over (S, S, 3) once per frame 1..frames-1.
    photons : float
        Photons at full intensity, > 0; fewer is noisier.
    frames : int
        Sequence length, >= 1.

    Returns
    -------
    numpy.ndarray
        uint8, shape (frames, S, S, 3), S the side of ``view``.
    """
    x = view(image)
    lam = x / 255. * photons
    return _sequence([x] + [_to_frame(np.clip(rng.poisson(lam) / photons, 0, 1))
                            for _ in range(1, frames)])


def speckle_noise(image: np.ndarray, rng: np.random.RandomState, *, sigma: float, frames: int,
                  view=_crop) -> np.ndarray:
    """Clean crop, then independent multiplicative-noise copies.

    Frame i >= 1 is ``trunc(255 * clip(u + u * n_i, 0, 1))``, u = crop / 255, n_i ~ N(0, sigma).

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Draws ``normal(0, sigma, (S, S, 3))`` once per frame 1..frames-1.
    sigma : float
        Standard deviation of the relative noise, >= 0.
    frames : int
        Sequence length, >= 1.

    Returns
    -------
    numpy.ndarray
        uint8, shape (frames, S, S, 3), S the side of ``view``.
    """
    x = view(image)
    u = x / 255.
    return _sequence([x] + [_to_frame(np.clip(u + u * rng.normal(size=u.shape, scale=sigma), 0, 1))
                            for _ in range(1, frames)])


# ----------------------------------------------------------------------------------------- blur

def motion_blur(image: np.ndarray, rng: np.random.RandomState, *, radius: float, sigma: float,
                angles, view=_crop) -> np.ndarray:
    """ImageMagick motion blur of the crop, one blur direction per frame. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    radius, sigma : float
        Kernel radius and sigma in pixels (:func:`transforms.motion.magick_motion_blur`).
    angles : sequence of float
        Blur direction of each frame, degrees (0 = towards +x, 90 = down).

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(angles), S, S, 3), S the side of ``view``.
    """
    x = view(image)
    return _sequence(magick_motion_blur(x, radius, sigma, angle) for angle in angles)


def zoom_blur(image: np.ndarray, rng: np.random.RandomState, *, scales, view=_crop) -> np.ndarray:
    """Running mean of ever stronger zooms: frame i averages zoom layers 0..i. No draws.

    Layer k is ``CenterCrop(affine(image, scale=scales[k]))`` (bilinear, torchvision 0.2.x); the
    mean is accumulated in float32 as torchvision tensors (``ToTensor``), and each frame is
    ``ToPILImage(sum / (i + 1))``, a truncation of ``255 * mean``.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    scales : sequence of float
        Zoom factor of each layer, > 0; ``scales[0] == 1`` makes frame 0 the clean crop.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(scales), S, S, 3), S the side of ``view``.
    """
    total = None
    frames = []
    for count, scale in enumerate(scales, start=1):
        layer = view(affine(image, scale=scale, resample="bilinear"))
        if total is None:
            total = np.zeros(layer.shape, dtype=np.float32)
        total += layer.astype(np.float32) / np.float32(255)
        frames.append((total / np.float32(count) * np.float32(255)).astype(np.uint8))
    return _sequence(frames)


def gaussian_blur(image: np.ndarray, rng: np.random.RandomState, *, sigmas, truncate: float,
                  view=_crop) -> np.ndarray:
    """Gaussian blur of the crop with a growing sigma. No draws.

    Frame i is ``trunc(255 * gaussian(crop / 255, sigmas[i]))`` (scikit-image, channels apart,
    mode 'nearest').

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    sigmas : sequence of float
        Standard deviation of each frame's Gaussian, pixels, > 0.
    truncate : float
        Kernel radius in standard deviations.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(sigmas), S, S, 3), S the side of ``view``.
    """
    u = view(image) / 255.
    return _sequence(_to_frame(gaussian(u, sigma=sigma, channel_axis=-1, truncate=truncate))
                     for sigma in sigmas)


# -------------------------------------------------------------------------------------- weather

def snow(image: np.ndarray, rng: np.random.RandomState, *, loc: float, scale: float, zoom: float,
         threshold: float, blur_radius: float, blur_sigma: float, angles, blend: float, view=_crop) -> np.ndarray:
    """One snow layer, motion-blurred in a turning direction, over a whitened crop.

    The flakes are drawn once (:func:`transforms.weather.snow_layer`); frame i blurs them with
    ImageMagick at ``angles[i]`` and adds them, and their 180-degree rotation, to
    ``blend * u + (1 - blend) * max(u, 1.5 * grey + 0.5)`` (u = crop / 255 in float64, grey in
    float32 as OpenCV computes it), as the reference's snow frames.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Draws ``normal(loc, scale, (S, S))`` once.
    loc, scale, zoom, threshold : float
        The flakes, see :func:`transforms.weather.snow_layer`.
    blur_radius, blur_sigma : float
        ImageMagick motion blur of the flakes, pixels.
    angles : sequence of float
        Blur direction of each frame, degrees.
    blend : float
        Weight of the crop against its whitened copy, in [0, 1].

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(angles), S, S, 3), S the side of ``view``.
    """
    u = view(image) / 255.
    flakes = snow_layer(rng, u.shape[0], loc=loc, scale=scale, zoom=zoom, threshold=threshold)
    grey = cv2.cvtColor(np.float32(u), cv2.COLOR_RGB2GRAY)[..., np.newaxis]
    base = blend * u + (1 - blend) * np.maximum(u, grey * 1.5 + 0.5)

    def frame(angle):
        layer = (magick_motion_blur(flakes, blur_radius, blur_sigma, angle) / 255.)[..., np.newaxis]
        return _to_frame(np.clip(base + layer + np.rot90(layer, k=2), 0, 1))

    return _sequence(frame(angle) for angle in angles)


def drip(liquid: np.ndarray, kernel) -> np.ndarray:
    """Let a liquid layer run down: ``np.convolve(column, kernel, mode='same')`` on every column.

    With the 224 kernel (0.05, 0.1, 0.15, 0.7) row r becomes
    ``0.05 L[r+1] + 0.1 L[r] + 0.15 L[r-1] + 0.7 L[r-2]`` (zeros outside), about 2 px down per
    call. The products are summed in NumPy's order (kernel reversed, top row first), so the
    result equals the reference's ``np.apply_along_axis(np.convolve, ...)`` bit for bit.

    Parameters
    ----------
    liquid : numpy.ndarray
        float64, shape (H, W), H >= len(kernel).
    kernel : sequence of float
        Convolution weights; ``kernel[0]`` weighs the row below.

    Returns
    -------
    numpy.ndarray
        float64, shape (H, W).
    """
    taps = len(kernel)
    height = liquid.shape[0]
    below = (taps - 1) // 2  # 'same' keeps the centre, so this many taps reach below row r
    padded = np.pad(liquid, ((taps - 1 - below, below), (0, 0)))
    out = np.zeros_like(liquid)
    for j, weight in enumerate(reversed(kernel)):
        out += padded[j:j + height] * weight
    return out


def spatter(image: np.ndarray, rng: np.random.RandomState, *, loc: float, scale: float,
            blur_sigma: float, threshold: float, intensity: float, drip_kernel: tuple,
            frames: int, view=_crop) -> np.ndarray:
    """Water drops that run down the crop: one liquid layer, dripped after every frame.

    Frame i tints the crop with the water mask of the layer (ImageNet-C spatter, water mode;
    :func:`transforms.weather.water_mask`), then the layer drips (:func:`drip`), as the
    reference's spatter frames. Frame 0 already shows spatter.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Draws ``normal(loc, scale, (S, S))`` once (:func:`transforms.weather.liquid_layer`).
    loc, scale, blur_sigma, threshold : float
        The liquid layer, see :func:`transforms.weather.liquid_layer`.
    intensity : float
        Strength of the water mask.
    drip_kernel : sequence of float
        Kernel of the per-frame drip, see :func:`drip`.
    frames : int
        Sequence length, >= 1.

    Returns
    -------
    numpy.ndarray
        uint8, shape (frames, S, S, 3), S the side of ``view``.
    """
    x = view(image)
    u = x.astype(np.float32) / np.float32(255)
    liquid = liquid_layer(rng, x.shape[:2], loc=loc, scale=scale, blur_sigma=blur_sigma,
                          threshold=threshold)
    out = []
    for _ in range(frames):
        out.append(add_water(u, water_mask(liquid, intensity)).astype(np.uint8))
        liquid = drip(liquid, drip_kernel)
    return _sequence(out)


def brightness(image: np.ndarray, rng: np.random.RandomState, *, deltas, view=_crop) -> np.ndarray:
    """Shift the HSV value of the crop by a per-frame offset. No draws.

    Frame i is ``trunc(255 * hsv2rgb(h, s, clip(v + deltas[i], 0, 1)))`` with scikit-image's HSV
    conversions; the delta-0 frame is not the identity (the round trip truncates).

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    deltas : sequence of float
        Value offset of each frame, in units of the full range.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(deltas), S, S, 3), S the side of ``view``.
    """
    hsv = rgb2hsv(view(image) / 255.)

    def frame(delta):
        shifted = hsv.copy()
        shifted[..., 2] = np.clip(shifted[..., 2] + delta, 0, 1)
        return _to_frame(hsv2rgb(shifted))

    return _sequence(frame(delta) for delta in deltas)


# ------------------------------------------------------------------------------------- geometry

def translate(image: np.ndarray, rng: np.random.RandomState, *, shifts, resample: str, view=_crop) -> np.ndarray:
    """Shift the whole image horizontally (black fill), then crop. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    shifts : sequence of float
        Horizontal shift of each frame in pixels; positive moves content right.
    resample : {'nearest', 'bilinear'}
        Pillow filter of :func:`transforms.affine.affine`.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(shifts), S, S, 3), S the side of ``view``.
    """
    return _sequence(view(affine(image, translate=(shift, 0), resample=resample)) for shift in shifts)


def rotate(image: np.ndarray, rng: np.random.RandomState, *, angles, resample: str, view=_crop) -> np.ndarray:
    """Rotate the whole image about its centre (black fill), then crop. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    angles : sequence of float
        Rotation of each frame in degrees, positive clockwise on screen.
    resample : {'nearest', 'bilinear'}
        Pillow filter of :func:`transforms.affine.affine`.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(angles), S, S, 3), S the side of ``view``.
    """
    return _sequence(view(affine(image, angle=angle, resample=resample)) for angle in angles)


def scale(image: np.ndarray, rng: np.random.RandomState, *, scales, resample: str, view=_crop) -> np.ndarray:
    """Zoom the whole image about its centre (black fill), then crop. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    scales : sequence of float
        Zoom factor of each frame, > 0 (below 1 shrinks).
    resample : {'nearest', 'bilinear'}
        Pillow filter of :func:`transforms.affine.affine`.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(scales), S, S, 3), S the side of ``view``.
    """
    return _sequence(view(affine(image, scale=factor, resample=resample)) for factor in scales)


def shear(image: np.ndarray, rng: np.random.RandomState, *, shears, resample: str, view=_crop) -> np.ndarray:
    """Shear the whole image about its centre (torchvision 0.2.x, black fill), then crop. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    shears : sequence of float
        Shear angle of each frame in degrees, in (-90, 90).
    resample : {'nearest', 'bilinear'}
        Pillow filter of :func:`transforms.affine.affine`.

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(shears), S, S, 3), S the side of ``view``.
    """
    return _sequence(view(affine(image, shear=angle, resample=resample)) for angle in shears)


def tilt(image: np.ndarray, rng: np.random.RandomState, *, angles, view=_crop) -> np.ndarray:
    """Tilt the whole image in 3-D about both axes (perspective, black fill), then crop. No draws.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (H, W, 3): the image the edition prepares (at 224, short side 256).
    rng : numpy.random.RandomState
        Unused.
    angles : sequence of float
        Tilt of each frame in degrees (:func:`transforms.affine.tilt_homography`).

    Returns
    -------
    numpy.ndarray
        uint8, shape (len(angles), S, S, 3), S the side of ``view``.
    """
    return _sequence(view(tilt_image(image, angle)) for angle in angles)


#: name -> sequence function(image, rng, **params), in the order of the table.
FUNCTIONS = {
    "gaussian_noise": gaussian_noise,
    "shot_noise": shot_noise,
    "motion_blur": motion_blur,
    "zoom_blur": zoom_blur,
    "snow": snow,
    "brightness": brightness,
    "translate": translate,
    "rotate": rotate,
    "tilt": tilt,
    "scale": scale,
    "speckle_noise": speckle_noise,
    "gaussian_blur": gaussian_blur,
    "spatter": spatter,
    "shear": shear,
}
assert tuple(FUNCTIONS) == tuple(PERTURBATIONS), "FUNCTIONS must follow the table's order"


def check_uncropped_image(image: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``image`` is a uint8 H x W x 3 array with short side 256."""
    if (not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3
            or image.shape[2] != 3 or min(image.shape[:2]) != RESIZE_SHORT_SIDE):
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image)
        raise ValueError(f"image must be a uint8 (H, W, 3) array with min(H, W) = {RESIZE_SHORT_SIDE} "
                         f"(use transforms.preprocess_uncropped); got {got}")


def check_edition_input(image: np.ndarray, edition: PEdition) -> None:
    """Raise ``ValueError`` unless ``image`` fits what ``edition``'s sequences receive."""
    ok = isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    if edition.input == "cifar32":
        ok = ok and image.shape[:2] == (edition.frame_size, edition.frame_size)
        wanted = f"a uint8 ({edition.frame_size}, {edition.frame_size}, 3) array (a CIFAR test image)"
    else:
        ok = ok and min(image.shape[:2]) >= 1
        wanted = "a uint8 (H, W, 3) RGB array at full resolution (no Resize(256))"
    if not ok:
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image)
        raise ValueError(f"image of edition {edition.name} must be {wanted}; got {got}")


def perturb_sequence(image: np.ndarray, name: str, rng: np.random.RandomState,
                     difficulty: int = 1, edition: str = DEFAULT_EDITION) -> np.ndarray:
    """The frames of ImageNet-P perturbation ``name`` at ``difficulty`` for one image.

    Parameters
    ----------
    image : numpy.ndarray
        ``edition='imagenet'`` (224, default): uint8, shape (H, W, 3), RGB after ``Resize(256)``
        and before the crop (the output of :func:`transforms.preprocess_uncropped`).
        ``'inception'``, ``'tinyimagenet'``, ``'imagenet64'``: the RGB image at full resolution
        (no resize: these editions make their views inside the sequence). ``'cifar'``: the
        32x32x3 test image.
    name : str
        One of :data:`transforms.PERTURBATIONS` (e.g. ``'rotate'``).
    rng : numpy.random.RandomState
        Consumed exactly as the reference consumes NumPy's global stream (Gaussian noise draws
        its frames from it too, in every edition: the reference used torch's generator);
        unused by the deterministic perturbations.
    difficulty : int
        1, 2 or 3 for the noise perturbations; 1 for the others.
    edition : str
        A name of :data:`transforms.EDITIONS` (its ``p`` facts: :mod:`schemas.imagenet_p_editions`).

    Returns
    -------
    numpy.ndarray
        uint8, shape (T, S, S, 3), C-contiguous: the frames the reference writes before its
        H.264 encode (or into CIFAR-10-P's ``.npy``). S = 224, 299, 64 or 32; T = 31 except
        translate (41 at 224/299, 16 for cifar) and cifar's motion_blur (21). The 64 editions'
        motion_blur frames keep the image's aspect (64 x int(64 * long / short)).

    Examples
    --------
    >>> import numpy as np, transforms
    >>> x = np.arange(32 * 32 * 3, dtype=np.uint8).reshape(32, 32, 3)  # a 32x32 test image
    >>> frames = transforms.perturb_sequence(x, 'translate', np.random.RandomState(0), edition='cifar')
    >>> frames.shape, frames.dtype
    ((16, 32, 32, 3), dtype('uint8'))
    >>> noisy = transforms.perturb_sequence(x, 'shot_noise', np.random.RandomState(0), 2, edition='cifar')
    >>> noisy.shape, bool((noisy[0] == x).all())  # frame 0 of a noise sequence is the clean image
    ((31, 32, 32, 3), True)
    """
    if name not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {name!r}; valid names: {perturbation_names_text()}")
    table = get_edition(edition).p
    spec = table.perturbations[name]
    if isinstance(difficulty, bool) or not isinstance(difficulty, (int, np.integer)) \
            or difficulty not in spec.difficulties:
        raise ValueError(f"difficulty of {name} must be one of {list(spec.difficulties)}, "
                         f"got {difficulty!r}")
    check_rng(rng)
    if table.input == "resized256":  # the 224 edition: the functions' own CenterCrop(224)
        check_uncropped_image(image)
        return FUNCTIONS[name](image, rng, **spec.params(int(difficulty)))
    check_edition_input(image, table)
    views = table.arrangement_of(name)
    frames = FUNCTIONS[name](apply_steps(image, views.base), rng, view=view_function(views.view),
                             **spec.params(int(difficulty)))
    return _sequence(apply_steps(frame, views.after) for frame in frames) if views.after else frames
