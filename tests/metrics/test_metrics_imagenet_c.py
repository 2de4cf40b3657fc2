"""ImageNet-C metrics against AlexNet's own table and hand-computed cases."""
import numpy as np
import pytest

from metrics.imagenet_c import (corruption_error, relative_corruption_error, summarize_imagenet_c,
                                unnormalized_ce)
from schemas.baselines import ALEXNET_IMAGENET_C, ErrorBaseline
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, CORRUPTIONS, EXTRA_CORRUPTIONS

ALEX = dict(ALEXNET_IMAGENET_C.corruptions)

# The Average column of the reference README's AlexNet table, benchmark order then extras.
README_AVERAGES = [0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360, 0.866816,
                   0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500,
                   0.845388, 0.787108, 0.717512, 0.658248]


def test_alexnet_table_covers_every_corruption_and_matches_the_readme_averages():
    assert tuple(ALEX) == tuple(CORRUPTIONS)
    means = [np.mean(ALEX[c]) for c in CORRUPTIONS]
    np.testing.assert_allclose(means, README_AVERAGES, atol=1e-6)


def test_alexnet_scores_100_everywhere():
    summary = summarize_imagenet_c(ALEX, clean=ALEXNET_IMAGENET_C.clean)
    assert summary["mCE"] == pytest.approx(100)
    assert summary["relative_mCE"] == pytest.approx(100)
    for c in BENCHMARK_CORRUPTIONS:
        assert summary["CE"][c] == pytest.approx(100)
        assert summary["relative_CE"][c] == pytest.approx(100)
    assert summary["extra"]["mCE"] == pytest.approx(100)
    assert set(summary["extra"]["CE"]) == set(EXTRA_CORRUPTIONS)
    assert summary["unnormalized_mCE"] == pytest.approx(100 * np.mean(README_AVERAGES[:15]), abs=1e-4)
    assert summary["missing"] == [] and summary["baseline"] == "AlexNet"


def test_hand_computed_ce_and_relative_ce():
    errors = [0.1, 0.2, 0.3, 0.4, 0.5]          # sum 1.5, mean 0.3
    base = [0.5, 0.5, 0.5, 0.5, 0.5]            # sum 2.5
    assert unnormalized_ce(errors) == pytest.approx(30)
    assert corruption_error(errors, base) == pytest.approx(60)
    # (1.5 - 5*0.1) / (2.5 - 5*0.3) = 1.0 / 1.0
    assert relative_corruption_error(errors, 0.1, base, 0.3) == pytest.approx(100)
    assert relative_corruption_error(errors, 0.2, base, 0.3) == pytest.approx(50)


def test_mce_is_the_mean_over_the_15_and_ignores_extras():
    baseline = ErrorBaseline("flat", 0.2, {c: (0.5,) * 5 for c in CORRUPTIONS})
    errors = {c: (0.25,) * 5 for c in BENCHMARK_CORRUPTIONS}
    errors["gaussian_noise"] = (0.5,) * 5       # CE 100, the other 14 CE 50
    errors["saturate"] = (0.05,) * 5            # an extra: never in mCE
    summary = summarize_imagenet_c(errors, clean=0.2, baseline=baseline)
    assert summary["mCE"] == pytest.approx((100 + 14 * 50) / 15)
    assert summary["unnormalized_mCE"] == pytest.approx((50 + 14 * 25) / 15)
    # relative: (0.5-0.2)/(0.5-0.2) = 100 and (0.25-0.2)/(0.3) = 16.67
    assert summary["relative_mCE"] == pytest.approx((100 + 14 * 100 / 6) / 15)
    assert summary["extra"]["CE"] == {"saturate": pytest.approx(10)}
    assert summary["extra"]["mCE"] is None and summary["extra"]["missing"] == [
        "speckle_noise", "gaussian_blur", "spatter"]


def test_without_clean_error_relative_values_are_null():
    summary = summarize_imagenet_c(ALEX)
    assert summary["relative_mCE"] is None and summary["clean_error"] is None
    assert set(summary["relative_CE"].values()) == {None}


def test_missing_benchmark_corruption_is_an_error_not_a_partial_mce():
    errors = {c: ALEX[c] for c in BENCHMARK_CORRUPTIONS if c != "fog"}
    with pytest.raises(ValueError, match="missing: fog"):
        summarize_imagenet_c(errors)
    partial = summarize_imagenet_c(errors, allow_incomplete=True)
    assert partial["mCE"] is None and partial["missing"] == ["fog"]
    assert partial["CE"]["snow"] == pytest.approx(100)


@pytest.mark.parametrize("errors, message", [
    ({"fogg": (0.5,) * 5}, "unknown corruption"),
    ({"fog": (0.5,) * 4}, "expected 5 errors"),
    ({"fog": (50, 60, 70, 80, 90)}, "fractions"),
])
def test_bad_input_is_rejected(errors, message):
    with pytest.raises(ValueError, match=message):
        summarize_imagenet_c(errors, allow_incomplete=True)


def test_clean_error_in_percent_is_rejected():
    with pytest.raises(ValueError, match="fraction"):
        summarize_imagenet_c(ALEX, clean=43.5)
