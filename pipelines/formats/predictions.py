"""Prediction files and the lines an evaluation's parts hold: the one writer and reader of each.

- a prediction file (``OUT/predictions/<tree>/<config>.jsonl``): one :class:`PredictionRecord` a
  line, ``{"key", "label", "top5"}`` (``top5``: the five classes of an image, or one five per frame
  of a video);
- the parts' lines of :mod:`pipelines.beam.prediction_parts`: an image's is its prediction line, a
  video frame's is ``[frame, frames, label, top5]`` (:class:`FramePrediction`), an ImageNet-A / -O
  image's is ``[label, base64 of the float32 logits]`` (:func:`logits_line`).
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Iterator, NamedTuple, Sequence, Union

import numpy as np

from schemas.release import json_line

from pipelines.formats.parts import iter_lines

__all__ = ["PredictionRecord", "prediction_line", "parse_prediction_line", "read_predictions", "read_set_predictions",
           "FramePrediction", "frame_line", "parse_frame_line", "logits_line", "parse_logits_line"]


@dataclass(frozen=True)
class PredictionRecord:
    """One line of a prediction file.

    Attributes
    ----------
    key : str
        The output key (an image, a video).
    label : int
        Its class index.
    top5 : sequence
        The model's five classes, best first (a video: one such list per frame).
    """

    key: str
    label: int
    top5: Sequence[Union[int, Sequence[int]]]


def prediction_line(record: PredictionRecord) -> str:
    """The line of a prediction file (:func:`schemas.release.json_line`), with its newline."""
    return json_line({"key": record.key, "label": record.label, "top5": record.top5})


def parse_prediction_line(line: str) -> PredictionRecord:
    """The record of one line of a prediction file.

    Raises
    ------
    ValueError
        When the line is not JSON.
    KeyError
        When it lacks ``key``, ``label`` or ``top5``.
    """
    row = json.loads(line)
    return PredictionRecord(row["key"], row["label"], row["top5"])


def read_predictions(path: str) -> Iterator[PredictionRecord]:
    """The records of a prediction file (any file system), in file order, read chunk by chunk."""
    for line in iter_lines(path):
        yield parse_prediction_line(line)


def read_set_predictions(path: str) -> np.ndarray:
    """The ``(V, T, 5)`` int16 top-5 classes of an ImageNet-P set's prediction file (one line per
    video), in file order; read a video at a time (0.3 KB each at 31 frames).

    Raises
    ------
    ValueError
        When the file holds no video, or videos of different frame counts.
    """
    videos = [np.asarray(record.top5, dtype=np.int16) for record in read_predictions(path)]
    if not videos or len({video.shape for video in videos}) != 1:
        raise ValueError(f"{path}: no video, or videos of different frame counts")
    return np.stack(videos)


class FramePrediction(NamedTuple):
    """The part line of one frame of a video: its index, the video's frame count, label and top-5."""

    index: int
    total: int
    label: int
    top5: Sequence[int]


def frame_line(frame: FramePrediction) -> str:
    """The part line of a frame (compact JSON, no newline)."""
    return json.dumps(list(frame), separators=(",", ":"))


def parse_frame_line(line: str) -> FramePrediction:
    """The frame of a part line written by :func:`frame_line`."""
    return FramePrediction(*json.loads(line))


def logits_line(label: int, logits) -> str:
    """The part line of an ImageNet-A / -O image: its label and its logits as little-endian float32,
    base64 (kept to the bit); compact JSON, no newline."""
    data = base64.b64encode(np.asarray(logits, dtype="<f4").tobytes()).decode("ascii")
    return json.dumps([label, data], separators=(",", ":"))


def parse_logits_line(line: str) -> tuple[int, np.ndarray]:
    """``(label, float32 logits)`` of a part line written by :func:`logits_line`."""
    label, data = json.loads(line)
    return label, np.frombuffer(base64.b64decode(data), "<f4")
