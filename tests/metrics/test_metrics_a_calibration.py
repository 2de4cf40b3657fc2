"""RMS calibration error, AURRA and the two FPR95 rules against the reference's algorithms."""
import numpy as np
import pytest

from metrics.detection import fpr_at_recall_closest, fpr_at_tpr
from metrics.imagenet_a_o import aurra, imagenet_a_metrics, rms_calibration_error
from schemas.class_subsets import subset_indices


def reference_calib_err(confidence, correct, beta=100):
    """``calib_err(p='2')`` of natural-adv-examples/calibration_tools.py, transcribed."""
    idxs = np.argsort(confidence)
    confidence, correct = confidence[idxs], correct[idxs]
    bins = [[i * beta, (i + 1) * beta] for i in range(len(confidence) // beta)]
    bins[-1] = [bins[-1][0], len(confidence)]
    cerr, total = 0, len(confidence)
    for i in range(len(bins) - 1):
        c, k = confidence[bins[i][0]:bins[i][1]], correct[bins[i][0]:bins[i][1]]
        cerr += len(c) / total * np.square(np.abs(np.nanmean(c) - np.nanmean(k)))
    return np.sqrt(cerr)


def test_rms_calibration_error_reference_and_all_bins():
    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.2, 1.0, 750)
    correct = rng.uniform(size=750) < confidence ** 2
    reference = rms_calibration_error(confidence, correct)
    assert reference == pytest.approx(reference_calib_err(confidence, correct), abs=1e-15)
    all_bins = rms_calibration_error(confidence, correct, "all_bins")
    assert all_bins != reference
    order = np.argsort(confidence)
    c, k = confidence[order], correct[order].astype(float)
    edges = [0, 100, 200, 300, 400, 500, 600, 750]   # 7 bins; the last takes the 50 left over
    expected = np.sqrt(sum((b - a) / 750 * (c[a:b].mean() - k[a:b].mean()) ** 2
                           for a, b in zip(edges[:-1], edges[1:])))
    assert all_bins == pytest.approx(expected)


def test_rms_calibration_error_small_sets():
    assert rms_calibration_error([0.9, 0.5], [True, False]) is None          # the reference raises
    assert rms_calibration_error([0.9, 0.5], [True, False], "all_bins") == pytest.approx(0.2)
    with pytest.raises(ValueError, match="unknown calibration variant"):
        rms_calibration_error([0.9], [1], "fixed")


def test_aurra_by_hand():
    # confidence order 0.9, 0.8, 0.3, 0.1 -> correct 1, 0, 1, 0 -> accuracies 1, 1/2, 2/3, 1/2
    assert aurra([0.3, 0.9, 0.1, 0.8], [1, 1, 0, 0]) == pytest.approx((1 + 0.5 + 2 / 3 + 0.5) / 4)


def test_fpr95_reference_rule_differs_from_first_reaching():
    # 19 positives: recall 18/19 = 0.947 is closer to 0.95 than 19/19, the first >= 0.95, whose
    # threshold (10) a negative shares.
    scores = np.r_[np.arange(40, 22, -1), 10, 10, 1].astype(float)
    positive = np.r_[np.ones(18, bool), True, False, False]
    assert fpr_at_recall_closest(scores, positive) == 0.0
    assert fpr_at_tpr(scores, positive) == 0.5


def test_fpr95_reference_real_full_recall_point_beats_the_appended_one():
    # 2 positives: recall 1 (distance 0.05) ties with the appended (1, 0 FP); the real point comes first.
    assert fpr_at_recall_closest([3.0, 2.0, 1.0], [True, False, True]) == 1.0


def test_imagenet_a_metrics_names_both_conventions():
    a = subset_indices("imagenet_a")
    logits = np.zeros((3, 1000))
    logits[0, a[0]] = 5
    logits[1, a[1]] = 5
    logits[1, 0] = 9                      # outside A: wrong under 1000-way only
    logits[2, a[3]] = 5
    result = imagenet_a_metrics(logits, np.array([a[0], a[1], a[2]]))
    assert result["accuracy_200"] == pytest.approx(200 / 3) and result["accuracy_1000"] == pytest.approx(100 / 3)
    assert result["rms_calibration_error"] is None and result["rms_calibration_error_1000"] is None
    assert 0 < result["rms_calibration_error_all_bins"] < 100 and 0 < result["aurra"] <= 100
    assert result["aurra_1000"] < result["aurra"]
