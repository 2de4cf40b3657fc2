"""VCR's continuous corruptions: parameter draws from the example's stream, values stored, code variants."""
import numpy as np
import pytest
from skimage import data

import transforms
from schemas.vcr import GRID_POINTS, VCR_CORRUPTIONS
from transforms import blur
from transforms.units import to_unit
from transforms.vcr import apply_corruption, draw_parameters, vcr_corrupt, vcr_seed


@pytest.fixture(scope="module")
def crop():
    return transforms.preprocess(data.chelsea())


@pytest.mark.parametrize("name", list(VCR_CORRUPTIONS))
def test_draws_lie_on_the_grid_and_regenerate(crop, name):
    spec = VCR_CORRUPTIONS[name]
    global_state = np.random.get_state()[1].copy()
    seed = vcr_seed(7, "n02123045/x.JPEG", name, 3)
    image, params = vcr_corrupt(crop, name, np.random.RandomState(seed))
    assert image.dtype == np.uint8 and image.shape == crop.shape
    for p in spec.parameters:
        value = params[p.name]
        if p.integer:
            assert isinstance(value, int) and p.low <= value <= p.high
        else:
            assert isinstance(value, float) and value in np.linspace(p.low, p.high, GRID_POINTS)
    assert {k: params[k] for k in spec.fixed} == dict(spec.fixed)
    # The stored values, applied on a stream that made the same draws, give the same pixels.
    rng = np.random.RandomState(seed)
    assert draw_parameters(name, rng) == params
    np.testing.assert_array_equal(apply_corruption(crop, name, params, rng), image)
    again, params_again = vcr_corrupt(crop, name, np.random.RandomState(seed))
    np.testing.assert_array_equal(again, image)
    assert params_again == params
    np.testing.assert_array_equal(np.random.get_state()[1], global_state)  # no global RNG


def test_uniform_mode_and_seeds():
    rng = np.random.RandomState(0)
    values = [draw_parameters("contrast", rng, "uniform")["factor"] for _ in range(200)]
    assert 0.0001 <= min(values) and max(values) <= 0.3
    assert not set(values) & set(np.linspace(0.0001, 0.3, GRID_POINTS))
    assert vcr_seed(0, "a", "frost", 0) != vcr_seed(0, "a", "frost", 1) != vcr_seed(1, "a", "frost", 1)
    assert vcr_seed(0, "a", "frost", 1) != transforms.example_seed(0, "a", "frost", 1)
    with pytest.raises(ValueError, match="unknown VCR corruption"):
        draw_parameters("fog", rng)
    with pytest.raises(ValueError, match="parameter mode"):
        draw_parameters("contrast", rng, "index")


def test_vcr_code_variants(crop):
    params = {"sigma": 1.0, "max_delta": 3, "iterations": 1}
    faithful = apply_corruption(crop, "glass_blur", params, np.random.RandomState(1))
    code = apply_corruption(crop, "glass_blur", params, np.random.RandomState(1), operators="vcr-code")
    twice = (blur.gaussian_rgb(((blur.gaussian_rgb(to_unit(crop), 1.0) * 255).astype(np.uint8)) / 255., 1.0)
             * 255).astype(np.uint8)
    # Outside the 32x32 corner (plus the blur's reach) VCR's variant is just two Gaussian blurs.
    np.testing.assert_array_equal(code[40:, 40:], twice[40:, 40:])
    assert not np.array_equal(code[40:, 40:], faithful[40:, 40:])
    frost = apply_corruption(crop, "frost", {"image_weight": 0.5, "frost_weight": 0.5}, np.random.RandomState(2),
                             operators="vcr-code")
    assert frost.shape == crop.shape
    with pytest.raises(ValueError, match="no vcr-code operator"):
        apply_corruption(crop, "motion_blur", {"radius": 10.0, "sigma": 10.0}, np.random.RandomState(0), "vcr-code")


def test_frost_on_a_large_image_says_why():
    large = np.zeros((512, 512, 3), np.uint8)
    with pytest.raises(ValueError, match="texture is smaller than 512x512; use operators 'vcr-code'"):
        apply_corruption(large, "frost", {"image_weight": 0.5, "frost_weight": 0.5}, np.random.RandomState(0))
    out = apply_corruption(large, "frost", {"image_weight": 0.5, "frost_weight": 0.5}, np.random.RandomState(0),
                           operators="vcr-code")
    assert out.shape == large.shape
