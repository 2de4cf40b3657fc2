"""Shared fixtures. Fidelity tests read ../shared/reference and skip with a reason without it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("IMAGENET_CP_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found: the reference outputs live in ../shared/reference "
                    "(set IMAGENET_CP_SHARED to another shared/ folder)")
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


@pytest.fixture(scope="session")
def lite0_onnx(tmp_path_factory) -> Path:
    """EfficientNet-Lite0 as ONNX, exported once per test session by ``imagenet-cp fetch-model``."""
    from scripts.cli import main

    path = tmp_path_factory.mktemp("models") / "efficientnet-lite0.onnx"
    assert main(["fetch-model", "efficientnet-lite0", "--output", str(path)]) == 0
    return path
