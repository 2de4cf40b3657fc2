"""The faster formulations of transforms/ against the library calls they replace, bit for bit."""
import itertools

import numpy as np
import pytest
from scipy import ndimage

from transforms import filters


@pytest.mark.parametrize("mode", sorted(filters.PAD_MODES))
def test_extend_lines_is_numpy_take_of_the_extended_rows(mode):
    rs = np.random.RandomState(0)
    for count, length, step in itertools.product([1, 3, 40], [1, 2, 5, 32, 224], [1, 2, 3, 4, 5, 96]):
        lines = rs.rand(count, length, step)
        for radius in (0, 1, 6, 33, 300):
            expected = np.take(lines, filters.extended_rows(length, radius, mode), axis=1)
            extended = filters.extend_lines(lines, radius, mode)
            assert extended.flags.c_contiguous and extended.shape == expected.shape
            assert extended.tobytes() == expected.tobytes()


@pytest.mark.parametrize("shape,axis", [((224, 224, 3), 1), ((224, 224), 1), ((32, 32, 3), 1), ((7, 5, 3), 0)])
@pytest.mark.parametrize("mode", sorted(filters.PAD_MODES))
def test_short_gaussian_passes_are_scipys(shape, axis, mode):
    image = np.random.RandomState(1).rand(*shape)
    for sigma in (0.05, 0.7, 1.5, 2.44):
        expected = ndimage.gaussian_filter1d(image, sigma, axis=axis, mode=mode, truncate=4.0)
        assert filters.gaussian_filter1d(image, sigma, axis, mode, 4.0).tobytes() == expected.tobytes()


@pytest.mark.parametrize("shape", [(224, 224, 3), (224, 224), (299, 299, 3), (32, 32, 3), (7, 5, 3), (1, 1, 3), (1, 9),
                                   (3, 40)])
@pytest.mark.parametrize("mode", sorted(filters.PAD_MODES))
def test_both_axes_in_one_pass_are_scipys(shape, mode):
    image = np.random.RandomState(2).rand(*shape)
    for sigma, truncate in ((0.05, 4.0), (0.7, 4.0), (1.5, 4.0), (2.44, 3.0), (7.9, 3.0)):
        sigmas = (sigma, sigma, 0) if len(shape) == 3 else sigma
        expected = ndimage.gaussian_filter(image, sigmas, mode=mode, truncate=truncate)
        assert filters.gaussian_planes(image, sigma, mode, truncate).tobytes() == expected.tobytes()
        assert filters.gaussian_filter(image, sigmas, mode, truncate).tobytes() == expected.tobytes()


@pytest.mark.parametrize("shape", [(224, 224), (299, 299), (64, 64), (67, 131), (5, 300)])
@pytest.mark.parametrize("mode", sorted(filters.PAD_MODES))
def test_long_kernels_on_both_axes_written_transposed_are_scipys(shape, mode):
    image = np.random.RandomState(3).uniform(-1, 1, size=shape)
    for sigma in (170.8, 19.52, 11.0):
        expected = ndimage.gaussian_filter(image, sigma, mode=mode, truncate=3.0)
        assert filters.gaussian_filter(image, sigma, mode, 3.0).tobytes() == expected.tobytes()


def test_unit_to_uint8_is_numpys_cast():
    from transforms.blur import unit_to_uint8
    u = np.concatenate((np.random.RandomState(4).rand(5000), [0.0, 1.0, 1 + 2 ** -52, 254.99999 / 255, 1 / 255]))
    assert unit_to_uint8(u).tobytes() == (u * 255).astype(np.uint8).tobytes()


def _colour_sample() -> np.ndarray:
    """Every colour whose channels are multiples of 5 or take one of the values near 0, 127 and 255
    (greys, ties of two maximal channels, black and white among them), as a (N, 1, 3) uint8 image."""
    levels = np.unique(np.concatenate((np.arange(0, 256, 5), [1, 2, 126, 127, 128, 253, 254, 255])))
    return np.array(list(itertools.product(levels, repeat=3)), dtype=np.uint8).reshape(-1, 1, 3)


@pytest.mark.parametrize("name,params", [("brightness", {"delta": d}) for d in (0.05, 0.1, 0.3, 0.5)]
                         + [("saturate", {"multiplier": m, "offset": o}) for m, o in ((0.1, 0), (2, 0.1), (30, 0.2))])
def test_recolor_in_one_pass_is_the_hsv_array_steps(name, params):
    from transforms import color
    image = _colour_sample()
    one_pass = getattr(color, name)(image, None, **params)
    steps = getattr(color, name)(np.asfortranarray(image), None, **params)  # not C-contiguous: the array steps
    assert one_pass.dtype == steps.dtype == np.float64 and one_pass.tobytes() == steps.tobytes()
