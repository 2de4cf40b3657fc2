"""The ImageNet-P fidelity contract: every frame of every reference sequence, bit for bit.

``perturb_sequence(input, name, RandomState(seed), difficulty)`` must reproduce the SHA-256 of
each frame's raw bytes listed in the committed ``tests/golden/reference_p_dev.json`` (17
sequences; gaussian_noise has no reference because the reference drew it from torch's
generator). The reference arrays (``reference_p_dev.npz``), when present, adds the size of a
difference on its stored frames to a failure.
"""
import hashlib

import numpy as np
import pytest

import transforms
from schemas.imagenet_p import PERTURBATIONS

SEQUENCES = [(name, d) for name, spec in PERTURBATIONS.items() if name != "gaussian_noise"
             for d in spec.difficulties]


def _sha256(frame: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def chelsea_input():
    """The reference input, made from its recipe (scikit-image's chelsea photo, uncropped)."""
    from skimage import data
    return transforms.preprocess_uncropped(data.chelsea())


def test_reference_covers_every_sequence_but_gaussian_noise(golden_p):
    golden, _ = golden_p
    assert sorted((e["perturbation"], e["difficulty"]) for e in golden["entries"]) == sorted(SEQUENCES)


def test_preprocess_uncropped_matches_reference_input(golden_p, chelsea_input):
    golden, npz = golden_p
    expected = golden["inputs"]["chelsea/input"]
    assert list(chelsea_input.shape) == expected["shape"] and chelsea_input.dtype == np.uint8
    if npz is not None:
        np.testing.assert_array_equal(chelsea_input, npz["chelsea/input"])
    assert _sha256(chelsea_input) == expected["sha256"]


@pytest.mark.parametrize("name,difficulty", SEQUENCES, ids=[f"{n}-{d}" for n, d in SEQUENCES])
def test_every_frame_matches_reference(golden_p, chelsea_input, name, difficulty):
    golden, npz = golden_p
    entry = next(e for e in golden["entries"] if (e["perturbation"], e["difficulty"]) == (name, difficulty))
    frames = transforms.perturb_sequence(chelsea_input, name, np.random.RandomState(entry["seed"]), difficulty)
    assert frames.shape == (entry["frames"], 224, 224, 3) and frames.dtype == np.uint8
    mismatched = [i for i, (frame, digest) in enumerate(zip(frames, entry["frame_sha256"]))
                  if _sha256(frame) != digest]
    if mismatched and npz is not None:  # the stored subset shows how far a frame drifted
        for stored, index in zip(npz[entry["key"]], entry["stored_frames"]):
            diff = np.abs(frames[index].astype(np.int16) - stored.astype(np.int16))
            assert diff.max() == 0, (f"frame {index}: max abs diff {diff.max()}, "
                                     f"{(diff > 0).mean():.2%} of values differ; mismatched frames {mismatched}")
    assert mismatched == []
