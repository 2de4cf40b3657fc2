"""ImageNet-P schedules and sequence behaviour (docs/reference/algorithms.md, "ImageNet-P")."""
import math

import numpy as np
import pytest

import transforms
from schemas.imagenet_p import (CATEGORIES, PERTURBATIONS, SETS, TEST_PERTURBATIONS,
                                VALIDATION_PERTURBATIONS, Ramp)
from transforms.affine import affine, inverse_affine_coefficients, tilt_homography
from transforms.perturbations import drip
from transforms.preprocess import center_crop

NOISES = ("gaussian_noise", "shot_noise", "speckle_noise")
ALL_SEQUENCES = [(name, d) for name, spec in PERTURBATIONS.items() for d in spec.difficulties]


@pytest.fixture(scope="module")
def image():
    """A smooth, textured 256 x 320 RGB image (short side 256, as after Resize(256))."""
    rows, cols = np.mgrid[0:256, 0:320]
    planes = [128 + 100 * np.sin(rows / 9.0 + k) * np.cos(cols / 13.0 - k) for k in range(3)]
    return np.stack(planes, axis=-1).astype(np.uint8)


def _schedule(name, key):
    return PERTURBATIONS[name].params(1)[key]


# ------------------------------------------------------------------------------------ the table

def test_names_sets_and_categories():
    assert TEST_PERTURBATIONS == ("gaussian_noise", "shot_noise", "motion_blur", "zoom_blur", "snow",
                                  "brightness", "translate", "rotate", "tilt", "scale")
    assert VALIDATION_PERTURBATIONS == ("speckle_noise", "gaussian_blur", "spatter", "shear")
    by_category = {c: tuple(n for n, p in PERTURBATIONS.items() if p.category == c) for c in CATEGORIES}
    assert by_category == {
        "noise": ("gaussian_noise", "shot_noise"), "blur": ("motion_blur", "zoom_blur"),
        "weather": ("snow", "brightness"), "digital": ("translate", "rotate", "tilt", "scale"),
        "validation": VALIDATION_PERTURBATIONS}
    assert {p.subset for p in PERTURBATIONS.values()} == set(SETS)


def test_difficulties_frames_and_rate_control():
    for name, spec in PERTURBATIONS.items():
        noise = name in NOISES
        assert spec.difficulties == ((1, 2, 3) if noise else (1,)), name
        assert spec.frames == (41 if name == "translate" else 31), name
        assert spec.rate_control == (("-tune", "grain") if noise else ("-crf", "20")), name
    assert [PERTURBATIONS["shot_noise"].dataset_name(d) for d in (1, 2, 3)] == [
        "shot_noise", "shot_noise_2", "shot_noise_3"]


def test_noise_levels():
    levels = {name: [PERTURBATIONS[name].params(d) for d in (1, 2, 3)] for name in NOISES}
    assert [p["sigma"] for p in levels["gaussian_noise"]] == [0.03, 0.05, 0.08]
    assert [p["photons"] for p in levels["shot_noise"]] == [300, 120, 60]
    assert [p["sigma"] for p in levels["speckle_noise"]] == [0.05, 0.10, 0.15]
    assert all(p["frames"] == 31 for rows in levels.values() for p in rows)


def test_ramps_reproduce_the_reference_expressions_bit_for_bit():
    frames = range(31)
    assert _schedule("motion_blur", "angles") == tuple((i - 30) * 4 for i in frames)
    assert _schedule("snow", "angles") == tuple(i * 4 - 150 for i in frames)
    assert _schedule("brightness", "deltas") == tuple((i - 15) * 2 / 100. for i in frames)
    assert _schedule("rotate", "angles") == tuple(i - 15 for i in frames)
    assert _schedule("tilt", "angles") == tuple(i - 15 for i in frames)
    assert _schedule("shear", "shears") == tuple(i - 15 for i in frames)
    assert _schedule("scale", "scales") == tuple((i * 2.5 + 40) / 100. for i in frames)
    assert _schedule("gaussian_blur", "sigmas") == tuple(0.25 + 0.035 * i for i in frames)
    assert _schedule("zoom_blur", "scales") == tuple(1 + 0.004 * i for i in frames)
    assert _schedule("translate", "shifts") == tuple(i - 20 for i in range(41))
    assert Ramp(40, 2.5, 100.).at(30) == 1.15 and _schedule("brightness", "deltas")[15] == 0


# --------------------------------------------------------------------------- sequence contract

@pytest.mark.parametrize("name,difficulty", ALL_SEQUENCES, ids=[f"{n}-{d}" for n, d in ALL_SEQUENCES])
def test_frame_counts_and_dtype(image, name, difficulty):
    frames = transforms.perturb_sequence(image, name, np.random.RandomState(0), difficulty)
    assert frames.shape == (PERTURBATIONS[name].frames, 224, 224, 3)
    assert frames.dtype == np.uint8 and frames.flags.c_contiguous


@pytest.mark.parametrize("name", NOISES)
def test_noise_sequences_start_clean_and_then_vary(image, name):
    crop = center_crop(image)
    for difficulty in (1, 2, 3):
        frames = transforms.perturb_sequence(image, name, np.random.RandomState(difficulty), difficulty)
        np.testing.assert_array_equal(frames[0], crop)
        assert all((frames[i] != crop).any() for i in range(1, 31))
        assert (frames[1] != frames[2]).any()


def test_gaussian_noise_frames_are_deterministic_and_torch_shaped(image):
    first = transforms.perturb_sequence(image, "gaussian_noise", np.random.RandomState(7), 2)
    again = transforms.perturb_sequence(image, "gaussian_noise", np.random.RandomState(7), 2)
    other = transforms.perturb_sequence(image, "gaussian_noise", np.random.RandomState(8), 2)
    np.testing.assert_array_equal(first, again)
    assert (first[1:] != other[1:]).any()
    # Frame i draws the i-th standard_normal((3, 224, 224)) of the stream, in CHW order,
    # and applies it in float32 as torch would.
    rng = np.random.RandomState(7)
    tensor = center_crop(image).transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    for i in range(1, 31):
        noise = rng.standard_normal((3, 224, 224)).astype(np.float32)
        expected = (np.clip(tensor + np.float32(0.05) * noise, 0, 1) * np.float32(255)).astype(np.uint8)
        np.testing.assert_array_equal(first[i], expected.transpose(1, 2, 0))


def test_translate_moves_one_pixel_right_per_frame(image):
    frames = transforms.perturb_sequence(image, "translate", np.random.RandomState(0))
    np.testing.assert_array_equal(frames[20], center_crop(image))  # shift 0
    for i in range(40):
        np.testing.assert_array_equal(frames[i + 1][:, 1:], frames[i][:, :-1])
    assert (frames[0] != frames[1]).any()


def test_affine_angle_turns_clockwise_about_the_torchvision_centre():
    marked = np.zeros((8, 8), np.uint8)
    marked[4, 6] = 255  # two pixels right of the centre pixel (4, 4)
    assert np.argwhere(affine(marked, angle=90)).tolist() == [[6, 4]]  # now two pixels below it
    assert np.argwhere(affine(marked, translate=(1, 0))).tolist() == [[4, 7]]
    assert np.argwhere(affine(marked, translate=(0, 1))).tolist() == [[5, 6]]


@pytest.mark.parametrize("angle", [-15, -4, 0, 7, 15])
def test_rotation_coefficients_invert_the_rotation(angle):
    a, b, _, d, e, _ = inverse_affine_coefficients((384, 256), angle, (0, 0), 1.0, 0.0)
    t = math.radians(angle)
    forward = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    np.testing.assert_allclose(np.array([[a, b], [d, e]]) @ forward, np.eye(2), atol=1e-12)


@pytest.mark.parametrize("shear", [-15, -1, 9, 15])
def test_shear_coefficients_invert_the_old_torchvision_shear(shear):
    a, b, c, d, e, f = inverse_affine_coefficients((384, 256), 0.0, (0, 0), 1.0, shear)
    s = math.radians(shear)
    forward = np.array([[1, -math.sin(s)], [0, math.cos(s)]])  # torchvision 0.2.x's shear matrix at angle 0
    np.testing.assert_allclose(np.array([[a, b], [d, e]]) @ forward, np.eye(2), atol=1e-12)
    centre = np.array([384 * 0.5 + 0.5, 256 * 0.5 + 0.5])
    np.testing.assert_allclose(np.array([[a, b], [d, e]]) @ centre + [c, f], centre, atol=1e-9)


def test_rotate_and_shear_are_identity_in_the_middle_frame_only(image):
    crop = center_crop(image)
    for name in ("rotate", "shear"):
        frames = transforms.perturb_sequence(image, name, np.random.RandomState(0))
        np.testing.assert_array_equal(frames[15], crop)
        assert (frames[14] != crop).any() and (frames[16] != crop).any()
        assert (frames[14] != frames[16]).any()


def test_scale_shrinks_with_black_borders(image):
    frames = transforms.perturb_sequence(image, "scale", np.random.RandomState(0))
    assert (frames[0][:20] == 0).all() and (frames[0][-20:] == 0).all()  # 0.4 x: border is empty
    assert (frames[-1][:20] != 0).any()  # 1.15 x fills the crop


def test_zoom_blur_starts_clean_and_averages_ever_stronger_zooms(image):
    frames = transforms.perturb_sequence(image, "zoom_blur", np.random.RandomState(0))
    crop = center_crop(image).astype(np.int16)
    np.testing.assert_array_equal(frames[0], crop)
    errors = [np.abs(frame - crop).mean() for frame in frames]
    assert all(later > earlier for earlier, later in zip(errors[1:], errors[2:]))


def test_brightness_offsets_the_value_by_the_schedule():
    grey = np.full((256, 300, 3), 100, np.uint8)
    frames = transforms.perturb_sequence(grey, "brightness", np.random.RandomState(0))
    deltas = _schedule("brightness", "deltas")
    expected = [int(255 * min(max(100 / 255. + d, 0), 1)) for d in deltas]
    assert [int(f[0, 0, 0]) for f in frames] == expected
    assert all((f == f[0, 0, 0]).all() for f in frames)
    assert expected[0] == 23 and expected[30] == 176


def test_tilt_middle_frame_is_a_slight_zoom_not_the_identity(image):
    h, w = image.shape[:2]
    f = math.hypot(w, h)
    np.testing.assert_allclose(tilt_homography(w, h, 0), [[f, 0, w / 2], [0, f, h / 2], [0, 0, 1 + f]])
    frames = transforms.perturb_sequence(image, "tilt", np.random.RandomState(0))
    crop = center_crop(image).astype(np.int16)
    middle_error = np.abs(frames[15] - crop).mean()
    assert 0 < middle_error < np.abs(frames[0] - crop).mean()
    assert (frames[0] != frames[30]).any()


def test_drip_equals_numpy_convolve_along_columns():
    rng = np.random.RandomState(3)
    liquid = rng.normal(0.65, 0.27, (224, 224))
    liquid[liquid < 0.69] = 0
    for kernel in (_schedule("spatter", "drip_kernel"), (0.2, 0.8)):
        expected = np.apply_along_axis(lambda col: np.convolve(col, np.array(kernel), mode="same"),
                                       axis=0, arr=liquid)
        # np.convolve's vectorised dot product rounds differently on some CPUs (AVX-512: 1 ulp);
        # the bit-exact contract is the reference's frames (test_perturbations_fidelity.py).
        np.testing.assert_allclose(drip(liquid, kernel), expected, rtol=0, atol=4e-16)
    column = np.zeros((8, 1))
    column[3] = 1.0
    assert drip(column, (0.05, 0.1, 0.15, 0.7))[:, 0].tolist() == [0, 0, 0.05, 0.1, 0.15, 0.7, 0, 0]


def test_spatter_and_snow_draw_once_and_move(image):
    for name in ("spatter", "snow"):
        rng = np.random.RandomState(5)
        frames = transforms.perturb_sequence(image, name, rng)
        reference = np.random.RandomState(5)
        reference.normal(size=(224, 224))
        assert rng.randint(2 ** 31) == reference.randint(2 ** 31), name
        assert (frames[0] != frames[30]).any() and (frames[0] != center_crop(image)).any()


def test_deterministic_perturbations_ignore_the_seed(image):
    for name in ("motion_blur", "zoom_blur", "gaussian_blur", "brightness"):
        np.testing.assert_array_equal(
            transforms.perturb_sequence(image, name, np.random.RandomState(1)),
            transforms.perturb_sequence(image, name, np.random.RandomState(2)))


# ---------------------------------------------------------------------------------- bad input

def test_bad_input_raises_value_error_naming_valid_values(image):
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="valid names: gaussian_noise"):
        transforms.perturb_sequence(image, "fog", rng)
    with pytest.raises(ValueError, match=r"must be one of \[1\]"):
        transforms.perturb_sequence(image, "rotate", rng, 2)
    with pytest.raises(ValueError, match=r"must be one of \[1, 2, 3\]"):
        transforms.perturb_sequence(image, "shot_noise", rng, 4)
    with pytest.raises(ValueError, match="must be one of"):
        transforms.perturb_sequence(image, "shot_noise", rng, True)
    with pytest.raises(ValueError, match="preprocess_uncropped"):
        transforms.perturb_sequence(center_crop(image), "rotate", rng)
    with pytest.raises(ValueError, match="RandomState"):
        transforms.perturb_sequence(image, "rotate", np.random.default_rng(0))
    with pytest.raises(ValueError, match="resample"):
        affine(image, resample="bicubic")
