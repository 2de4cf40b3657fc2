"""ImageNet-A under both conventions and ImageNet-O detection on built logits."""
import numpy as np
import pytest

from metrics.imagenet_a_o import imagenet_a_accuracy, imagenet_o_metrics, max_softmax
from schemas.class_subsets import subset_indices, subset_wnids
from schemas.wnids import imagenet_wnids

A = subset_indices("imagenet_a")
O = subset_indices("imagenet_o")


def test_the_two_subsets_are_200_sorted_imagenet_wnids_and_differ():
    wnids = set(imagenet_wnids())
    for subset in ("imagenet_a", "imagenet_o"):
        listed = subset_wnids(subset)
        assert len(set(listed)) == 200 and list(listed) == sorted(listed) and set(listed) <= wnids
    assert set(A) != set(O) and len(set(A) & set(O)) == 59
    assert subset_wnids("imagenet_a")[:2] == ("n01498041", "n01531178")
    assert subset_wnids("imagenet_o")[:2] == ("n01443537", "n01704323")
    with pytest.raises(ValueError, match="valid: imagenet_a, imagenet_o"):
        subset_wnids("imagenet_r")


def test_accuracy_conventions_differ_when_a_non_a_class_wins():
    outside = np.setdiff1d(np.arange(1000), A)[0]
    logits = np.zeros((2, 1000))
    labels = np.array([A[3], A[7]])
    logits[0, A[3]] = 2.0                    # right under both conventions
    logits[1, A[7]] = 2.0
    logits[1, outside] = 5.0                 # full argmax picks a class outside ImageNet-A
    result = imagenet_a_accuracy(logits, labels)
    assert result == {"accuracy_200": 100.0, "accuracy_1000": 50.0}


def test_accuracy_rejects_labels_outside_the_subset_and_bad_shapes():
    outside = np.setdiff1d(np.arange(1000), A)[0]
    with pytest.raises(ValueError, match="200 classes"):
        imagenet_a_accuracy(np.zeros((1, 1000)), np.array([outside]))
    with pytest.raises(ValueError, match="shape"):
        imagenet_a_accuracy(np.zeros((1, 200)), np.array([A[0]]))


def test_max_softmax_is_taken_over_the_subset_only():
    logits = np.zeros((1, 1000))
    logits[0, O[0]] = np.log(199.0)          # softmax over the 200: 199 / (199 + 199) = 0.5
    logits[0, np.setdiff1d(np.arange(1000), O)] = 50.0
    assert max_softmax(logits, O)[0] == pytest.approx(0.5)


def test_imagenet_o_metrics_with_o_as_positive():
    def confident(p):                          # max softmax p over the O classes
        row = np.zeros(1000)
        row[O[0]] = np.log(p * 199 / (1 - p))
        return row

    logits_o = np.stack([confident(p) for p in (0.1, 0.3)])      # low confidence: look anomalous
    logits_in = np.stack([confident(p) for p in (0.2, 0.9, 0.95)])
    result = imagenet_o_metrics(logits_o, logits_in)
    # scores -p: O at -0.1 (rank 1), in at -0.2, O at -0.3, then in: AP = 0.5*1 + 0.5*2/3
    assert result["AUPR"] == pytest.approx(100 * (0.5 + 1 / 3))
    assert result["AUROC"] == pytest.approx(100 * 5 / 6)
    assert result["FPR95"] == pytest.approx(100 / 3)
