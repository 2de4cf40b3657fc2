"""Where ``evaluate`` finds the ImageNet-P sequences of a release, for every P edition.

A release's ``release.json`` names its tree (``ImageNet-P``, ``ImageNet-P-299``, ``Tiny-ImageNet-P``,
``ImageNet-64x64-P``: folders ``<set>/<wnid>/<stem>.mp4``; ``CIFAR-10-P`` / ``CIFAR-100-P``: one
``<set>.npy`` of shape (N, T, 32, 32, 3), rows in the order of ``manifest/<set>.jsonl``) and its
edition; a folder without one is read as the 224 ``ImageNet-P/`` tree. Each sequence is listed as
``((set, key, label), locator)``; :func:`sequence_frames` reads it on a worker, as the official
evaluators do (``cv2.VideoCapture``, BGR -> RGB for the videos; the array rows for ``.npy``), and
:func:`pipelines.evaluation.model_input.frame_model_input` feeds each frame to the model as the
edition's evaluator does. Every read goes through :mod:`pipelines.formats.storage`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from schemas.edition import DEFAULT_EDITION, Edition
from schemas.editions import EDITIONS, get_edition
from schemas.imagenet_p_editions import NPY
from schemas.release import P_TREE, manifest_path

from pipelines.evaluation.release_inputs import npy_header, read_npy_rows, release_tree
from pipelines.formats import storage
from pipelines.formats.manifests import read_manifest_part
from pipelines.formats.release_document import read_release
from pipelines.formats.video import read_video

__all__ = ["PSet", "p_tree", "p_sets", "npy_sequences", "sequence_frames"]


class PSet(NamedTuple):
    """One sequence set of a release: its name (``rotate``, ``shot_noise_2``), where it lies, its edition."""

    name: str
    path: str
    edition: Edition


def p_tree(release_dir: str) -> tuple[str, str]:
    """``(tree folder, edition)`` of a release's ImageNet-P data
    (:func:`pipelines.evaluation.release_inputs.release_tree`: the tree ``release.json`` names and
    its edition, else the first P tree folder present, ``ImageNet-P``, ``ImageNet-P-299``, ...,
    ``CIFAR-10-P``), else the 224 edition's ``('ImageNet-P', 'imagenet')``."""
    trees = {tree: name for name, e in EDITIONS.items() if e.p for tree in e.p.trees}
    try:
        release = read_release(release_dir)
    except (OSError, ValueError):  # none, or unreadable: the folders tell
        release = None
    return release_tree(release_dir, release, trees) or (P_TREE, DEFAULT_EDITION)


def p_sets(release_dir: str) -> list[PSet]:
    """Every sequence set of the release, sorted by name (empty when it has no ImageNet-P)."""
    tree, edition = p_tree(release_dir)
    root = storage.join(release_dir, tree)
    if not storage.is_folder(root):
        return []
    edition = get_edition(edition)
    if edition.p.output == NPY:
        names = [storage.basename(path) for path in storage.list_files(release_dir, tree)]
        return [PSet(name[:-len(".npy")], storage.join(root, name), edition) for name in names if name.endswith(".npy")]
    return [PSet(name, storage.join(root, name), edition) for name in storage.list_folders(root)]


def npy_sequences(release_dir: str, name: str, path: str):
    """``(key, label, (path, row))`` of each sequence of the ``.npy`` set ``name`` at ``path``, from
    its manifest (rows are in image-key order, the input's order).

    Raises
    ------
    ValueError
        When the manifest and the array disagree in length.
    """
    rows = sorted(read_manifest_part(release_dir, manifest_path(name)), key=lambda row: row.fields["image_key"])
    count = npy_header(path)[1][0]
    if count != len(rows):
        raise ValueError(f"{path}: {count} sequences but {len(rows)} manifest rows")
    return [(row.fields["image_key"], row.label, (path, index)) for index, row in enumerate(rows)]


def sequence_frames(locator) -> np.ndarray:
    """uint8 (T, H, W, 3) RGB frames of one sequence: an MP4 path, or ``(npy path, row)``."""
    if isinstance(locator, tuple):
        path, index = locator
        return read_npy_rows(path, index, 1)[0]
    return read_video(locator)
