"""The ImageNet-P editions (inception 299, tinyimagenet 64, imagenet64 64, cifar 32), frame for frame.

``perturb_sequence(input, name, RandomState(seed), difficulty, edition=E)`` must give every frame
hash of ``tests/golden/reference_editions_p.json`` (68 sequences: 17 per edition; gaussian_noise
has no reference, its draws came from torch). The golden file carries the hashes, seeds and the
recipe of each input, so a fresh clone checks them without the reference arrays; where they are present,
the golden file is checked to be its copy.
"""
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data

import transforms
from schemas.imagenet_p import PERTURBATIONS
from schemas.editions import EDITIONS
from transforms.preprocess import center_crop, resize_short_side

REPO = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((REPO / "tests" / "golden" / "reference_editions_p.json").read_text())
REFERENCE = Path(os.environ.get("IMAGENET_CP_SHARED", REPO.parent / "shared")) / "reference"
ENTRIES = GOLDEN["entries"]


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def edition_input(edition: str) -> np.ndarray:
    """The golden recipe's input: chelsea at full size, or its torchvision Resize(32) + CenterCrop(32)."""
    full = data.chelsea()
    if edition == "cifar":
        return np.asarray(center_crop(resize_short_side(Image.fromarray(full), 32), 32))
    return full


P_TABLES = {name: e.p for name, e in EDITIONS.items() if e.p is not None}  # each edition module's P facts
OTHER = [name for name in P_TABLES if name != "imagenet"]


@pytest.fixture(scope="module")
def inputs() -> dict:
    return {edition: edition_input(edition) for edition in OTHER}


def test_every_edition_carries_its_p_facts_from_its_own_module():
    import importlib

    for name in ("imagenet", "inception", "tinyimagenet", "imagenet64", "cifar"):
        module = importlib.import_module(f"schemas.editions.{name}")
        assert EDITIONS[name].p is module.P and module.P.name == name and module.P.tfds
    assert P_TABLES["imagenet"].perturbations == PERTURBATIONS


def test_golden_covers_17_sequences_of_every_edition_and_its_inputs(inputs):
    expected = sorted((e, name, d) for e in OTHER for name, p in P_TABLES[e].perturbations.items()
                      if name != "gaussian_noise" for d in p.difficulties)
    assert sorted((x["edition"], x["perturbation"], x["difficulty"]) for x in ENTRIES) == expected
    assert len(ENTRIES) == 68
    for edition, image in inputs.items():
        assert sha256(image) == GOLDEN["inputs"][edition]["sha256"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[x["key"] for x in ENTRIES])
def test_every_frame_matches_the_reference(inputs, entry):
    frames = transforms.perturb_sequence(inputs[entry["edition"]], entry["perturbation"],
                                         np.random.RandomState(entry["seed"]), entry["difficulty"],
                                         edition=entry["edition"])
    assert frames.shape == (entry["frames"], *entry["frame_shape"]) and frames.dtype == np.uint8
    assert frames.flags["C_CONTIGUOUS"]
    mismatched = [i for i, (frame, digest) in enumerate(zip(frames, entry["frame_sha256"])) if sha256(frame) != digest]
    assert mismatched == []


def test_golden_file_is_a_copy_of_the_shared_reference():
    path = REFERENCE / "reference_editions_p_dev.json"
    if not path.exists():
        pytest.skip(f"{path} not found (the golden file alone is checked)")
    reference = json.loads(path.read_text())
    fields = ("key", "edition", "perturbation", "difficulty", "seed", "frames", "frame_shape", "frame_sha256")
    assert [{k: e[k] for k in fields} for e in reference["entries"]] == [{k: e[k] for k in fields} for e in ENTRIES]
    npz = np.load(REFERENCE / "reference_editions_p_dev.npz")
    for edition in OTHER:
        assert sha256(npz[f"{edition}/chelsea/input"]) == GOLDEN["inputs"][edition]["sha256"]


@pytest.mark.parametrize("edition, size, sigmas", [("inception", 299, (0.035, 0.055, 0.085)),
                                                   ("tinyimagenet", 64, (0.025, 0.05, 0.075)),
                                                   ("imagenet64", 64, (0.025, 0.05, 0.075)),
                                                   ("cifar", 32, (0.02, 0.04, 0.06))])
def test_gaussian_noise_draws_from_the_examples_random_state(inputs, edition, size, sigmas):
    """No reference (torch's generator): frame 0 is the clean view, frames 1.. draw (3, S, S) normals."""
    image = inputs[edition]
    clean = transforms.perturb_sequence(image, "shot_noise", np.random.RandomState(0), edition=edition)[0]
    for difficulty, sigma in enumerate(sigmas, start=1):
        assert P_TABLES[edition].perturbations["gaussian_noise"].params(difficulty)["sigma"] == sigma
        frames = transforms.perturb_sequence(image, "gaussian_noise", np.random.RandomState(9), difficulty, edition)
        assert frames.shape == (31, size, size, 3)
        np.testing.assert_array_equal(frames[0], clean)
        rng = np.random.RandomState(9)
        noise = rng.standard_normal((3, size, size)).astype(np.float32)
        tensor = clean.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
        first = (np.clip(tensor + np.float32(sigma) * noise, 0, 1) * np.float32(255)).astype(np.uint8)
        np.testing.assert_array_equal(frames[1], first.transpose(1, 2, 0))
        again = transforms.perturb_sequence(image, "gaussian_noise", np.random.RandomState(9), difficulty, edition)
        np.testing.assert_array_equal(frames, again)


def test_frame_counts_differ_where_the_reference_does():
    frames = {e: {name: p.frames for name, p in t.perturbations.items()} for e, t in P_TABLES.items()}
    assert frames["inception"]["translate"] == 41 and frames["imagenet64"]["translate"] == 31
    assert (frames["cifar"]["translate"], frames["cifar"]["motion_blur"]) == (16, 21)
    assert all(n == 31 for e in frames.values() for name, n in e.items() if name not in ("translate", "motion_blur"))
    assert tuple(P_TABLES["cifar"].perturbations) == tuple(PERTURBATIONS)


def test_bad_editions_and_inputs_are_refused(inputs):
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="valid editions: imagenet, inception"):
        transforms.perturb_sequence(inputs["inception"], "rotate", rng, edition="cifar10")
    with pytest.raises(ValueError, match=r"cifar must be a uint8 \(32, 32, 3\)"):
        transforms.perturb_sequence(inputs["inception"], "rotate", rng, edition="cifar")
    with pytest.raises(ValueError, match="full resolution"):
        transforms.perturb_sequence(inputs["inception"][..., 0], "rotate", rng, edition="inception")
    with pytest.raises(ValueError, match="difficulty of rotate"):
        transforms.perturb_sequence(inputs["cifar"], "rotate", rng, 2, edition="cifar")
