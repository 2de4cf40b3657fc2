"""Shared fixtures. Fidelity tests read the committed golden hashes (tests/golden/); the arrays in
the maintainers' reference set (``$IMAGENET_CP_SHARED/reference``, not part of the repository),
when present, only add a diagnostic to a failure. Other tests that need those arrays skip with a
reason without them."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("IMAGENET_CP_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference"
GOLDEN = REPO / "tests" / "golden"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found: the reference arrays are a maintainers' data set, not part of the "
                    "repository (IMAGENET_CP_SHARED names the folder that holds reference/)")
    return path


@pytest.fixture(scope="session")
def reference_c():
    """(npz, entries) of the ImageNet-C reference outputs."""
    npz = np.load(_need(REFERENCE / "reference_c_dev.npz"))
    entries = json.loads(_need(REFERENCE / "reference_c_dev.json").read_text())["entries"]
    return npz, entries


@pytest.fixture(scope="session")
def reference_p():
    """(npz, json) of the ImageNet-P reference frames."""
    npz = np.load(_need(REFERENCE / "reference_p_dev.npz"))
    meta = json.loads(_need(REFERENCE / "reference_p_dev.json").read_text())
    return npz, meta


def load_golden(name: str) -> dict:
    """A committed golden document (``tests/golden/<name>.json``), entries keyed by ``key``."""
    document = json.loads((GOLDEN / f"{name}.json").read_text())
    return {**document, "by_key": {e["key"]: e for e in document["entries"]}}


def optional_arrays(name: str):
    """The reference arrays ``<name>.npz`` of the maintainers' reference set when present, else None (no skip)."""
    path = REFERENCE / f"{name}.npz"
    return np.load(path) if path.exists() else None


@pytest.fixture(scope="session")
def golden_c():
    """(golden document of reference_c_dev, its npz or None)."""
    return load_golden("reference_c_dev"), optional_arrays("reference_c_dev")


@pytest.fixture(scope="session")
def golden_p():
    """(golden document of reference_p_dev, its npz or None)."""
    return load_golden("reference_p_dev"), optional_arrays("reference_p_dev")


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The maintainers' reference set (``$IMAGENET_CP_SHARED/reference``); it may not exist."""
    return REFERENCE


@pytest.fixture(scope="session")
def lite0_onnx(tmp_path_factory) -> Path:
    """EfficientNet-Lite0 as ONNX, exported once per test session by ``imagenet-cp fetch-model``."""
    from scripts.cli import main

    path = tmp_path_factory.mktemp("models") / "efficientnet-lite0.onnx"
    assert main(["fetch-model", "efficientnet-lite0", "--output", str(path)]) == 0
    return path
