"""The ImageNet-P fidelity contract: every frame of every reference sequence, bit for bit.

``perturb_sequence(input, name, RandomState(seed), difficulty)`` must reproduce the SHA-256 of
each frame's raw bytes listed in ``reference_p_dev.json`` (17 sequences; gaussian_noise has no
reference because the reference drew it from torch's generator).
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


def test_reference_covers_every_sequence_but_gaussian_noise(reference_p):
    _, meta = reference_p
    assert sorted((e["perturbation"], e["difficulty"]) for e in meta["entries"]) == sorted(SEQUENCES)


def test_preprocess_uncropped_matches_reference_input(reference_p):
    from skimage import data
    npz, _ = reference_p
    np.testing.assert_array_equal(transforms.preprocess_uncropped(data.chelsea()), npz["chelsea/input"])


@pytest.mark.parametrize("name,difficulty", SEQUENCES, ids=[f"{n}-{d}" for n, d in SEQUENCES])
def test_every_frame_matches_reference(reference_p, name, difficulty):
    npz, meta = reference_p
    entry = next(e for e in meta["entries"] if (e["perturbation"], e["difficulty"]) == (name, difficulty))
    frames = transforms.perturb_sequence(npz["chelsea/input"], name, np.random.RandomState(entry["seed"]),
                                         difficulty)
    assert frames.shape == (entry["frames"], 224, 224, 3) and frames.dtype == np.uint8
    # The stored subset first, for a readable diff when a frame drifts.
    for stored, index in zip(npz[entry["key"]], entry["stored_frames"]):
        diff = np.abs(frames[index].astype(np.int16) - stored.astype(np.int16))
        assert diff.max() == 0, (f"frame {index}: max abs diff {diff.max()}, "
                                 f"{(diff > 0).mean():.2%} of values differ")
    mismatched = [i for i, (frame, digest) in enumerate(zip(frames, entry["frame_sha256"]))
                  if _sha256(frame) != digest]
    assert mismatched == []
