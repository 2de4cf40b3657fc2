"""magick_motion_blur against ImageMagick itself, called the way the reference calls it.

The reference encodes the image as PNG, loads it with Wand, calls ``MagickMotionBlurImage``
through ctypes, writes a PNG blob and decodes it with OpenCV. These tests do the same and
require bit-exact equality. They skip when Wand or the ImageMagick library cannot be loaded
(``apt-get install libmagickwand-6.q16-6``).
"""
import ctypes
import io

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data

from schemas.imagenet_c import CORRUPTIONS
from transforms.motion import magick_motion_blur

# (radius, sigma) pairs of ImageNet-C motion_blur and snow, plus those of ImageNet-P
# (224 motion blur 10/3, snow 14/4; 299 motion blur 13/3; 64 snow 10/2.5; CIFAR 6/1.8 and 10/2)
# and a non-integer radius.
PAIRS = sorted(
    {(p["radius"], p["sigma"]) for p in (CORRUPTIONS["motion_blur"].params(s) for s in range(1, 6))}
    | {(p["blur_radius"], p["blur_sigma"]) for p in (CORRUPTIONS["snow"].params(s) for s in range(1, 6))}
    | {(10, 3), (14, 4), (13, 3), (10, 2.5), (6, 1.8), (10, 2), (2.5, 1)})

ANGLES = (-180, -150.3, -135, -90, -60.25, -45, -7.5, 0, 1e-3, 30, 45, 89.9, 90, 123.4, 180)


def _images():
    rs = np.random.RandomState(1234)
    grey_rgb = np.repeat(data.camera()[200:264, 150:230, None], 3, axis=2)  # ImageMagick writes a grey PNG
    return {
        "random_rgb": rs.randint(0, 256, size=(48, 56, 3)).astype(np.uint8),
        "random_grey": rs.randint(0, 256, size=(56, 48)).astype(np.uint8),
        "extremes_rgb": (rs.rand(40, 40, 3) < 0.5).astype(np.uint8) * 255,
        "chelsea": data.chelsea()[60:140, 150:246],
        "coffee": data.coffee()[150:214, 250:330],
        "camera": data.camera()[100:180, 200:280],
        "grey_rgb": grey_rgb,
    }


@pytest.fixture(scope="module")
def magick_blur():
    """The reference's Wand call: PNG in, MagickMotionBlurImage, PNG out, cv2 decode."""
    try:
        from wand.api import library
        from wand.image import Image as WandImage
    except ImportError as error:
        pytest.skip(f"ImageMagick / Wand cannot be loaded ({error}); "
                    "install it with `apt-get install libmagickwand-6.q16-6`")
    library.MagickMotionBlurImage.argtypes = (ctypes.c_void_p, ctypes.c_double, ctypes.c_double,
                                              ctypes.c_double)

    def blur(image, radius, sigma, angle):
        png = io.BytesIO()
        Image.fromarray(image).save(png, format="PNG")
        with WandImage(blob=png.getvalue()) as wand_image:
            library.MagickMotionBlurImage(wand_image.wand, radius, sigma, angle)
            blob = wand_image.make_blob()
        out = cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_UNCHANGED)
        if out.ndim == 2:  # a grey PNG: all pixels grey
            return out if image.ndim == 2 else np.stack([out] * 3, axis=-1)
        return out[..., ::-1]  # BGR -> RGB

    return blur


@pytest.mark.parametrize("radius,sigma", PAIRS, ids=[f"r{r}-s{s}" for r, s in PAIRS])
def test_matches_imagemagick(magick_blur, radius, sigma):
    mismatches = []
    for name, image in _images().items():
        for angle in ANGLES:
            expected = magick_blur(image, radius, sigma, angle)
            got = magick_motion_blur(image, radius, sigma, angle)
            assert got.dtype == np.uint8 and got.shape == image.shape == expected.shape
            diff = np.abs(got.astype(np.int16) - expected)
            if diff.any():
                mismatches.append(f"{name} angle {angle}: max {diff.max()}, {np.count_nonzero(diff)} values")
    assert not mismatches, "; ".join(mismatches)


def test_matches_imagemagick_on_random_draws(magick_blur):
    """The corruption's own angle range, at uniformly drawn angles, on a full 224 photo."""
    rs = np.random.RandomState(7)
    image = np.ascontiguousarray(data.astronaut()[100:324, 150:374])
    for radius, sigma in PAIRS[:3]:
        angle = rs.uniform(-45, 45)
        np.testing.assert_array_equal(magick_motion_blur(image, radius, sigma, angle),
                                      magick_blur(image, radius, sigma, angle))

