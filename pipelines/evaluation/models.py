"""The model files ``evaluate`` and ``filter-a`` / ``filter-o`` take: which framework, and the
checks made before any prediction.

:func:`check_model` loads the model, compares its input shape with the release's images and its
output width with the benchmark's classes, and runs a trial batch of real inputs; each failure
is one :class:`ModelError` line, before anything is written.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

__all__ = ["FRAMEWORKS", "ModelError", "infer_framework", "IMAGENET_CLASSES", "A_CLASSES",
           "TRIAL_IMAGES", "NONFINITE_SHOWN", "describe_file", "RUNNERS", "load_runner", "local_model_file",
           "check_input_shape", "nonfinite_message", "check_logits", "check_model", "read_item", "trial_batch", "key_text", "FILTER_CROP",
           "check_filter_model"]

FRAMEWORKS = ("onnx", "pytorch", "tensorflow")


class ModelError(ValueError):
    """A model that cannot be evaluated on the release, in one line."""


def infer_framework(model_path: str) -> str:
    """The framework of a model file from its name: ``.onnx``, ``.pt``/``.pth`` or a SavedModel."""
    path = model_path.rstrip("/")
    if path.endswith(".onnx"):
        return "onnx"
    if path.endswith((".pt", ".pth")):
        return "pytorch"
    if path.endswith((".keras", ".h5")) or os.path.isdir(path):
        return "tensorflow"
    raise ValueError(f"cannot tell the framework of {model_path!r}: name it .onnx (ONNX), .pt or "
                     ".pth (TorchScript), .keras/.h5 or a SavedModel folder (TensorFlow), or pass "
                     f"--framework ({', '.join(FRAMEWORKS)})")


IMAGENET_CLASSES = 1000
"""Logits per image of an ImageNet-1k model (the 224 editions, VCR, filter-a / filter-o)."""
A_CLASSES = IMAGENET_CLASSES
"""ImageNet-A / -O evaluation and filtration take 1000-way logits (ImageNet-1k index order); the
200-way scores are the 200 classes' columns of them."""
TRIAL_IMAGES = 2
"""Real inputs in the trial batch run before any prediction."""
NONFINITE_SHOWN = 3
"""Keys named when a run is refused for NaN or infinite logits."""


_SIGNATURES = ((b"PK\x03\x04", "a zip archive (a PyTorch checkpoint or a Keras file?)"),
               (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"\x93NUMPY", "a NumPy array"),
               (b"\x89HDF", "an HDF5 file"), (b"\x80", "a Python pickle"))


def describe_file(path: str) -> str:
    """What a file that is not a loadable model is, in a few words (its size and kind)."""
    if os.path.isdir(path):
        return "a folder"
    with open(path, "rb") as stream:
        head = stream.read(64)
    size = os.path.getsize(path)
    if not head:
        return "an empty file"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return f"{kind}, {size} bytes"
    if all(32 <= b < 127 or b in b"\t\r\n" for b in head):
        return f"a text file of {size} bytes starting {head[:24].decode()!r}"
    return f"{size} bytes of another format"


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:200]


def _onnx_runner(path: str, threads: int = 1):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return session.get_inputs()[0].shape, lambda batch: session.run(None, {name: batch})[0]


def _torch_runner(path: str, threads: int = 1):
    import torch

    model = torch.jit.load(path, map_location="cpu").eval()

    def run(batch):
        with torch.no_grad():
            return model(torch.from_numpy(batch)).numpy()
    return None, run


def _tensorflow_runner(path: str, threads: int = 1):
    import tensorflow as tf

    model = tf.keras.models.load_model(path)
    return None, lambda batch: np.asarray(model(np.ascontiguousarray(batch.transpose(0, 2, 3, 1))))


RUNNERS = {"onnx": _onnx_runner, "pytorch": _torch_runner, "tensorflow": _tensorflow_runner}
"""framework -> ``path -> (declared input shape or None, batch -> logits)``."""


def load_runner(model_path: str, framework: str | None = None):
    """``(declared input shape or None, run)`` of a model file, ``run`` mapping (N, 3, S, S) float32
    to logits.

    Raises
    ------
    ModelError
        When the file does not load, with what the file is.
    """
    framework = framework or infer_framework(model_path)
    local = local_model_file(model_path)
    try:
        return RUNNERS[framework](local)
    except ImportError:
        raise
    except Exception as err:  # each runtime raises its own types (InvalidProtobuf, RuntimeError, OSError, ...)
        raise ModelError(f"model {model_path} does not load as {framework}: it is {describe_file(local)} "
                         f"({_first_line(err)})") from None


def local_model_file(model_path: str) -> str:
    """``model_path`` itself for a local file; for a model file on an object store (``s3://...``,
    which the workers open through Beam's file systems) a copy in this machine's temporary folder,
    made once per object and size, for the driver's own checks.

    Raises
    ------
    ModelError
        When there is no such file or object.
    """
    if "://" not in model_path:
        if not os.path.exists(model_path):
            raise ModelError(f"model {model_path}: no such file")
        return model_path
    import hashlib
    import tempfile

    from pipelines.formats import storage

    try:
        size = storage.size(model_path)
    except (OSError, ValueError):
        raise ModelError(f"model {model_path}: no such object") from None
    name = hashlib.sha256(f"{model_path} {size}".encode()).hexdigest()[:16]
    local = os.path.join(tempfile.gettempdir(), "imagenet-cp-models", name, storage.basename(model_path))
    if not os.path.exists(local):
        os.makedirs(os.path.dirname(local), exist_ok=True)
        partial = f"{local}.{os.getpid()}.part"
        with open(partial, "wb") as stream:
            stream.write(storage.read_bytes(model_path))
        os.replace(partial, local)
    return local


def check_input_shape(model_path: str, shape, side: int, what: str) -> None:
    """Refuse a model whose declared input (N, 3, H, W) does not take ``side`` x ``side`` images."""
    if shape is None:
        return
    dims = list(shape)
    fixed = [d if isinstance(d, int) else None for d in dims]
    if len(dims) != 4 or fixed[1] not in (None, 3):
        raise ModelError(f"model {model_path} takes input {dims}; {what} feeds (N, 3, {side}, {side}) float32")
    if (fixed[2] not in (None, side)) or (fixed[3] not in (None, side)):
        raise ModelError(f"model {model_path} takes {fixed[2]}x{fixed[3]} images; {what} gives {side}x{side}")


def nonfinite_message(model_path: str, count: int, total, keys: Sequence[str]) -> str:
    """The one line that refuses a run for NaN or infinite logits."""
    shown = ", ".join(sorted(keys)[:NONFINITE_SHOWN])
    of = f" of {total}" if total is not None else ""
    return (f"model {model_path} gave NaN or infinite logits for {count}{of} images (first: {shown}); "
            "nothing was written")


def check_logits(model_path: str, logits, keys: Sequence[str], widths: Sequence[int], what: str) -> None:
    """Refuse logits that are not (N, K) with K one of ``widths``, or hold NaN / infinity."""
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.shape[0] != len(keys):
        raise ModelError(f"model {model_path} gives output of shape {list(logits.shape)} for {len(keys)} images; "
                         f"{what} needs (N, {' or '.join(map(str, widths))}) logits")
    if logits.shape[1] not in widths:
        raise ModelError(f"model {model_path} gives {logits.shape[1]} logits per image; {what} scores "
                         f"{' or '.join(map(str, widths))} classes")
    bad = [key for key, row in zip(keys, logits) if not np.isfinite(row).all()]
    if bad:
        raise ModelError(nonfinite_message(model_path, len(bad), f"{len(keys)} trial", bad))


def check_model(model_path: str, framework: str | None, side: int, widths: Sequence[int], what: str,
                trial: Sequence[tuple]) -> None:
    """Check a model before any prediction: it loads, takes ``side`` x ``side`` input, and a trial
    batch of real inputs gives finite logits of one of ``widths``.

    Parameters
    ----------
    trial : sequence of (key, float32 (3, side, side) array)
        The first inputs of the run (:data:`TRIAL_IMAGES` are enough).
    what : str
        The benchmark and release in words, for the messages (e.g. ``'the Tiny-ImageNet-C release'``).

    Raises
    ------
    ModelError
        One line saying what is wrong.
    """
    shape, run = load_runner(model_path, framework)
    check_input_shape(model_path, shape, side, what)
    if not trial:
        return
    keys = [str(key) for key, _ in trial]
    try:
        logits = run(np.stack([x for _, x in trial]).astype(np.float32))
    except Exception as err:  # the runtime's own error types
        raise ModelError(f"model {model_path} fails on a trial batch of {len(keys)} {side}x{side} images from "
                         f"{what}: {_first_line(err)}") from None
    check_logits(model_path, logits, keys, widths, what)


def read_item(item):
    """A listed image (:func:`pipelines.evaluation.release_inputs.read_located`): a path or a
    locator is read (any file system); bytes and arrays pass as they are."""
    from pipelines.evaluation.release_inputs import read_located

    return read_located(item)


def trial_batch(items, to_input, count: int = TRIAL_IMAGES) -> list:
    """``[(key, model input)]`` of the first ``count`` listed ``(key, item)`` pairs."""
    batch = []
    for key, item in items:
        if len(batch) == count:
            break
        batch.append((key, to_input(read_item(item))))
    return batch


def key_text(key) -> str:
    """A prediction's key in a message: ``config/wnid/file`` (C) or ``set/wnid/stem#frame`` (P)."""
    if isinstance(key, tuple) and key and isinstance(key[0], tuple):
        return f"{key[0][0]}/{key[0][1]}#{key[1]}"
    if isinstance(key, tuple):
        return "/".join(str(part) for part in key[:2])
    return str(key)


FILTER_CROP = 224
"""The crop filter-a / filter-o feed a model that carries no ``imagenet_cp.crop`` metadata."""


def check_filter_model(model_path: str, task_command: str, trial: tuple | None = None) -> None:
    """Check an ONNX filter model before a filter run: it loads, takes its crop (its
    ``imagenet_cp.crop`` metadata, else :data:`FILTER_CROP`), and gives 1000 finite logits on the
    ten crops of the first candidate ``trial = (key, image bytes)``.

    Raises
    ------
    ModelError
        One line saying what is wrong.
    """
    from pipelines.install.fetch_model import METADATA_PREFIX, model_metadata
    from transforms.ten_crop import normalise, ten_crops, upright_rgb

    shape, run = load_runner(model_path, "onnx")
    meta = model_metadata(model_path)
    import onnxruntime

    custom = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"]).get_modelmeta()
    crop = meta["crop"] if f"{METADATA_PREFIX}crop" in custom.custom_metadata_map else FILTER_CROP
    check_input_shape(model_path, shape, crop, f"{task_command} (ten {crop}x{crop} crops per candidate)")
    if trial is None:
        return
    key, data = trial
    try:
        crops = normalise(ten_crops(upright_rgb(data), crop, meta["resize"]), meta["mean"], meta["std"])
    except ValueError:
        return  # an unusable first candidate is R0's to report, not the model's
    try:
        logits = run(crops)
    except Exception as err:  # the runtime's own error types
        raise ModelError(f"model {model_path} fails on the ten crops of {key}: {_first_line(err)}") from None
    check_logits(model_path, logits, [f"{key} crop {i}" for i in range(len(crops))], (A_CLASSES,), task_command)
