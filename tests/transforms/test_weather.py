"""Unit tests of transforms.weather: draws, ranges, textures and the spatter helpers."""
import inspect

import numpy as np
import pytest

from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE, PLASMA_MAPSIZE
from transforms import assets, weather

WEATHER = ("snow", "frost", "fog", "spatter")


@pytest.fixture(scope="module")
def image():
    return np.random.RandomState(0).randint(0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.uint8)


class RecordingRNG:
    """Delegates to a RandomState and records (method, size) of every draw."""

    def __init__(self, seed):
        self._rng = np.random.RandomState(seed)
        self.calls = []

    def __getattr__(self, method):
        def draw(*args, **kwargs):
            result = getattr(self._rng, method)(*args, **kwargs)
            self.calls.append((method, np.size(result)))
            return result
        return draw


@pytest.mark.parametrize("name", WEATHER)
def test_keywords_match_the_table(name):
    signature = inspect.signature(getattr(weather, name))
    keyword_only = {p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert keyword_only == set(CORRUPTIONS[name].params(1))


@pytest.mark.parametrize("name", WEATHER)
@pytest.mark.parametrize("severity", [1, 5])
def test_output_range_and_determinism(image, name, severity):
    params = CORRUPTIONS[name].params(severity)
    first = getattr(weather, name)(image, np.random.RandomState(7), **params)
    again = getattr(weather, name)(image, np.random.RandomState(7), **params)
    other = getattr(weather, name)(image, np.random.RandomState(8), **params)
    assert first.shape == image.shape and np.issubdtype(first.dtype, np.floating)
    assert first.min() >= 0 and first.max() <= 255
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_plasma_draws_24_uniform_arrays_in_unit_range():
    rng = RecordingRNG(3)
    plasma = weather.plasma_fractal(PLASMA_MAPSIZE, 2.0, rng)
    assert [method for method, _ in rng.calls] == ["uniform"] * 24
    assert sum(size for _, size in rng.calls) == 65_535
    assert plasma.shape == (256, 256) and plasma.dtype == np.float64
    assert plasma.min() == 0 and plasma.max() == 1


def test_plasma_consumes_one_double_per_number():
    rng, replay = np.random.RandomState(4), np.random.RandomState(4)
    weather.plasma_fractal(PLASMA_MAPSIZE, 1.4, rng)
    replay.random_sample(65_535)
    assert rng.random_sample() == replay.random_sample()


def test_plasma_smoother_with_larger_decay():
    rough = weather.plasma_fractal(64, 1.2, np.random.RandomState(5))
    smooth = weather.plasma_fractal(64, 3.0, np.random.RandomState(5))
    assert np.abs(np.diff(smooth, axis=1)).mean() < np.abs(np.diff(rough, axis=1)).mean()


@pytest.mark.parametrize("mapsize", [0, 1, 100, 255, True, 256.0])
def test_plasma_rejects_bad_mapsize(mapsize):
    with pytest.raises(ValueError, match="power of two"):
        weather.plasma_fractal(mapsize, 2.0, np.random.RandomState(0))


def test_fog_draws_only_the_plasma(image):
    rng, replay = np.random.RandomState(9), np.random.RandomState(9)
    weather.fog(image, rng, **CORRUPTIONS["fog"].params(3))
    replay.random_sample(65_535)
    assert rng.random_sample() == replay.random_sample()


def _coordinate_texture(shape):
    """A BGR texture whose pixel (r, c) spells r % 256, c % 256 and (r // 256, c // 256) in RGB."""
    rows, cols = np.indices(shape[:2])
    rgb = np.stack([rows % 256, cols % 256, (rows // 256) * 16 + cols // 256], axis=-1)
    return rgb[..., ::-1].astype(np.uint8)


def test_frost_never_picks_frost6_and_crops_inside(monkeypatch):
    shapes = [assets.frost_texture(i).shape for i in range(6)]
    picked = []

    def fake_texture(index, scale=None):
        picked.append(index)
        return _coordinate_texture(shapes[index])

    monkeypatch.setattr(weather, "frost_texture", fake_texture)
    black = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
    for seed in range(300):
        crop = weather.frost(black, np.random.RandomState(seed), image_weight=1, frost_weight=1).astype(int)
        top = crop[0, 0, 0] + 256 * (crop[0, 0, 2] // 16)
        left = crop[0, 0, 1] + 256 * (crop[0, 0, 2] % 16)
        height, width = shapes[picked[-1]][:2]
        assert 0 <= top < height - IMAGE_SIZE and 0 <= left < width - IMAGE_SIZE
        replay = np.random.RandomState(seed)
        assert (picked[-1], top, left) == (replay.randint(5), replay.randint(0, height - IMAGE_SIZE),
                                          replay.randint(0, width - IMAGE_SIZE))
    assert set(picked) == {0, 1, 2, 3, 4}


def test_frost_blends_raw_values(image):
    rng, replay = np.random.RandomState(11), np.random.RandomState(11)
    out = weather.frost(image, rng, image_weight=0.5, frost_weight=0.25)
    texture = assets.frost_texture(replay.randint(5))
    top, left = replay.randint(0, texture.shape[0] - 224), replay.randint(0, texture.shape[1] - 224)
    rgb = texture[top:top + 224, left:left + 224, ::-1]
    np.testing.assert_array_equal(out, np.clip(0.5 * image + 0.25 * rgb, 0, 255))


def test_frost_needs_an_rgb_image(image):
    with pytest.raises(ValueError, match=r"RGB image of shape \(H, W, 3\)"):
        weather.frost(image[..., 0], np.random.RandomState(0), image_weight=0.5, frost_weight=0.25)


def test_missing_textures_raise_with_the_fix(monkeypatch, tmp_path, image):
    monkeypatch.delenv("IMAGENET_CP_FROST_DIR", raising=False)
    monkeypatch.setattr(assets, "PACKAGE_FROST_DIR", tmp_path / "package")
    monkeypatch.setattr(assets, "USER_FROST_DIR", tmp_path / "user")
    assets.frost_texture.cache_clear()
    try:
        with pytest.raises(assets.FrostAssetError, match="imagenet-cp fetch-assets"):
            weather.frost(image, np.random.RandomState(0), **CORRUPTIONS["frost"].params(1))
    finally:
        assets.frost_texture.cache_clear()


def test_liquid_layer_is_dry_below_threshold():
    layer = weather.liquid_layer(np.random.RandomState(1), (64, 64), loc=0.65, scale=0.3,
                                 blur_sigma=2, threshold=0.68)
    assert layer.shape == (64, 64) and layer.dtype == np.float64
    assert ((layer == 0) | (layer >= 0.68)).all() and (layer == 0).any() and (layer > 0).any()


def test_spatter_draws_one_normal_field(image):
    for severity in (1, 5):
        rng = RecordingRNG(2)
        weather.spatter(image, rng, **CORRUPTIONS["spatter"].params(severity))
        assert rng.calls == [("normal", IMAGE_SIZE * IMAGE_SIZE)]


def test_water_mask_is_bgra_scaled_to_intensity():
    liquid = weather.liquid_layer(np.random.RandomState(3), (IMAGE_SIZE, IMAGE_SIZE), loc=0.65, scale=0.3,
                                  blur_sigma=3, threshold=0.68)
    mask = weather.water_mask(liquid, 0.6)
    assert mask.shape == (IMAGE_SIZE, IMAGE_SIZE, 4) and mask.dtype == np.float32
    np.testing.assert_array_equal(mask[..., 0], mask[..., 1])
    np.testing.assert_array_equal(mask[..., 0], mask[..., 2])
    assert mask[..., :3].max() == np.float32(0.6) and mask[..., :3].min() >= 0
    np.testing.assert_array_equal(mask[..., 3], np.float32(0.6))
    assert (mask[liquid == 0, 0] == 0).all()


def test_add_water_tints_towards_turquoise():
    u = np.full((4, 4, 3), 0.25, np.float32)
    mask = np.zeros((4, 4, 4), np.float32)
    np.testing.assert_array_equal(weather.add_water(u, mask), u * 255)
    mask[1, 2] = 1
    tinted = weather.add_water(u, mask)[1, 2]
    expected = np.minimum(0.25 * 255 + np.array(weather.WATER_COLOUR), 255)
    np.testing.assert_allclose(tinted, expected, rtol=1e-6)


def test_add_mud_covers_wet_areas_only():
    u = np.full((32, 32, 3), 0.5, np.float32)
    np.testing.assert_array_equal(weather.add_mud(u, np.zeros((32, 32)), 0.65, 1.5), u * 255)
    np.testing.assert_allclose(weather.add_mud(u, np.ones((32, 32)), 0.65, 1.5),
                               np.broadcast_to(weather.MUD_COLOUR, (32, 32, 3)), rtol=1e-6)


def test_snow_draws_normal_then_blur_angle(image, monkeypatch):
    angles = []

    def recording_blur(layer, radius, sigma, angle):
        angles.append(angle)
        return layer

    monkeypatch.setattr(weather, "magick_motion_blur", recording_blur)
    for seed in range(20):
        rng = RecordingRNG(seed)
        weather.snow(image, rng, **CORRUPTIONS["snow"].params(3))
        assert rng.calls == [("normal", IMAGE_SIZE * IMAGE_SIZE), ("uniform", 1)]
    assert all(-135 <= a < -45 for a in angles)


def test_snow_layer_is_thresholded_uint8():
    layer = weather.snow_layer(np.random.RandomState(0), IMAGE_SIZE, loc=0.55, scale=0.3, zoom=4,
                               threshold=0.9)
    assert layer.shape == (IMAGE_SIZE, IMAGE_SIZE) and layer.dtype == np.uint8
    assert ((layer == 0) | (layer >= int(0.9 * 255))).all() and (layer > 0).any()


def test_add_snow_without_flakes_only_whitens():
    u = np.full((8, 8, 3), 0.2, np.float32)
    out = weather.add_snow(u, np.zeros((8, 8), np.uint8), blend=1.0)
    np.testing.assert_array_equal(out, u.astype(np.float64) * 255)
    whitened = weather.add_snow(u, np.zeros((8, 8), np.uint8), blend=0.0)
    np.testing.assert_allclose(whitened, 255 * 0.8, rtol=1e-6)  # 1.5 * 0.2 + 0.5
