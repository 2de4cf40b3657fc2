"""The fast paths: exact re-implementations of scipy kernels, the 'fast' random mode, the draw ledger.

The compiled kernels in transforms.filters / transforms.geometry replace scipy calls and must give
the same bits; the 'fast' mode (transforms.rng) keeps the distributions but not the samples.
"""
import math

import cv2
import numpy as np
import pytest
from scipy import ndimage

import transforms
from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE
from transforms import blur, draws, filters, geometry
from transforms.exact_rng import ExactRandomState
from transforms.rng import FastRandomState, check_rng, make_rng

SHAPE = (IMAGE_SIZE, IMAGE_SIZE, 3)


@pytest.fixture(scope="module")
def image():
    x = np.random.RandomState(3).randint(0, 256, SHAPE).astype(np.uint8)
    x[:10] = 255
    x[10:20] = 0
    return x


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


# --- exact re-implementations ---------------------------------------------------------------

@pytest.mark.parametrize("mode", ["reflect", "nearest", "mirror"])
@pytest.mark.parametrize("sigma,truncate", [(0.7, 4.0), (1.5, 4.0), (2.44, 3.0), (19.52, 3.0), (170.8, 3.0)])
def test_gaussian_filter_equals_scipy_bit_for_bit(mode, sigma, truncate):
    rs = np.random.RandomState(int(sigma * 100))
    for shape, sigmas in (((60, 45), sigma), ((40, 33, 3), (sigma, sigma, 0)), ((7, 5), sigma)):
        x = rs.uniform(-1, 1, shape)
        expected = ndimage.gaussian_filter(x, sigmas, mode=mode, truncate=truncate)
        assert _same_bits(filters.gaussian_filter(x, sigmas, mode, truncate), expected)


@pytest.mark.parametrize("side,sigma", [(224, 170.8), (224, 19.52), (299, 209.3), (64, 44.8), (37, 40.0)])
def test_gaussian_filter_of_elastic_fields_equals_scipy_bit_for_bit(side, sigma):
    """Square fields as elastic_transform smooths them: kernels wider than the image fold back and forth."""
    x = np.random.RandomState(side).uniform(-1, 1, (side, side))
    expected = ndimage.gaussian_filter(x, sigma, mode="reflect", truncate=3)
    assert _same_bits(filters.gaussian_filter(x, sigma, "reflect", 3), expected)


@pytest.mark.parametrize("side", [32, 64, 224, 299, 17])
def test_channel_means_equal_numpy_mean_bit_for_bit(side):
    from transforms.digital import channel_means
    rs = np.random.RandomState(side)
    for _ in range(5):
        u = rs.randint(0, 256, (side, side, 3)).astype(np.uint8) / 255.0
        assert _same_bits(channel_means(u), np.mean(u, axis=(0, 1)))
        wide = rs.standard_normal((side, side + 3, 3)) * 10.0 ** rs.randint(-3, 4, (side, side + 3, 3))
        assert _same_bits(channel_means(wide), np.mean(wide, axis=(0, 1)))
        four = rs.rand(side, side, 4)  # not three channels: the general loop
        assert _same_bits(channel_means(four), np.mean(four, axis=(0, 1)))
    with pytest.raises(ValueError, match="C-contiguous"):
        channel_means(np.asfortranarray(u))


def test_gaussian_half_kernel_is_scipys_kernel():
    half = filters.gaussian_half_kernel(2.0, 4.0)
    full = np.concatenate((half[:0:-1], half))
    impulse = np.zeros(41)
    impulse[20] = 1.0
    np.testing.assert_array_equal(ndimage.correlate1d(impulse, full, mode="constant")[12:29], full[::-1])
    assert half.shape == (9,) and abs(full.sum() - 1) < 1e-12


def test_gaussian_filter_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode must be one of"):
        filters.gaussian_filter(np.zeros((4, 4)), 1.0, "constant", 4.0)


@pytest.mark.parametrize("side", [224, 31, 64])
def test_clipped_zoom_equals_scipy_zoom_bit_for_bit(side):
    rs = np.random.RandomState(side)
    factors = {f for s in range(1, 6) for f in CORRUPTIONS["zoom_blur"].params(s)["factors"]}
    factors |= {CORRUPTIONS["snow"].params(s)["zoom"] for s in range(1, 6)} | set(rs.uniform(1, 5, 8))
    for factor in sorted(factors):
        for dtype, channels in ((np.float32, 3), (np.float64, 1)):
            image = (rs.rand(side, side, channels) * 4 - 1).astype(dtype)
            crop = math.ceil(side / factor)
            top = (side - crop) // 2
            zoomed = ndimage.zoom(image[top:top + crop, top:top + crop], (factor, factor, 1), order=1)
            trim = (zoomed.shape[0] - side) // 2
            assert _same_bits(geometry.clipped_zoom(image, factor), zoomed[trim:trim + side, trim:trim + side])


def test_clipped_zoom_rejects_integer_images():
    with pytest.raises(ValueError, match="float32 or float64"):
        geometry.clipped_zoom(np.zeros((8, 8, 3), np.uint8), 2)


@pytest.mark.parametrize("shape, channels, dtype", [((224, 224), 3, np.float32), ((17, 31), 3, np.float32),
                                                     ((2, 2), 3, np.float32), ((1, 6), 3, np.float32),
                                                     ((19, 12), 1, np.float64), ((9, 23), 4, np.float32)])
def test_displace_reflect_equals_map_coordinates_bit_for_bit(shape, channels, dtype):
    rs = np.random.RandomState(sum(shape))
    height, width = shape
    n = max(shape)
    special = np.array([0.0, -1e-16, -2e-15, -0.5, -1.0, -n, -n - 0.25, -2 * n - 0.5, -5 * n - 3.5,
                        n - 1, n - 0.5, n, 2 * n, 3 * n + 0.7, 0.3])
    image = rs.rand(height, width, channels).astype(dtype)
    for scale in (0.0, 3.0, 40.0):
        dy = (rs.choice(special, shape) + rs.uniform(-scale, scale, shape)).astype(np.float32)
        dx = (rs.choice(special, shape) + rs.uniform(-scale, scale, shape)).astype(np.float32)
        rows, cols = np.arange(height)[:, None] + dy, np.arange(width)[None, :] + dx
        expected = np.empty_like(image)
        for c in range(channels):
            ndimage.map_coordinates(image[..., c], (rows, cols), order=1, mode="reflect", output=expected[..., c])
        assert _same_bits(geometry.displace_reflect(image, dy, dx), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_displace_reflect_to_255_is_clip_to_255_of_the_samples(dtype):
    rs = np.random.RandomState(7)
    image = (rs.rand(40, 33, 3) * 1.4 - 0.2).astype(dtype)
    for scale in (0.0, 2.0, 60.0):
        dy, dx = (rs.uniform(-scale, scale, (40, 33)).astype(np.float32) for _ in range(2))
        expected = transforms.units.clip_to_255(geometry.displace_reflect(image, dy, dx))
        assert _same_bits(geometry.displace_reflect(image, dy, dx, to_255=True), expected)


def test_displace_reflect_rejects_mismatched_fields():
    with pytest.raises(ValueError, match="shift fields"):
        geometry.displace_reflect(np.zeros((4, 4, 3), np.float32), np.zeros((4, 5)), np.zeros((4, 4)))


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_defocus_filters_the_channels_as_separate_calls_would(image, severity):
    params = CORRUPTIONS["defocus_blur"].params(severity)
    kernel = blur.disk_kernel(params["radius"], params["alias_blur"])
    u = image / 255.
    per_channel = np.stack([cv2.filter2D(u[:, :, c], -1, kernel) for c in range(3)], axis=-1)
    assert _same_bits(blur.defocus_blur(image, None, **params), np.clip(per_channel, 0, 1) * 255)


# --- random modes --------------------------------------------------------------------------

def test_make_rng_modes():
    assert transforms.RNG_MODES == ("reference", "fast")
    reference = make_rng(5, "reference")
    assert type(reference) is ExactRandomState  # NumPy's stream, compiled (tests/transforms/test_exact_rng.py)
    assert reference.random_sample() == np.random.RandomState(5).random_sample()
    fast = make_rng(5, "fast")
    assert isinstance(fast, FastRandomState)
    assert fast.random_sample(3).tolist() == np.random.Generator(np.random.PCG64(5)).random(3).tolist()
    assert isinstance(transforms.example_rng(0, "a/b.JPEG", "fog", 1, mode="fast"), FastRandomState)
    with pytest.raises(ValueError, match="reference, fast"):
        make_rng(5, "quick")


def test_check_rng_rejects_other_generators():
    for rng in (np.random.default_rng(0), np.random.Philox(0), 7):
        with pytest.raises(ValueError, match="RandomState"):
            check_rng(rng)


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_every_corruption_runs_deterministically_in_fast_mode(image, name):
    first = transforms.corrupt(image, name, 3, make_rng(11, "fast"))
    again = transforms.corrupt(image, name, 3, make_rng(11, "fast"))
    assert first.dtype == np.uint8 and first.shape == SHAPE
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("name", ["gaussian_noise", "shot_noise", "impulse_noise", "glass_blur",
                                  "elastic_transform", "snow", "spatter"])
def test_fast_mode_differs_from_the_reference_stream(image, name):
    fast = transforms.corrupt(image, name, 3, make_rng(11, "fast"))
    reference = transforms.corrupt(image, name, 3, make_rng(11, "reference"))
    other_seed = transforms.corrupt(image, name, 3, make_rng(12, "fast"))
    assert not np.array_equal(fast, reference) and not np.array_equal(fast, other_seed)


def test_perturbations_accept_the_fast_stream():
    uncropped = np.random.RandomState(4).randint(0, 256, (256, 300, 3)).astype(np.uint8)
    fast = transforms.perturb_sequence(uncropped, "shot_noise", make_rng(9, "fast"), 1)
    np.testing.assert_array_equal(fast, transforms.perturb_sequence(uncropped, "shot_noise", make_rng(9, "fast"), 1))
    assert not np.array_equal(fast, transforms.perturb_sequence(uncropped, "shot_noise", make_rng(9, "reference"), 1))


def _moments(sample):
    sample = np.asarray(sample, dtype=np.float64)
    return sample.mean(), sample.var()


def test_fast_draws_have_the_reference_distributions():
    n = 200_000
    fast, reference = make_rng(1, "fast"), make_rng(1, "reference")
    lam = np.repeat([0.0, 0.7, 4.0, 30.0], n // 4)
    cases = [
        ("normal", (0.5, 0.2, n)), ("standard_normal", (n,)), ("uniform", (-3.0, 1.0, n)),
        ("random_sample", (n,)), ("randint", (-2, 2, n)), ("poisson", (lam,)),
    ]
    for method, args in cases:
        got, want = getattr(fast, method)(*args), getattr(reference, method)(*args)
        assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, method
        (mean, var), (ref_mean, ref_var) = _moments(got), _moments(want)
        assert abs(mean - ref_mean) < 0.02 * max(1.0, np.sqrt(ref_var)), method
        assert abs(var - ref_var) < 0.03 * max(ref_var, 1e-3), method
    ints = fast.randint(-2, 2, 10_000)
    assert set(np.unique(ints)) == {-2, -1, 0, 1}  # half-open, as RandomState.randint
    assert set(np.unique(fast.randint(5, size=10_000))) == set(range(5))
    assert 0 <= int(fast.randint(0, 3)) < 3
    assert (fast.poisson(np.zeros(100)) == 0).all()
    u = fast.random_sample(10_000)
    assert u.min() >= 0 and u.max() < 1


def test_fast_mode_per_value_noise_matches_the_reference_statistics():
    flat = np.full(SHAPE, 128, np.uint8)
    for name in ("gaussian_noise", "shot_noise"):
        fast = transforms.corrupt(flat, name, 2, make_rng(3, "fast")).astype(float)
        reference = transforms.corrupt(flat, name, 2, make_rng(3, "reference")).astype(float)
        assert abs(fast.mean() - reference.mean()) < 0.5
        assert abs(fast.std() / reference.std() - 1) < 0.02


# --- the draw ledger -----------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_recorded_draws_replay_to_the_same_stream_state(image, name):
    recorded = draws.record_draws(image, name, 4, 21)
    ran, replayed = np.random.RandomState(21), np.random.RandomState(21)
    transforms.corrupt(image, name, 4, ran)
    draws.replay_draws(recorded, replayed)
    assert all(method in draws.DRAW_METHODS for method, _, _ in recorded)
    assert np.array_equal(ran.get_state()[1], replayed.get_state()[1])
    assert ran.get_state()[2:] == replayed.get_state()[2:]


def test_draw_ledger_of_known_corruptions(image):
    assert draws.record_draws(image, "zoom_blur", 1, 0) == ()
    (call,) = draws.record_draws(image, "gaussian_noise", 2, 0)
    assert call.method == "normal" and call.kwargs == {"size": SHAPE, "scale": 0.12}
    elastic = draws.record_draws(image, "elastic_transform", 3, 0)
    assert [d.method for d in elastic] == ["uniform"] * 3


def test_recorder_refuses_unrecorded_samplers():
    with pytest.raises(ValueError, match="not one of the recorded"):
        draws.DrawRecorder(0).binomial(3, 0.5)


def test_draw_ms(image):
    assert draws.draw_ms(image, "contrast", 1, 0) == 0.0
    assert draws.draw_ms(image, "gaussian_noise", 1, 0, repeats=2) > 0
    assert draws.draw_ms(image, "impulse_noise", 1, 0, repeats=1, mode="fast") > 0
    assert draws.draw_ms(image, "shot_noise", 1, 0, repeats=1, mode="numpy") > 0
    assert draws.DRAW_STREAMS == ("reference", "fast", "numpy")
    assert type(draws.draw_stream(3, "numpy")) is np.random.RandomState
    assert type(draws.draw_stream(3, "reference")) is ExactRandomState
    with pytest.raises(ValueError, match="repeats"):
        draws.draw_ms(image, "gaussian_noise", 1, 0, repeats=0)


@pytest.mark.parametrize("seed", [0, 1, 42, 3141592653, 2 ** 32 - 1])
def test_legacy_random_state_is_random_state_of_the_seed(seed):
    from transforms.rng import legacy_random_state
    made, expected = legacy_random_state(seed), np.random.RandomState(seed)
    assert type(made) is np.random.RandomState and make_rng(seed) is not make_rng(seed)
    state, expected_state = made.get_state(), expected.get_state()
    assert np.array_equal(state[1], expected_state[1]) and state[2:] == expected_state[2:]
    for rng in (made, expected):
        rng.normal()  # leaves a cached Gaussian behind
    assert made.normal(size=5).tobytes() == expected.normal(size=5).tobytes()
    assert made.poisson(60, 9).tobytes() == expected.poisson(60, 9).tobytes()
    with pytest.raises(ValueError, match="Seed must be between"):
        legacy_random_state(2 ** 32)
