"""torchvision-style ten-crop geometry (docs/reference/algorithms.md, "Ten crops")."""
import io

import numpy as np
import pytest
from PIL import Image

from transforms.ten_crop import CENTRE_CROP, centre_crop, five_crop_boxes, normalise, ten_crops


def encoded(array, **options):
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG", **options)
    return buffer.getvalue()


def test_resize_truncates_and_crops_follow_five_crop_order():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (300, 451, 3), dtype=np.uint8)
    resized = np.asarray(Image.fromarray(image).resize((384, 256), Image.BILINEAR))  # int(256 * 451 / 300) = 384
    crops = ten_crops(encoded(image))
    assert crops.shape == (10, 224, 224, 3) and crops.dtype == np.uint8
    assert five_crop_boxes(384, 256, 224) == ((0, 0, 224, 224), (160, 0, 384, 224), (0, 32, 224, 256),
                                              (160, 32, 384, 256), (80, 16, 304, 240))
    for index, (left, top, right, bottom) in enumerate(five_crop_boxes(384, 256, 224)):
        assert np.array_equal(crops[index], resized[top:bottom, left:right])
    flipped = resized[:, ::-1]
    assert np.array_equal(crops[5], flipped[0:224, 0:224])
    assert np.array_equal(crops[5], resized[0:224, 160:384][:, ::-1])   # flip(top-right region)
    assert np.array_equal(centre_crop(encoded(image)), crops[CENTRE_CROP])


def test_exif_orientation_grey_and_alpha():
    grey = np.tile(np.arange(300, dtype=np.uint16)[:, None] % 256, (1, 260)).astype(np.uint8)
    image = Image.fromarray(grey)
    exif = Image.Exif()
    exif[0x0112] = 6                                   # rotate 90 degrees clockwise on display
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", exif=exif.tobytes())
    crops = ten_crops(buffer.getvalue())
    assert crops.shape == (10, 224, 224, 3)            # upright: 300 wide x 260 high
    rgba = np.zeros((240, 240, 4), dtype=np.uint8)
    rgba[..., 0] = 200
    assert ten_crops(encoded(rgba))[0, 0, 0].tolist() == [200, 0, 0]


def test_small_images_are_upscaled_and_normalise_matches_torchvision():
    tiny = np.full((84, 120, 3), 128, dtype=np.uint8)
    assert ten_crops(encoded(tiny)).shape == (10, 224, 224, 3)
    x = normalise(np.full((2, 224, 224, 3), 255, dtype=np.uint8), (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    assert x.shape == (2, 3, 224, 224) and x.dtype == np.float32 and np.allclose(x, 2.0)
    with pytest.raises(ValueError, match="cannot decode"):
        ten_crops(b"not an image")
