"""Unit tests of the blur helpers: clipped_zoom, the glass-blur copy loop, the blur kernels."""
import numpy as np
import pytest
from scipy import ndimage

from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from transforms import blur
from transforms.filters import gaussian_filter1d
from transforms.geometry import clipped_zoom, zoom_sum
from transforms.motion import magick_motion_blur, motion_kernel


# --- clipped_zoom ---------------------------------------------------------------------------

@pytest.mark.parametrize("severity", SEVERITIES)
def test_clipped_zoom_keeps_shape_and_dtype(severity):
    image = np.random.RandomState(0).rand(224, 224, 3).astype(np.float32)
    for factor in CORRUPTIONS["zoom_blur"].params(severity)["factors"]:
        out = clipped_zoom(image, factor)
        assert out.shape == image.shape and out.dtype == np.float32


def test_clipped_zoom_by_one_is_identity():
    image = np.random.RandomState(1).rand(32, 32, 3)
    np.testing.assert_array_equal(clipped_zoom(image, 1.0), image)


def test_clipped_zoom_trims_the_centre():
    # 299 at zoom 4.5: the 67-pixel centre (top 116) zooms to 302, trimmed by 1 on both axes.
    image = np.random.RandomState(2).rand(299, 299, 1)
    zoomed = ndimage.zoom(image[116:183, 116:183], (4.5, 4.5, 1), order=1)
    assert zoomed.shape == (302, 302, 1)
    np.testing.assert_array_equal(clipped_zoom(image, 4.5), zoomed[1:300, 1:300])


def test_clipped_zoom_greyscale_equals_single_channel():
    image = np.random.RandomState(3).rand(64, 64)
    np.testing.assert_array_equal(clipped_zoom(image, 2.5), clipped_zoom(image[..., None], 2.5)[..., 0])


@pytest.mark.parametrize("image,factor", [(np.zeros((4, 5, 3)), 2), (np.zeros((4, 4, 3)), 0.5),
                                          (np.zeros(4), 2)])
def test_clipped_zoom_rejects_bad_input(image, factor):
    with pytest.raises(ValueError):
        clipped_zoom(image, factor)


# --- glass blur -----------------------------------------------------------------------------

def _reference_displacement(image, rng, max_delta, iterations):
    """The reference loop verbatim (tuple assignment on NumPy views), on any image size."""
    height, width = image.shape[:2]
    for _ in range(iterations):
        for h in range(height - max_delta, max_delta, -1):
            for w in range(width - max_delta, max_delta, -1):
                dx, dy = rng.randint(-max_delta, max_delta, size=(2,))
                h_prime, w_prime = h + dy, w + dx
                image[h, w], image[h_prime, w_prime] = image[h_prime, w_prime], image[h, w]


@pytest.mark.parametrize("max_delta,iterations", [(1, 2), (2, 3), (3, 1)])
def test_glass_displacement_matches_reference_loop(max_delta, iterations):
    image = np.random.RandomState(4).randint(0, 256, size=(12, 10, 3)).astype(np.uint8)
    expected = image.copy()
    _reference_displacement(expected, np.random.RandomState(5), max_delta, iterations)
    got = image.copy()
    count = blur.glass_pixel_count(image.shape, max_delta, iterations)
    shifts = np.random.RandomState(5).randint(-max_delta, max_delta, size=(count, 2))
    blur.displace_pixels(got, shifts, max_delta, iterations)
    np.testing.assert_array_equal(got, expected)


def test_glass_displacement_copies_not_swaps():
    image = np.arange(5 * 5 * 3, dtype=np.uint8).reshape(5, 5, 3)
    out = image.copy()
    # max_delta 2 on 5x5 visits only (3, 3); shift (dx, dy) = (-1, -2) reads (1, 2).
    blur.displace_pixels(out, np.array([[-1, -2]]), 2, 1)
    np.testing.assert_array_equal(out[3, 3], image[1, 2])
    np.testing.assert_array_equal(out[1, 2], image[1, 2])
    assert np.count_nonzero(out != image) == 3


def test_glass_draw_counts_match_spec():
    counts = [blur.glass_pixel_count((224, 224, 3), p["max_delta"], p["iterations"])
              for p in (CORRUPTIONS["glass_blur"].params(s) for s in SEVERITIES)]
    assert counts == [98568, 48400, 145200, 95048, 93312]


def test_glass_blur_consumes_exactly_its_draws():
    x = np.random.RandomState(6).randint(0, 256, size=(224, 224, 3)).astype(np.uint8)
    rng, expected = np.random.RandomState(7), np.random.RandomState(7)
    blur.glass_blur(x, rng, sigma=0.9, max_delta=2, iterations=1)
    expected.randint(-2, 2, size=(48400, 2))
    assert rng.random_sample() == expected.random_sample()


# --- kernels ----------------------------------------------------------------------------------

@pytest.mark.parametrize("radius,sigma,taps,first", [(10, 3, 21, 0.2347), (15, 5, 31, 0.1478),
                                                     (15, 8, 31, 0.0950), (15, 12, 31, 0.0650),
                                                     (20, 15, 41, 0.0522)])
def test_motion_kernel_weights(radius, sigma, taps, first):
    weights, dx, dy = motion_kernel(radius, sigma, angle=0)
    assert weights.shape == dx.shape == dy.shape == (taps,)
    assert weights.sum() == pytest.approx(1, abs=1e-12)
    assert np.all(np.diff(weights) < 0)  # one-sided: the peak is at offset 0
    assert weights[0] == pytest.approx(first, abs=1e-4)


@pytest.mark.parametrize("angle,dx,dy", [
    (0, range(5), [0] * 5),
    (90, [0] * 5, range(5)),
    (180, [0, -1, -2, -3, -4], [0] * 5),
    (45, [0, 1, 1, 2, 3], [0, 1, 1, 2, 3]),
    (-45, [0, 1, 1, 2, 3], [0, -1, -1, -2, -3]),
])
def test_motion_kernel_offsets(angle, dx, dy):
    _, got_dx, got_dy = motion_kernel(2, 1, angle)
    np.testing.assert_array_equal(got_dx, dx)
    np.testing.assert_array_equal(got_dy, dy)


def test_motion_blur_of_constant_image_is_constant():
    image = np.full((20, 30, 3), 173, dtype=np.uint8)
    np.testing.assert_array_equal(magick_motion_blur(image, 15, 5, 33.3), image)


def test_motion_blur_is_one_sided():
    image = np.zeros((1, 9), dtype=np.uint8)
    image[0, 4] = 255
    out = magick_motion_blur(image, 2, 1, 0)[0].astype(int)  # a pixel and the 4 to its right
    assert np.all(out[5:] == 0) and out[0] == 0
    assert 0 < out[1] < out[2] < out[3] < out[4] < 255


@pytest.mark.parametrize("image,radius,sigma", [(np.zeros((4, 4)), 2, 1), (np.zeros((4, 4), np.uint8), 0, 1),
                                                (np.zeros((4, 4), np.uint8), 2, 0)])
def test_motion_blur_rejects_bad_input(image, radius, sigma):
    with pytest.raises(ValueError):
        magick_motion_blur(image, radius, sigma, 0)


def test_motion_blur_corruption_draws_one_angle():
    x = np.random.RandomState(8).randint(0, 256, size=(224, 224, 3)).astype(np.uint8)
    rng = np.random.RandomState(9)
    out = blur.motion_blur(x, rng, radius=10, sigma=3)
    angle = np.random.RandomState(9).uniform(-45, 45)
    np.testing.assert_array_equal(out, magick_motion_blur(x, 10, 3, angle))
    reference = np.random.RandomState(9)
    reference.uniform(-45, 45)
    assert rng.random_sample() == reference.random_sample()


@pytest.mark.parametrize("radius,alias_blur,side", [(3, 0.1, 17), (8, 0.5, 17), (10, 0.5, 21)])
def test_disk_kernel(radius, alias_blur, side):
    kernel = blur.disk_kernel(radius, alias_blur)
    assert kernel.shape == (side, side) and kernel.dtype == np.float32
    # The disk is normalised before the anti-aliasing blur; a disk touching the grid's edge
    # (radius 8 on 17x17, radius 10 on 21x21) gains mass from the reflected border.
    assert kernel.sum() == pytest.approx(1, abs=1e-5) if radius < side // 2 else kernel.sum() > 1
    np.testing.assert_allclose(kernel, kernel.T, rtol=1e-6)  # symmetric up to float32 rounding
    np.testing.assert_allclose(kernel, kernel[::-1, ::-1], rtol=1e-6)


def test_zoom_blur_accumulates_in_float32():
    x = np.random.RandomState(10).randint(0, 256, size=(224, 224, 3)).astype(np.uint8)
    out = blur.zoom_blur(x, np.random.RandomState(0), factors=(1.0, 1.05))
    assert out.dtype == np.float32 and out.shape == x.shape
    assert out.min() >= 0 and out.max() <= 255


@pytest.mark.parametrize("side, factors", [(224, (1.0, 1.01, 1.17, 1.3)), (31, (1.0, 1.5, 2.0)), (299, (1.12,))])
def test_zoom_sum_is_the_running_float32_sum_of_clipped_zooms(side, factors):
    image = np.random.RandomState(side).uniform(0, 1, size=(side, side, 3)).astype(np.float32)
    expected = np.zeros_like(image)
    for factor in factors:
        expected += clipped_zoom(image, factor)
    total = zoom_sum(image, factors)
    assert total.dtype == np.float32 and total.tobytes() == expected.tobytes()


def test_zoom_sum_rejects_what_it_cannot_sum():
    with pytest.raises(ValueError, match="float32"):
        zoom_sum(np.zeros((8, 8, 3)), (1.0,))
    with pytest.raises(ValueError, match=">= 1"):
        zoom_sum(np.zeros((8, 8, 3), dtype=np.float32), (0.5,))


# --- gaussian_filter1d: scipy's bits on every path (one-row loop, four-row kernel, moved axis) ---

@pytest.mark.parametrize("shape", [(224, 224), (67, 131), (5, 300), (300, 5), (40, 38, 3)])
@pytest.mark.parametrize("sigma, truncate", [(170.8, 3.0), (19.52, 3.0), (12.0, 4.0), (0.7, 4.0)])
@pytest.mark.parametrize("mode", ["reflect", "nearest", "mirror"])
def test_gaussian_filter1d_equals_scipy_bit_for_bit(shape, sigma, truncate, mode):
    image = np.random.RandomState(len(shape) + shape[0]).uniform(-1, 1, size=shape)
    for axis in range(image.ndim):
        expected = ndimage.gaussian_filter1d(image, sigma, axis, mode=mode, truncate=truncate)
        assert gaussian_filter1d(image, sigma, axis, mode, truncate).tobytes() == expected.tobytes()
