"""Behaviour of the noise, colour and digital corruptions (transforms.noise / color / digital).

Bit-exactness against the reference is tested in test_fidelity_c.py; these tests pin down the
properties that make each function what it is: what it draws, what it preserves, its identities.
"""
import numpy as np
from PIL import Image
import pytest
from skimage import color as skcolor

from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE, SEVERITIES
from transforms import color, digital, noise
from transforms.corruptions import FUNCTIONS

SHAPE = (IMAGE_SIZE, IMAGE_SIZE, 3)


@pytest.fixture(scope="module")
def image():
    """A textured uint8 RGB image with black, white and grey pixels."""
    x = np.random.RandomState(7).randint(0, 256, SHAPE).astype(np.uint8)
    x[:8] = 0
    x[8:16] = 255
    x[16:24] = x[16:24, :, :1]
    return x


def _same_state(a: np.random.RandomState, b: np.random.RandomState) -> bool:
    sa, sb = a.get_state(), b.get_state()
    return np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:]


# --- the draw ledger (algorithms.md, "Random streams"): which RandomState calls each function makes -------------

DRAWS = {
    "gaussian_noise": lambda r, x, p: r.normal(size=SHAPE, scale=p["sigma"]),
    "shot_noise": lambda r, x, p: r.poisson(x / 255.0 * p["scale"]),
    "impulse_noise": lambda r, x, p: (r.random_sample(SHAPE), r.random_sample(SHAPE)),
    "speckle_noise": lambda r, x, p: r.normal(size=SHAPE, scale=p["sigma"]),
    # 3*2 + 2*224*224 uniforms: affine jitter, then the column and the row displacement fields
    "elastic_transform": lambda r, x, p: r.random_sample(3 * 2 + 2 * IMAGE_SIZE * IMAGE_SIZE),
    "brightness": lambda r, x, p: None,
    "saturate": lambda r, x, p: None,
    "contrast": lambda r, x, p: None,
    "pixelate": lambda r, x, p: None,
    "jpeg_compression": lambda r, x, p: None,
}
LEDGER_CASES = [(name, s) for name in DRAWS for s in SEVERITIES]


@pytest.mark.parametrize("name,severity", LEDGER_CASES, ids=[f"{n}-{s}" for n, s in LEDGER_CASES])
def test_consumes_exactly_the_reference_draws(image, name, severity):
    params = CORRUPTIONS[name].params(severity)
    used, expected = np.random.RandomState(11), np.random.RandomState(11)
    FUNCTIONS[name](image, used, **params)
    DRAWS[name](expected, image, params)
    assert _same_state(used, expected)


@pytest.mark.parametrize("name", list(DRAWS))
def test_returns_what_the_driver_truncates(image, name):
    out = FUNCTIONS[name](image, np.random.RandomState(0), **CORRUPTIONS[name].params(3))
    assert out.shape == SHAPE
    expected_kind = "u" if name in ("pixelate", "jpeg_compression") else "f"
    assert out.dtype.kind == expected_kind
    assert out.min() >= 0 and out.max() <= 255


# --- noise ---------------------------------------------------------------------------------

def test_zero_sigma_noise_is_the_identity(image):
    # x / 255 * 255 is exact for every uint8 value, so truncation gives x back.
    for function in (noise.gaussian_noise, noise.speckle_noise):
        out = function(image, np.random.RandomState(0), sigma=0.0)
        np.testing.assert_array_equal(out.astype(np.uint8), image)


def test_speckle_noise_keeps_black_black(image):
    out = noise.speckle_noise(image, np.random.RandomState(0), sigma=0.6)
    assert np.all(out[:8] == 0)


def test_shot_noise_gives_whole_photon_counts_and_keeps_the_mean():
    x = np.full(SHAPE, 100, np.uint8)
    scale = 25
    out = noise.shot_noise(x, np.random.RandomState(0), scale=scale)
    counts = out / 255 * scale
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert abs(out.mean() - 100) < 1.0  # Poisson mean = lambda; clipping at 255 is negligible here


@pytest.mark.parametrize("amount", [CORRUPTIONS["impulse_noise"].params(s)["amount"] for s in SEVERITIES])
def test_salt_and_pepper_masks_match_scikit_image_013_choice(amount):
    salt, pepper = noise.salt_and_pepper_masks(SHAPE, np.random.RandomState(5), amount)
    r = np.random.RandomState(5)
    flipped = r.choice([True, False], size=SHAPE, p=[amount, 1 - amount])
    salted = r.choice([True, False], size=SHAPE, p=[0.5, 0.5])
    np.testing.assert_array_equal(salt, flipped & salted)
    np.testing.assert_array_equal(pepper, flipped & ~salted)


def test_impulse_noise_salt_and_pepper_proportions():
    x = np.full(SHAPE, 128, np.uint8)  # grey: only salt gives 255, only pepper gives 0
    amount = 0.27
    out = noise.impulse_noise(x, np.random.RandomState(3), amount=amount)
    salt, pepper = (out == 255).mean(), (out == 0).mean()
    assert abs(salt - amount / 2) < 0.005 and abs(pepper - amount / 2) < 0.005
    assert np.all((out == 0) | (out == 255) | (out == 128))
    # channels are hit independently: some pixels get coloured specks
    hit = out != 128
    assert np.any(hit.any(axis=-1) & ~hit.all(axis=-1))


# --- colour --------------------------------------------------------------------------------

def _hsv_test_images():
    rs = np.random.RandomState(1)
    u = rs.randint(0, 256, (64, 64, 3)).astype(np.uint8) / 255.0
    u[:8] = u[:8, :, :1]              # greys: hue and saturation 0
    u[8:16, :, 1] = u[8:16, :, 0]      # red == green ties
    u[16:24, :, 2] = u[16:24, :, 1]    # green == blue ties
    u[24:32, :, 2] = u[24:32, :, 0]    # red == blue ties
    u[32, 0] = 0.0                     # black
    return [u, u.astype(np.float32), rs.rand(3)]


@pytest.mark.parametrize("rgb", _hsv_test_images(), ids=["float64", "float32", "one-pixel"])
def test_hsv_conversions_equal_scikit_image(rgb):
    hsv = color.rgb2hsv(rgb)
    expected = skcolor.rgb2hsv(rgb)
    assert hsv.dtype == expected.dtype
    np.testing.assert_array_equal(hsv, expected)
    np.testing.assert_array_equal(color.hsv2rgb(hsv), skcolor.hsv2rgb(hsv))


def test_hsv2rgb_equals_scikit_image_at_sextant_edges():
    rs = np.random.RandomState(2)
    hsv = rs.rand(32, 32, 3)
    hsv[..., 0] = rs.choice([0.0, 1 / 6, 0.5, 5 / 6, 0.999999999, 1.0], size=(32, 32))
    np.testing.assert_array_equal(color.hsv2rgb(hsv), skcolor.hsv2rgb(hsv))


def test_hsv_round_trip(image):
    u = image / 255.0
    np.testing.assert_allclose(color.hsv2rgb(color.rgb2hsv(u)), u, rtol=0, atol=1e-12)


def test_hsv_rejects_wrong_channel_count():
    with pytest.raises(ValueError, match="3 channels"):
        color.rgb2hsv(np.zeros((4, 4, 4)))
    with pytest.raises(ValueError, match="3 channels"):
        color.hsv2rgb(np.zeros((4, 4)))


def test_brightness_raises_value_by_delta(image):
    delta = 0.3
    out = color.brightness(image, None, delta=delta)
    before, after = image.max(axis=-1) / 255.0, out.max(axis=-1) / 255.0
    np.testing.assert_allclose(after, np.minimum(before + delta, 1.0), atol=1e-12)


def test_saturate_to_zero_gives_grey(image):
    out = color.saturate(image, None, multiplier=0, offset=0)
    np.testing.assert_array_equal(out[..., 0], out[..., 1])
    np.testing.assert_array_equal(out[..., 1], out[..., 2])
    np.testing.assert_allclose(out[..., 0], image.max(axis=-1), atol=1e-9)


# --- digital -------------------------------------------------------------------------------

def test_contrast_preserves_channel_means(image):
    out = digital.contrast(image, None, factor=0.05)
    np.testing.assert_allclose(out.mean(axis=(0, 1)), image.mean(axis=(0, 1)), rtol=0, atol=1e-9)
    spread_in, spread_out = np.ptp(image, axis=(0, 1)), np.ptp(out, axis=(0, 1))
    np.testing.assert_allclose(spread_out, 0.05 * spread_in, atol=1e-9)


def test_contrast_factor_zero_flattens_each_channel_to_its_mean(image):
    out = digital.contrast(image, None, factor=0)
    np.testing.assert_allclose(out, np.broadcast_to(image.mean(axis=(0, 1)), SHAPE), rtol=0, atol=1e-9)


def test_elastic_without_jitter_or_displacement_is_the_identity(image):
    out = digital.elastic_transform(image, np.random.RandomState(0), alpha=0.0, sigma=2.44,
                                    affine_jitter=0.0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.astype(np.uint8), image)


def test_elastic_moves_pixels(image):
    params = CORRUPTIONS["elastic_transform"].params(5)
    out = digital.elastic_transform(image, np.random.RandomState(0), **params).astype(np.uint8)
    assert (out != image).mean() > 0.5


def test_pixelate_makes_constant_blocks(image):
    out = digital.pixelate(image, None, factor=0.5)  # 224 -> 112 -> 224: 2x2 blocks
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.repeat(np.repeat(out[::2, ::2], 2, axis=0), 2, axis=1))
    box_means = image.reshape(112, 2, 112, 2, 3).mean(axis=(1, 3))
    assert np.abs(out[::2, ::2] - box_means).max() <= 1  # BOX averages (Pillow fixed point: +-1)


def test_pixelate_keeps_the_side_and_upsamples_with_box_not_nearest():
    # 299 severity 4: 74 -> 299 has a tie at row/column 149, where BOX takes source 37, NEAREST 36.
    x = np.random.RandomState(0).randint(0, 256, (299, 299, 3)).astype(np.uint8)
    out = digital.pixelate(x, None, factor=0.25)
    small = Image.fromarray(x).resize((74, 74), Image.BOX)
    assert out.shape == x.shape
    np.testing.assert_array_equal(out[149, 149], np.asarray(small)[37, 37])
    assert (np.asarray(small.resize((299, 299), Image.NEAREST)) != out).any()


def test_jpeg_error_grows_as_quality_falls(image):
    smooth = np.asarray(np.linspace(0, 255, IMAGE_SIZE)[None, :, None] * np.ones(SHAPE), np.uint8)
    errors = [np.abs(digital.jpeg_compression(smooth, None, quality=q).astype(int) - smooth).mean()
              for q in (95, 25, 7)]
    assert errors[0] < errors[1] < errors[2]
