"""AUROC, AUPR and FPR95 on hand-computed cases (values agree with sklearn.metrics)."""
import numpy as np
import pytest

from metrics.detection import auroc, average_precision, fpr_at_tpr


def test_hand_computed_without_ties():
    scores = [0.9, 0.8, 0.7, 0.6]
    positive = [True, False, True, False]
    assert auroc(scores, positive) == pytest.approx(3 / 4)
    assert average_precision(scores, positive) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    assert fpr_at_tpr(scores, positive, 0.95) == pytest.approx(1 / 2)
    assert fpr_at_tpr(scores, positive, 0.5) == 0.0


def test_ties_form_one_threshold():
    scores = [1.0, 1.0, 0.0]
    positive = [True, False, False]
    assert auroc(scores, positive) == pytest.approx((0.5 + 1) / 2)
    assert average_precision(scores, positive) == pytest.approx(0.5)
    assert fpr_at_tpr(scores, positive) == pytest.approx(1 / 2)


def test_perfect_and_inverted_separation():
    scores = np.arange(10.0)
    positive = scores >= 5
    assert auroc(scores, positive) == 1.0 and average_precision(scores, positive) == 1.0
    assert fpr_at_tpr(scores, positive) == 0.0
    assert auroc(-scores, positive) == 0.0 and fpr_at_tpr(-scores, positive) == 1.0


@pytest.mark.parametrize("scores, positive, message", [
    ([1, 2], [True, True], "one positive and one negative"),
    ([1, 2, 3], [True, False], "differ in length"),
    ([1, np.nan], [True, False], "finite"),
])
def test_bad_input(scores, positive, message):
    with pytest.raises(ValueError, match=message):
        auroc(scores, positive)
