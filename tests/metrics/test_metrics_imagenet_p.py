"""ImageNet-P metrics: pairs, flip probability, top-5 distance and their normalisation."""
import numpy as np
import pytest
from scipy.stats import rankdata

from metrics.imagenet_p import (flip_probability, flip_probability_by_offset, frame_pairs, mean_top5_distance,
                                parse_sequence_set, summarize_imagenet_p, top5_distance,
                                top5_distance_from_ranks, top_k_classes)
from schemas.imagenet_p import TEST_PERTURBATIONS as MFR_PERTURBATIONS


@pytest.mark.parametrize("n, d, count", [(31, 1, 30), (31, 2, 29), (31, 3, 28), (41, 1, 40), (41, 3, 38)])
def test_pair_counts_match_the_spec_table(n, d, count):
    assert len(frame_pairs(n, "rotate", d)) == count
    assert len(frame_pairs(n, "shot_noise", d)) == n - 1


def test_pairs_noise_against_frame_0_others_at_stride():
    assert frame_pairs(4, "gaussian_noise", 3).tolist() == [[0, 1], [0, 2], [0, 3]]
    assert frame_pairs(5, "tilt", 2).tolist() == [[0, 2], [1, 3], [2, 4]]
    with pytest.raises(ValueError, match="difficulty"):
        frame_pairs(31, "tilt", 4)


@pytest.mark.parametrize("sigma, expected", [
    ((1, 2, 3, 4, 5), 0),
    ((6, 6, 6, 1, 2), 18),          # the largest possible distance
    ((2, 1, 3, 4, 5), 2),
    ((6, 6, 6, 6, 6), 15),
    ((999, 7, 6, 4, 5), 12),        # every rank beyond 5 weighs as 6: 5+4+3+0+0
    ((1, 2, 3, 4, 500), 1),
])
def test_top5_distance_hand_computed(sigma, expected):
    assert top5_distance_from_ranks(np.array(sigma)) == expected


def test_top5_distance_from_top5_lists_and_its_asymmetry():
    a = np.array([10, 11, 12, 13, 14])
    b = np.array([13, 14, 99, 98, 97])            # sigma(a->b) = (6, 6, 6, 1, 2)
    assert top5_distance(a, b) == 18
    assert top5_distance(b, a) == 12               # sigma(b->a) = (4, 5, 6, 6, 6): 3+3+3+2+1
    assert top5_distance(a, a) == 0


def test_top_k_orders_ties_by_class_index_like_rankdata_ordinal():
    logits = np.array([0.0, 3.0, 1.0, 3.0, 2.0, 1.0, 5.0])
    order = np.argsort(rankdata(-logits, method="ordinal"))
    assert top_k_classes(logits).tolist() == order[:5].tolist() == [6, 1, 3, 4, 2]


def test_flip_probability_per_video_mean():
    # video 0: 0 0 1 1 -> stride-1 flips 1/3; video 1: 2 3 2 3 -> 3/3
    top1 = np.array([[0, 0, 1, 1], [2, 3, 2, 3]])
    assert flip_probability(top1, "rotate", 1) == pytest.approx((1 / 3 + 1) / 2)
    # stride 2: video 0 pairs (0,2),(1,3) both flip -> 1; video 1: none -> 0
    assert flip_probability(top1, "rotate", 2) == pytest.approx(0.5)
    # noise: against frame 0; video 0: 0,1,1 -> 2/3; video 1: 3,2,3 -> 2/3
    assert flip_probability(top1, "shot_noise", 1) == pytest.approx(2 / 3)


def test_flip_probability_by_offset_extends_the_difficulties():
    top1 = np.array([[0, 0, 1, 1], [2, 3, 2, 3]])
    by_offset = flip_probability_by_offset(top1, "rotate")
    assert by_offset.tolist() == pytest.approx([flip_probability(top1, "rotate", d) for d in (1, 2, 3)])
    # noise: frame k against frame 0 -> offsets 1..3: (0 + 1)/2, (1 + 0)/2, (1 + 1)/2
    assert flip_probability_by_offset(top1, "gaussian_noise").tolist() == [0.5, 0.5, 1.0]


def test_mean_top5_distance_per_video_mean():
    a, b = [10, 11, 12, 13, 14], [13, 14, 99, 98, 97]
    video = np.array([[a, a, b]])                   # pairs (0,1): 0, (1,2): 18
    assert mean_top5_distance(video, "scale", 1) == pytest.approx(9)
    assert mean_top5_distance(video, "shot_noise", 1) == pytest.approx(9)
    assert mean_top5_distance(video, "scale", 2) == pytest.approx(18)


def test_parse_sequence_set():
    assert parse_sequence_set("gaussian_noise_3") == ("gaussian_noise", 3)
    assert parse_sequence_set("speckle_noise") == ("speckle_noise", 1)
    assert parse_sequence_set("translate") == ("translate", None)
    for bad in ("rotate_2", "gaussian_noise_4", "blur"):
        with pytest.raises(ValueError, match="unknown sequence set"):
            parse_sequence_set(bad)


def _constant_flips(n_videos=2, n_frames=31):
    """Frame t ranks classes t, t+1, ..., t+4: the top-1 changes every frame (FP = 1 at any stride)."""
    frames = np.arange(n_frames)[None, :, None] + np.arange(5)[None, None, :]
    return np.repeat(frames, n_videos, axis=0)


def test_summary_normalises_by_the_baseline_at_difficulty_1():
    predictions = {p: _constant_flips() for p in MFR_PERTURBATIONS}
    predictions["gaussian_noise_2"] = _constant_flips()
    baseline = {p: {"flip_probability": 0.5, "top5_distance": 2.0} for p in MFR_PERTURBATIONS}
    summary = summarize_imagenet_p(predictions, baseline)
    assert summary["perturbations"]["rotate"]["3"]["flip_probability"] == 1.0
    assert set(summary["perturbations"]["gaussian_noise"]) == {"1", "2"}
    assert summary["FR"]["rotate"] == pytest.approx(200)
    assert summary["mFR"] == pytest.approx(200)
    # stride 1: B's top 5 holds A's classes 2..5 at ranks 1..4, sigma (6,1,2,3,4) -> 5+1+1+1+1
    assert summary["perturbations"]["rotate"]["1"]["top5_distance"] == pytest.approx(9)
    # stride 2: sigma (6,6,1,2,3) -> 5+4+2+2+2
    assert summary["perturbations"]["rotate"]["2"]["top5_distance"] == pytest.approx(15)
    assert summary["T5D"]["rotate"] == pytest.approx(450)
    # noise compares with frame 0: frames 1..4 share 4..1 classes with it, frames 5..30 none
    noise = (9 + 15 + 18 + 18 + 26 * 15) / 30
    assert summary["T5D"]["shot_noise"] == pytest.approx(100 * noise / 2)
    assert summary["mT5D"] == pytest.approx((2 * 100 * noise / 2 + 8 * 450) / 10)


def test_summary_without_baseline_and_with_an_incomplete_one():
    predictions = {"rotate": _constant_flips()}
    summary = summarize_imagenet_p(predictions)
    assert summary["mFR"] is None and summary["FR"] == {}
    with pytest.raises(ValueError, match="missing: gaussian_noise"):
        summarize_imagenet_p(predictions, {"rotate": {"flip_probability": 0.5, "top5_distance": 1}})
    partial = summarize_imagenet_p(predictions, {"rotate": {"flip_probability": 0.5, "top5_distance": 1}},
                                   allow_incomplete=True)
    assert partial["FR"]["rotate"] == pytest.approx(200) and partial["mFR"] is None


def test_top1_predictions_give_flips_but_no_top5_distance():
    result = summarize_imagenet_p({"tilt": np.zeros((3, 31), dtype=np.int64)})
    assert result["perturbations"]["tilt"]["1"] == {"flip_probability": 0.0, "top5_distance": None}


def test_bad_prediction_arrays_are_rejected():
    with pytest.raises(ValueError, match="integer classes"):
        flip_probability(np.zeros((2, 31, 4), dtype=int), "tilt")
    with pytest.raises(ValueError, match="integer classes"):
        flip_probability(np.zeros((2, 31)), "tilt")
