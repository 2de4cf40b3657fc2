"""Derive the golden hash files of this folder from the maintainers' reference set (run from the repo root):

    python tests/golden/derive.py [SHARED_DIR]

``reference_<set>.json`` here holds, for each reference entry, its seed and the SHA-256 of the
reference's raw output bytes (``np.ascontiguousarray(out).tobytes()``), of the JPEG the reference
driver saves (ImageNet-C) or of every frame (ImageNet-P), plus each input's recipe and SHA-256; no
image arrays. The fidelity tests recompute every output from the recipe and compare hashes, so a
clone without the reference arrays checks the whole contract; with them present they also show
the reference arrays' differences when a hash differs. An editions set
(``reference_editions_<c|p>_dev.json``) uses the same format: ``inputs`` (name -> recipe, shape,
sha256) and ``entries`` (each naming its ``input``).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FORMAT = "imagenet-cp-golden/1"

C_RECIPE = ("skimage.data.chelsea() (uint8 300x451x3) -> RGB -> Resize(256) (PIL bilinear, short side 256, "
            "long side int(256*long/short)) -> CenterCrop(224) (offsets int(round((dim-224)/2))): "
            "transforms.preprocess")
P_RECIPE = ("skimage.data.chelsea() (uint8 300x451x3) -> Resize(256) -> RGB, no crop: "
            "transforms.preprocess_uncropped")


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _input(npz, recipe: str) -> dict:
    array = npz["chelsea/input"]
    return {"photo": "chelsea", "photo_shape": [300, 451, 3], "recipe": recipe, "shape": list(array.shape),
            "dtype": str(array.dtype), "sha256": _sha256(array)}


def derive_c(reference: Path) -> dict:
    """The golden document of ``reference_c_dev`` (ImageNet-C, 19 corruptions x 5 severities)."""
    npz = np.load(reference / "reference_c_dev.npz")
    entries = json.loads((reference / "reference_c_dev.json").read_text())["entries"]
    return {"format": FORMAT, "derived_from": "reference_c_dev.json + reference_c_dev.npz",
            "call": "np.random.seed(seed); out = np.uint8(reference_fn(PIL input, severity))",
            "inputs": {"chelsea/input": _input(npz, C_RECIPE)},
            "entries": [{"key": e["key"], "input": "chelsea/input", "corruption": e["corruption"],
                         "severity": e["severity"], "seed": e["seed"], "raw_sha256": _sha256(npz[e["key"]]),
                         "saved_as": "jpeg", "saved_sha256": e["jpeg_q85_optimize_sha256"]} for e in entries]}


def derive_p(reference: Path) -> dict:
    """The golden document of ``reference_p_dev`` (ImageNet-P, 17 sequences, every frame hashed)."""
    npz = np.load(reference / "reference_p_dev.npz")
    entries = json.loads((reference / "reference_p_dev.json").read_text())["entries"]
    for e in entries:  # the stored frames must be the hashed ones
        stored = [_sha256(frame) for frame in npz[e["key"]]]
        assert stored == [e["frame_sha256"][i] for i in e["stored_frames"]], e["key"]
    return {"format": FORMAT, "derived_from": "reference_p_dev.json + reference_p_dev.npz",
            "call": "np.random.seed(seed); frames = reference loop of the perturbation",
            "inputs": {"chelsea/input": _input(npz, P_RECIPE)},
            "entries": [{"key": e["key"], "input": "chelsea/input", "perturbation": e["perturbation"],
                         "difficulty": e["difficulty"], "seed": e["seed"], "frames": e["frames"],
                         "stored_frames": e["stored_frames"], "frame_sha256": e["frame_sha256"]} for e in entries]}


DERIVED = {"reference_c_dev.json": derive_c, "reference_p_dev.json": derive_p}
"""Golden file name -> how it is derived from the shared reference folder."""


def text(document: dict) -> str:
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def main(shared: Path) -> None:
    for name, derive in DERIVED.items():
        (HERE / name).write_text(text(derive(shared / "reference")))
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[2] / "shared")
