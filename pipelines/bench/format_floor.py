"""The floor of the release format: what any writer of an ImageNet-C release must spend per image.

:func:`measure_format_floor` makes every output of the first images of a folder with the build's
own :func:`pipelines.beam.imagenet_c.corrupted_outputs` (its :class:`pipelines.beam.progress.WorkClock`
counts the images' own work as a build's workers count it: decode + preprocess, corrupt + JPEG
encode) and, in the same process, timed apart, only what the release format itself asks of each
output, with nothing a build adds to make it run anywhere and resume:

- ``records``: the rest of ``corrupted_outputs``, the output records with the SHA-256 of each
  array (the manifests' ``array_sha256``);
- ``tree_files``: creating and writing the output's file, its class folder made beforehand
  (:func:`pipelines.formats.class_folders.make_class_folders_once`, untimed), with its SHA-256
  (``SHA256SUMS``): :func:`pipelines.formats.storage.write_new`;
- ``examples``: its ``tf.train.Example``, framed and appended to one TFRecord file per config,
  hashed as it goes;
- ``manifest``: its manifest line (:func:`schemas.release.json_line`), appended and hashed.

No Beam, no part files, no spill, no merge into key order, no progress: a build costs at least
the own work plus these, so ``floor_over_own_work`` is the least ``build_over_image_work``
(:func:`pipelines.bench.scaling.build_cost`) any build of these outputs can reach.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from typing import Optional

from schemas.configs import ImageNetCConfig
from schemas.edition import JPEG
from schemas.records import Failure, SourceImage
from schemas.release import json_line
from transforms import preprocess
from transforms.threads import one_opencv_thread

from pipelines.beam.imagenet_c import corrupted_outputs, imagenet_c_dataset
from pipelines.beam.progress import WorkClock
from pipelines.formats import storage
from pipelines.formats.class_folders import label_names, make_class_folders_once
from pipelines.formats.tfrecord import encode_example, frame_record
from pipelines.inputs.families import open_input
from pipelines.inputs.listing import read_entry

__all__ = ["FLOOR_STEPS", "measure_format_floor"]

FLOOR_STEPS = ("records", "tree_files", "examples", "manifest")
"""The format's steps of :func:`measure_format_floor`, in the order each output takes them."""


def measure_format_floor(input_dir: str, count: int, config: ImageNetCConfig = ImageNetCConfig(),
                         output_dir: Optional[str] = None) -> dict:
    """Time the images' own work and the format's steps of every output of the first ``count`` images.

    Parameters
    ----------
    input_dir : str
        An ImageNet validation folder (:func:`pipelines.bench.scaling.write_synthetic_imagenet`).
    count : int
        Images (>= 1), the first in key order.
    config : ImageNetCConfig
        What each image is made into (its edition must save JPEGs).
    output_dir : str, optional
        Where the outputs go (default: a temporary folder under ``TMPDIR``, removed after).

    Returns
    -------
    dict
        ``images``, ``outputs``, ``own_work_cpu_ms_per_image``, ``<step>_cpu_ms_per_image`` for
        each of :data:`FLOOR_STEPS` (CPU time of this thread, ``time.thread_time_ns``),
        ``floor_cpu_ms_per_image`` (records, tree files and examples together),
        ``floor_over_own_work`` (1 + that over the own work) and
        ``with_manifest_over_own_work`` (the manifest lines too).
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an int >= 1, got {count!r}")
    if config.edition.c.encoding != JPEG:
        raise ValueError(f"the format's floor is timed for editions that save JPEGs, not {config.edition.name}")
    if output_dir is None:
        with tempfile.TemporaryDirectory(prefix="imagenet-cp-floor-") as scratch:
            return measure_format_floor(input_dir, count, config, scratch)
    os.makedirs(output_dir, exist_ok=True)
    one_opencv_thread()
    entries = open_input(config.edition, input_dir).list(output_dir).entries[:count]
    dataset = imagenet_c_dataset(config)
    names = label_names(dataset)
    files: dict = {}  # (config, suffix) -> (stream, its SHA-256)

    def append(group: str, suffix: str, data: bytes) -> None:
        if (group, suffix) not in files:
            files[group, suffix] = (open(os.path.join(output_dir, f"{group}.{suffix}"), "wb"), hashlib.sha256())
        stream, hashed = files[group, suffix]
        stream.write(data)
        hashed.update(data)

    clock = time.thread_time_ns
    spent = dict.fromkeys(("own_work",) + FLOOR_STEPS, 0)
    try:
        for entry in entries:
            work = WorkClock()
            with work:
                crop = preprocess(read_entry(entry), edition=config.edition)
            outputs = corrupted_outputs(SourceImage(entry, b""), crop, config, clock=work)
            while True:
                start, before = clock(), work.ns
                record = next(outputs, None)
                spent["records"] += clock() - start - (work.ns - before)  # beyond the own work inside
                if record is None:
                    break
                if isinstance(record, Failure):
                    raise RuntimeError(f"{record.key}: {record.reason}")
                make_class_folders_once(output_dir, record.path.rpartition("/")[0], names)
                marks = [clock()]
                info = storage.write_new(output_dir, record.path, record.data)
                marks.append(clock())
                append(record.group, "tfrecord", frame_record(encode_example(record.example, dataset.features)))
                marks.append(clock())
                append(record.group, "jsonl", json_line({**record.metadata, "key": record.key, "path": record.path,
                                                         "sha256": info.sha256, "bytes": info.size}).encode("utf-8"))
                marks.append(clock())
                for step, begin, end in zip(FLOOR_STEPS[1:], marks, marks[1:]):
                    spent[step] += end - begin
            spent["own_work"] += work.ns
    finally:
        for stream, _ in files.values():
            stream.close()
    spent["floor"] = sum(spent[step] for step in FLOOR_STEPS if step != "manifest")
    own = spent["own_work"]
    return {"images": len(entries), "outputs": len(entries) * len(config.conditions),
            **{f"{name}_cpu_ms_per_image": ns / 1e6 / len(entries) for name, ns in spent.items()},
            "floor_over_own_work": 1 + spent["floor"] / own,
            "with_manifest_over_own_work": 1 + (spent["floor"] + spent["manifest"]) / own}
