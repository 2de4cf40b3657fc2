"""The ImageNet-C table holds the reference's values (hendrycks/robustness make_imagenet_c.py)."""
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, EXTRA_CORRUPTIONS
from schemas.wnids import imagenet_wnids, wnid_to_label


def test_order_and_categories():
    assert BENCHMARK_CORRUPTIONS == (
        "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
        "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
        "jpeg_compression")
    assert EXTRA_CORRUPTIONS == ("speckle_noise", "gaussian_blur", "spatter", "saturate")
    counts = {}
    for c in CORRUPTIONS.values():
        counts[c.category] = counts.get(c.category, 0) + 1
    assert counts == {"noise": 3, "blur": 4, "weather": 4, "digital": 4, "extra": 4}


def test_zoom_factor_lists_keep_their_float_error_endpoints():
    lengths = [len(CORRUPTIONS["zoom_blur"].params(s)["factors"]) for s in range(1, 6)]
    assert lengths == [12, 16, 11, 13, 11]
    assert all(CORRUPTIONS["zoom_blur"].params(s)["factors"][0] == 1.0 for s in range(1, 6))


def test_elastic_uses_the_244_constants_bit_for_bit():
    rows = [CORRUPTIONS["elastic_transform"].params(s) for s in range(1, 6)]
    assert [(r["alpha"], r["sigma"], r["affine_jitter"]) for r in rows] == [
        (488, 170.79999999999998, 24.400000000000002), (488, 19.52, 48.800000000000004),
        (12.200000000000001, 2.44, 4.88), (17.080000000000002, 2.44, 4.88),
        (29.279999999999998, 2.44, 4.88)]


def test_rows_are_read_only():
    import pytest
    with pytest.raises(TypeError):
        CORRUPTIONS["gaussian_noise"].params(1)["sigma"] = 1.0


def test_wnids():
    wnids = imagenet_wnids()
    assert len(wnids) == 1000 and wnids[0] == "n01440764" and wnids[-1] == "n15075141"
    assert wnid_to_label()["n01443537"] == 1


def test_selections_follow_table_order_and_name_the_valid_values():
    import pytest
    from schemas.imagenet_c import select_corruptions
    from schemas.imagenet_p import select_perturbations
    assert select_perturbations(["shear", "rotate"]) == ("rotate", "shear")
    assert select_corruptions(["saturate", "fog"]) == ("fog", "saturate")
    with pytest.raises(ValueError, match="valid names: gaussian_noise, shot_noise"):
        select_corruptions(["fogg"])
    with pytest.raises(ValueError, match="empty perturbation selection"):
        select_perturbations([])
