"""The fidelity contract: corrupt(x, name, s, RandomState(seed)) equals the reference output.

Checked against the committed golden hashes (``tests/golden/reference_c_dev.json``: the SHA-256 of
every reference output and of its q85 JPEG, the seeds and the input recipe), so a fresh clone runs
every check; the reference arrays (``reference_c_dev.npz``), when present, adds the size of a
difference to a failure. Every (corruption, severity) pair must be bit-exact unless it is listed
in ``KNOWN_DIFFERENCES`` with its measured bound (and in docs/reference/fidelity.md).
"""
import hashlib

import numpy as np
import pytest

import transforms
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES

#: (name, severity) -> (max abs difference, max share of differing values); must match docs/reference/fidelity.md.
KNOWN_DIFFERENCES = {}

PAIRS = [(name, s) for name in CORRUPTIONS for s in SEVERITIES]


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def chelsea_input(golden_c):
    """The reference input, made from its recipe (scikit-image's chelsea photo, preprocessed)."""
    from skimage import data
    return transforms.preprocess(data.chelsea())


def test_reference_covers_every_pair(golden_c):
    golden, _ = golden_c
    assert sorted((e["corruption"], e["severity"]) for e in golden["entries"]) == sorted(PAIRS)


def test_preprocess_matches_reference_input(golden_c, chelsea_input):
    golden, npz = golden_c
    expected = golden["inputs"]["chelsea/input"]
    assert list(chelsea_input.shape) == expected["shape"] and chelsea_input.dtype == np.uint8
    if npz is not None:
        np.testing.assert_array_equal(chelsea_input, npz["chelsea/input"])
    assert _sha256(chelsea_input) == expected["sha256"]


def _difference(got: np.ndarray, npz, key: str) -> str:
    if npz is None:
        return "(reference arrays absent: no array to show the difference)"
    diff = np.abs(got.astype(np.int16) - npz[key].astype(np.int16))
    return f"max |diff| {diff.max()}, {(diff > 0).mean():.4%} of values differ"


@pytest.mark.parametrize("name,severity", PAIRS, ids=[f"{n}-{s}" for n, s in PAIRS])
def test_corrupt_matches_reference(golden_c, chelsea_input, name, severity):
    golden, npz = golden_c
    entry = golden["by_key"][f"chelsea/{name}/{severity}"]
    got = transforms.corrupt(chelsea_input, name, severity, np.random.RandomState(entry["seed"]))
    assert got.dtype == np.uint8 and got.shape == chelsea_input.shape
    if (name, severity) in KNOWN_DIFFERENCES:
        if npz is None:
            pytest.fail("a known difference needs the reference arrays to be bounded")
        max_abs, max_share = KNOWN_DIFFERENCES[name, severity]
        diff = np.abs(got.astype(np.int16) - npz[entry["key"]].astype(np.int16))
        assert diff.max() <= max_abs and (diff > 0).mean() <= max_share
        return
    assert _sha256(got) == entry["raw_sha256"], _difference(got, npz, entry["key"])
    assert hashlib.sha256(transforms.encode_jpeg(got)).hexdigest() == entry["saved_sha256"]
