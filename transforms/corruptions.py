"""``corrupt``: one ImageNet-C corruption at one severity, parameters read from the edition's table."""
from __future__ import annotations

import numpy as np

from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES, corruption_names_text

from . import blur, color, digital, noise, weather
from .rng import CorruptionRng, check_rng

__all__ = ["FUNCTIONS", "check_image", "check_severity", "to_uint8", "corrupt"]

#: name -> function(x, rng, **params). Every function takes the NxNx3 uint8 image and a
#: ``numpy.random.RandomState`` (or a :class:`transforms.rng.FastRandomState`) and returns the
#: value the reference hands to ``np.uint8``.
FUNCTIONS = {
    "gaussian_noise": noise.gaussian_noise,
    "shot_noise": noise.shot_noise,
    "impulse_noise": noise.impulse_noise,
    "defocus_blur": blur.defocus_blur,
    "glass_blur": blur.glass_blur,
    "motion_blur": blur.motion_blur,
    "zoom_blur": blur.zoom_blur,
    "snow": weather.snow,
    "frost": weather.frost,
    "fog": weather.fog,
    "brightness": color.brightness,
    "contrast": digital.contrast,
    "elastic_transform": digital.elastic_transform,
    "pixelate": digital.pixelate,
    "jpeg_compression": digital.jpeg_compression,
    "speckle_noise": noise.speckle_noise,
    "gaussian_blur": blur.gaussian_blur,
    "spatter": weather.spatter,
    "saturate": color.saturate,
}
assert tuple(FUNCTIONS) == tuple(CORRUPTIONS), "FUNCTIONS must follow the table's order"


def check_image(image: np.ndarray, size: int) -> None:
    """Raise ``ValueError`` unless ``image`` is a uint8 ``size x size x 3`` array."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.shape != (size, size, 3):
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image)
        raise ValueError(f"image must be a uint8 array of shape ({size}, {size}, 3) "
                         f"(use transforms.preprocess first); got {got}")


def check_severity(severity) -> int:
    """Return ``severity`` as an int, or raise ``ValueError`` naming the valid values."""
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {list(SEVERITIES)}, got {severity!r}")
    return int(severity)


def to_uint8(value) -> np.ndarray:
    """The driver's ``np.uint8(...)``: floats truncate toward zero, uint8 passes through."""
    array = np.asarray(value)
    return array if array.dtype == np.uint8 else array.astype(np.uint8)


def corrupt(image: np.ndarray, name: str, severity: int, rng: CorruptionRng,
            edition: str = DEFAULT_EDITION) -> np.ndarray:
    """Apply ImageNet-C corruption ``name`` at ``severity`` to a preprocessed image.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (N, N, 3), RGB, N the edition's side (224 by default): the output of
        ``transforms.preprocess(..., edition=edition)``.
    name : str
        One of :data:`transforms.CORRUPTIONS` (e.g. ``'gaussian_noise'``).
    severity : int
        1..5.
    rng : numpy.random.RandomState or transforms.FastRandomState
        Consumed exactly as the reference consumes NumPy's global stream (a ``RandomState``
        reproduces the reference; see :func:`transforms.make_rng` for the two modes).
    edition : str
        One of :data:`transforms.EDITIONS`: ``'imagenet'`` (224, default), ``'inception'`` (299),
        ``'tinyimagenet'`` and ``'imagenet64'`` (64), ``'cifar'`` (32); it chooses the severity
        table and the image side.

    Returns
    -------
    numpy.ndarray
        uint8, shape (N, N, 3): what the reference driver writes before JPEG or .npy saving.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> x = np.arange(32 * 32 * 3, dtype=np.uint8).reshape(32, 32, 3)  # a 32x32 test image
    >>> y = transforms.corrupt(x, 'gaussian_noise', 3, np.random.RandomState(0), edition='cifar')
    >>> y.shape, y.dtype
    ((32, 32, 3), dtype('uint8'))
    >>> np.array_equal(y, transforms.corrupt(x, 'gaussian_noise', 3, np.random.RandomState(0), edition='cifar'))
    True
    >>> int(np.abs(y.astype(int) - x).mean())
    15
    >>> transforms.corrupt(x, 'contrast', 5, np.random.RandomState(0), edition='cifar')[0, 0].tolist()
    [108, 108, 108]
    """
    tables = get_edition(edition)
    if name not in CORRUPTIONS:
        raise ValueError(f"unknown corruption {name!r}; valid names: {corruption_names_text()}")
    severity = check_severity(severity)
    check_image(image, tables.image_size)
    check_rng(rng)
    out = to_uint8(FUNCTIONS[name](image, rng, **tables.c.corruptions[name].params(severity)))
    return np.ascontiguousarray(out)
