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
