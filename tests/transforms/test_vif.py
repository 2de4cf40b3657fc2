"""transforms.vif / delta_v against the test vectors of the VCR spec (sections 6.1, 6.2, 6.4).

The spec prints its tables to 6 decimals, so those rows are checked to half a unit of the last
printed digit; the one value printed to 10 digits (section 6.2) is checked to 1e-9.
"""
import hashlib

import numpy as np
import pytest
import scipy.ndimage
from skimage import data

import transforms
from schemas.imagenet_c import CORRUPTIONS
from transforms.vif import MIN_SIDE, VifReference, delta_v, grey, vif, vif_grey

PRINTED = 5e-7 + 1e-12  # half a unit in the 6th decimal


def _blur(x, sigma):
    return np.clip(scipy.ndimage.gaussian_filter(x.astype(np.float64), sigma=(sigma, sigma, 0)), 0, 255).astype(np.uint8)


def _noise(x, c):
    u = x / 255.0 + np.random.RandomState(0).normal(size=x.shape, scale=c)
    return (np.clip(u, 0, 1) * 255).astype(np.uint8)


def _contrast(x, c):
    u = x / 255.0
    m = u.mean(axis=(0, 1), keepdims=True)
    return (np.clip((u - m) * c + m, 0, 1) * 255).astype(np.uint8)


DISTORTIONS = {"blur1": lambda x: _blur(x, 1), "blur3": lambda x: _blur(x, 3), "noise0.08": lambda x: _noise(x, .08),
               "noise0.38": lambda x: _noise(x, .38), "contrast0.3": lambda x: _contrast(x, .3),
               "contrast1.5": lambda x: _contrast(x, 1.5)}

# (input, distortion) -> (SHA-256 prefix of the distorted grey image, VIF), spec section 6.1.
TABLE_6_1 = {
    ("full", "blur1"): ("508ffb9150e5c05a", 0.812644), ("full", "blur3"): ("2ef6aac6d53fa0b4", 0.419256),
    ("full", "noise0.08"): ("5b51c8da2bfeedda", 0.472202), ("full", "noise0.38"): ("cab1819b6095e5e9", 0.185472),
    ("full", "contrast0.3"): ("ba0e83fd8cc141be", 0.598175), ("full", "contrast1.5"): ("504396f1337aa56b", 0.987707),
    ("crop224", "blur1"): ("2ca9a52ea29de9eb", 0.768726), ("crop224", "blur3"): ("7e0344963ca8ba96", 0.356720),
    ("crop224", "noise0.08"): ("6ee4b5dccb433531", 0.472554), ("crop224", "noise0.38"): ("50682c14b50748e9", 0.181041),
    ("crop224", "contrast0.3"): ("370c289cc34898b1", 0.611641),
    ("crop224", "contrast1.5"): ("9f4b0b1d6651c3c5", 0.889306),
}
GREY_SHA256 = {"full": "cd822d0a5b86379f987b3120f75a6e7c7be64e292b25a23bd858af5c9db1fed6",
               "crop224": "9f7d8981d2b94d8cd98431205722b96240a7e5f94dd781debef6a0b16ebb8888"}

# Delta v of the ImageNet-C outputs of chelsea's crop, severities 1..5 (spec section 6.4).
TABLE_6_4 = {
    "brightness": (0.123820, 0.218005, 0.414497, 0.626257, 0.691872),
    "contrast": (0.303745, 0.388359, 0.500289, 0.666215, 0.789602),
    "defocus_blur": (0.412518, 0.526552, 0.683855, 0.777015, 0.843948),
    "elastic_transform": (0.960428, 0.970901, 0.809593, 0.893000, 0.876370),
    "fog": (0.552668, 0.593096, 0.692516, 0.794670, 0.920437),
    "frost": (0.446773, 0.737720, 0.911367, 0.643223, 0.875221),
    "gaussian_blur": (0.231343, 0.494787, 0.643623, 0.734457, 0.836174),
    "gaussian_noise": (0.522191, 0.610805, 0.690357, 0.755267, 0.805106),
    "glass_blur": (0.719325, 0.691136, 0.859756, 0.840874, 0.861847),
    "impulse_noise": (0.553711, 0.643187, 0.676928, 0.754583, 0.798668),
    "jpeg_compression": (0.398050, 0.476046, 0.516370, 0.611577, 0.672049),
    "motion_blur": (0.710168, 0.817850, 0.869506, 0.932033, 0.929881),
    "pixelate": (0.163914, 0.172761, 0.317241, 0.423812, 0.476942),
    "saturate": (0.427075, 0.482372, 0.546794, 0.654932, 0.655832),
    "shot_noise": (0.537300, 0.628595, 0.694279, 0.766660, 0.802350),
    "snow": (0.730249, 0.795343, 0.812273, 0.877635, 0.802962),
    "spatter": (0.132630, 0.755391, 0.794368, 0.828807, 0.857351),
    "speckle_noise": (0.480783, 0.536787, 0.658943, 0.712582, 0.746350),
    "zoom_blur": (0.814363, 0.855108, 0.867935, 0.884638, 0.891309),
}


@pytest.fixture(scope="module")
def inputs():
    full = data.chelsea()
    return {"full": full, "crop224": transforms.preprocess(full)}


def test_grey_inputs_are_the_specs(inputs):
    for name, image in inputs.items():
        assert hashlib.sha256(grey(image).tobytes()).hexdigest() == GREY_SHA256[name]


@pytest.mark.parametrize("name", ["full", "crop224"])
def test_identity_is_one(inputs, name):
    # 1 up to float rounding of g = s_xy / (s_x^2 + 1e-15): about 2e-15 here
    assert abs(vif(inputs[name], inputs[name].copy()) - 1.0) <= 1e-12
    assert abs(delta_v(inputs[name], inputs[name])) <= 1e-12


@pytest.mark.parametrize("name,distortion", sorted(TABLE_6_1), ids=[f"{a}-{b}" for a, b in sorted(TABLE_6_1)])
def test_table_6_1(inputs, name, distortion):
    prefix, expected = TABLE_6_1[name, distortion]
    distorted = DISTORTIONS[distortion](inputs[name])
    assert hashlib.sha256(grey(distorted).tobytes()).hexdigest()[:16] == prefix
    value = vif(inputs[name], distorted)
    assert abs(value - expected) <= PRINTED
    assert VifReference(inputs[name])(distorted) == value  # the cached reference: the same bits
    assert delta_v(inputs[name], distorted) == 1.0 - value


def test_internals_6_2(inputs):
    crop = inputs["crop224"]
    value, nums, dens = vif_grey(grey(crop), grey(_blur(crop, 1)), full=True)
    assert abs(value - 0.7687260809) <= 1e-9
    np.testing.assert_allclose(nums, [62.875737, 67.333122, 41.738139, 42.414117, 22.306570, 22.333100,
                                      9.040767, 9.445121], rtol=0, atol=PRINTED)
    np.testing.assert_allclose(dens, [66.964843, 72.928795, 52.157315, 54.482626, 35.708319, 35.885639,
                                      21.688708, 21.153259], rtol=0, atol=PRINTED)


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_table_6_4(inputs, corruption):
    """The reference outputs are ``corrupt(..., RandomState(1000 + 10 i + s))`` (bit-exact, see
    test_fidelity_c.py), so the table can be checked without ../shared."""
    crop = inputs["crop224"]
    index = list(CORRUPTIONS).index(corruption)
    for severity, expected in enumerate(TABLE_6_4[corruption], start=1):
        out = transforms.corrupt(crop, corruption, severity, np.random.RandomState(1000 + 10 * index + severity))
        assert abs(delta_v(crop, out) - expected) <= PRINTED, (corruption, severity)


def test_refuses_small_and_bad_images():
    small = np.zeros((MIN_SIDE - 1, 200, 3), np.uint8)
    with pytest.raises(ValueError, match="at least 72x72"):
        vif(small, small)
    ok = np.zeros((MIN_SIDE, MIN_SIDE, 3), np.uint8)
    assert abs(vif(ok, ok) - 1.0) <= 1e-12
    with pytest.raises(ValueError, match="uint8 RGB"):
        vif(ok.astype(np.float32), ok)
    with pytest.raises(ValueError, match="differ in shape"):
        vif(ok, np.zeros((80, 80, 3), np.uint8))
