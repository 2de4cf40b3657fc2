"""The editions' fidelity contract: corrupt(x, name, s, RandomState(seed), edition=E) is bit-exact
with the reference, and so are the saved JPEG bytes where the edition saves JPEG.

The hashes come from ``tests/golden/reference_editions_c.json`` (in every clone); where
the maintainers' reference set is present, the golden file is also checked against it and a mismatch
reports how far the arrays differ.
"""
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from skimage import data

import transforms
from schemas.edition import JPEG
from schemas.editions import EDITIONS
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES

REPO = Path(__file__).resolve().parents[2]
REFERENCE = Path(os.environ.get("IMAGENET_CP_SHARED", REPO.parent / "shared")) / "reference"  # as tests/conftest.py
GOLDEN = json.loads((REPO / "tests" / "golden" / "reference_editions_c.json").read_text())
ENTRIES = GOLDEN["entries"]
EDITION_NAMES = ("inception", "tinyimagenet", "imagenet64", "cifar")


def _sha256(data_bytes: bytes) -> str:
    return hashlib.sha256(data_bytes).hexdigest()


@lru_cache(maxsize=None)
def _input(edition: str) -> np.ndarray:
    return transforms.preprocess(data.chelsea(), edition=edition)


def test_golden_covers_every_edition_corruption_and_severity():
    assert sorted((e["edition"], e["corruption"], e["severity"]) for e in ENTRIES) == sorted(
        (ed, c, s) for ed in EDITION_NAMES for c in CORRUPTIONS for s in SEVERITIES)
    assert {e["edition"]: e["saved_as"] for e in ENTRIES} == {n: EDITIONS[n].c.encoding for n in EDITION_NAMES}


def test_golden_agrees_with_the_shared_reference():
    path = REFERENCE / "reference_editions_c_dev.json"
    if not path.exists():
        pytest.skip(f"{path} not found")
    shared = json.loads(path.read_text())
    assert {e["key"]: (e["seed"], e["raw_sha256"], e["saved_sha256"]) for e in shared["entries"]} == {
        e["key"]: (e["seed"], e["raw_sha256"], e["saved_sha256"]) for e in ENTRIES}
    assert {k.split("/")[0]: v["sha256"] for k, v in shared["inputs"].items()} == {
        k: v["sha256"] for k, v in GOLDEN["inputs"].items()}


@pytest.mark.parametrize("edition", EDITION_NAMES)
def test_preprocess_matches_the_reference_input(edition):
    x = _input(edition)
    assert list(x.shape) == GOLDEN["inputs"][edition]["shape"]
    assert _sha256(x.tobytes()) == GOLDEN["inputs"][edition]["sha256"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["key"].replace("/chelsea/", "-").replace("/", "-") for e in ENTRIES])
def test_corrupt_matches_reference(entry):
    edition = entry["edition"]
    got = transforms.corrupt(_input(edition), entry["corruption"], entry["severity"],
                             np.random.RandomState(entry["seed"]), edition=edition)
    side = EDITIONS[edition].image_size
    assert got.dtype == np.uint8 and got.shape == (side, side, 3)
    if _sha256(got.tobytes()) != entry["raw_sha256"]:
        npz_path = REFERENCE / "reference_editions_c_dev.npz"
        detail = ""
        if npz_path.exists():
            diff = np.abs(got.astype(np.int16) - np.load(npz_path)[entry["key"]].astype(np.int16))
            detail = f": max |diff| {diff.max()}, {(diff > 0).mean():.4%} of values differ"
        pytest.fail(f"{entry['key']} differs from the reference{detail}")
    if entry["saved_as"] == JPEG:
        assert _sha256(transforms.encode_jpeg(got)) == entry["saved_sha256"]
