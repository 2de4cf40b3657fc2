"""Where ``evaluate`` finds the ImageNet-P sequences of a release, for every P edition.

A release's ``release.json`` names its tree (``imagenet-p``, ``ImageNet-P-299``, ``Tiny-ImageNet-P``,
``ImageNet-64x64-P``: folders ``<set>/<wnid>/<stem>.mp4``; ``CIFAR-10-P`` / ``CIFAR-100-P``: one
``<set>.npy`` of shape (N, T, 32, 32, 3), rows in the order of ``manifest/<set>.jsonl``) and its
edition; a folder without one is read as the 224 ``imagenet-p/`` tree. Each sequence is listed as
``((set, key, label), locator)``; :func:`sequence_frames` reads it on a worker, as the official
evaluators do (``cv2.VideoCapture``, BGR -> RGB for the videos; the array rows for ``.npy``), and
:func:`edition_model_input` feeds each frame to the model as the edition's evaluator does.
"""
from __future__ import annotations

import json
import os
from typing import Callable, NamedTuple

import numpy as np
from PIL import Image

from schemas.editions import EDITIONS, get_edition
from schemas.imagenet_p_editions import NPY
from schemas.release import P_TREE, RELEASE_JSON, manifest_path

from pipelines.formats import storage


class PSet(NamedTuple):
    """One sequence set of a release: its name (``rotate``, ``shot_noise_2``), where it lies, its edition."""

    name: str
    path: str
    edition: str


def p_tree(release_dir: str) -> tuple[str, str]:
    """``(tree folder, edition)`` of a release's ImageNet-P data: the tree ``release.json`` names, else
    the first P tree folder present (``imagenet-p``, ``ImageNet-P-299``, ..., ``CIFAR-10-P``), else
    ``('imagenet-p', 'imagenet')``."""
    trees = {tree: name for name, e in EDITIONS.items() if e.p for tree in e.p.trees}
    try:
        document = json.loads(storage.read_bytes(storage.join(release_dir, RELEASE_JSON)))
        if document.get("tree") in trees:
            return document["tree"], document.get("config", {}).get("edition", trees[document["tree"]])
    except (OSError, ValueError):
        pass
    for tree, name in trees.items():  # an official download without release.json: the folder it holds
        if storage.is_folder(storage.join(release_dir, tree)):
            return tree, name
    return P_TREE, "imagenet"


def p_sets(release_dir: str) -> list[PSet]:
    """Every sequence set of the release, sorted by name (empty when it has no ImageNet-P)."""
    tree, edition = p_tree(release_dir)
    root = storage.join(release_dir, tree)
    if not storage.is_folder(root):
        return []
    if get_edition(edition).p.output == NPY:
        names = [storage.basename(path) for path in storage.list_files(release_dir, tree)]
        return [PSet(name[:-len(".npy")], storage.join(root, name), edition) for name in names if name.endswith(".npy")]
    return [PSet(name, storage.join(root, name), edition) for name in storage.list_folders(root)]


def npy_sequences(release_dir: str, p_set: PSet):
    """``(key, label, (path, row))`` of each sequence of an ``.npy`` set, from its manifest (rows are
    in image-key order, the input's order).

    Raises
    ------
    ValueError
        When the manifest and the array disagree in length.
    """
    with open(os.path.join(release_dir, manifest_path(p_set.name)), encoding="utf-8") as stream:
        rows = sorted((json.loads(line) for line in stream if line.strip()), key=lambda row: row["image_key"])
    count = np.load(p_set.path, mmap_mode="r").shape[0]
    if count != len(rows):
        raise ValueError(f"{p_set.path}: {count} sequences but {len(rows)} manifest rows")
    return [(row["image_key"], row["label"], (p_set.path, index)) for index, row in enumerate(rows)]


def sequence_frames(locator) -> np.ndarray:
    """uint8 (T, H, W, 3) RGB frames of one sequence: an MP4 path, or ``(npy path, row)``."""
    if isinstance(locator, tuple):
        path, index = locator
        return np.asarray(np.load(path, mmap_mode="r")[index])
    from pipelines.beam.evaluate import read_video
    return read_video(locator)


def edition_model_input(edition: str) -> Callable:
    """``frame -> float32 (3, S, S)``: the model input of an edition's frames.

    224 is :func:`pipelines.beam.inference.model_input` (CenterCrop(224), ImageNet normalisation).
    Other editions: the frame centre-cropped to the edition's side (only the 64 editions'
    motion_blur frames are not square), then :func:`pipelines.beam.evaluate_editions.model_input`
    (the edition's ``model_input`` mean and std).
    """
    from pipelines.beam.evaluate_editions import model_input as edition_input
    from pipelines.beam.inference import model_input

    if edition == "imagenet":
        return model_input
    table = get_edition(edition)

    def to_input(frame):
        from transforms.preprocess import center_crop
        return edition_input(center_crop(Image.fromarray(np.asarray(frame)), table.image_size), table)

    return to_input
