"""The floor of the release format: what any writer of an ImageNet-C release must spend per image.

:func:`measure_format_floor` makes every output of the first images of a folder the way a build
makes them (decode + preprocess, then corrupt + JPEG encode of every condition: the images' own
work) and, in the same process, timed apart, only what the release format itself asks of each
output, with nothing a build adds to make it run anywhere and resume:

- ``hashes``: the SHA-256 of the array (the manifests' ``array_sha256``);
- ``tree_files``: creating and writing the output's file in its class folder (made beforehand),
  with its SHA-256 (``SHA256SUMS``): :func:`pipelines.formats.storage.write_new`;
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

from schemas.edition import JPEG
from schemas.release import json_line
from transforms import encode_jpeg, preprocess
from transforms.threads import one_opencv_thread

from pipelines.beam.imagenet_c import ImageNetCConfig, array_sha256, condition_array
from pipelines.formats import storage
from pipelines.formats.tfrecord import encode_example, frame_record
from pipelines.inputs.families import open_input
from pipelines.inputs.listing import read_entry

FLOOR_STEPS = ("hashes", "tree_files", "examples", "manifest")
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
        ``floor_cpu_ms_per_image`` (hashes, tree files and examples together),
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
    layout = config.layout()
    entries = open_input(config.edition, input_dir).list(output_dir).entries[:count]
    conditions = config.conditions
    templates = {c: f"{layout.tree}/" + (layout.clean_template if c.is_clean else layout.path_template)
                 for c in conditions}

    def output_path(condition, entry) -> str:
        return templates[condition].format(corruption=condition.corruption, severity=condition.severity,
                                           wnid=entry.wnid, file_name=entry.file_name)

    for entry in entries:  # the class folders, made beforehand
        for condition in conditions:
            os.makedirs(os.path.join(output_dir, output_path(condition, entry).rpartition("/")[0]), exist_ok=True)
    shards = {c: (open(os.path.join(output_dir, f"{c.folder.replace('/', '_')}.tfrecord"), "wb"), hashlib.sha256())
              for c in conditions}
    manifests = {c: (open(os.path.join(output_dir, f"{c.folder.replace('/', '_')}.jsonl"), "wb"), hashlib.sha256())
                 for c in conditions}
    clock = time.thread_time_ns
    spent = dict.fromkeys(("own_work",) + FLOOR_STEPS, 0)
    try:
        for entry in entries:
            data = read_entry(entry)
            start = clock()
            crop = preprocess(data, edition=config.edition)
            spent["own_work"] += clock() - start
            for condition in conditions:
                start = clock()
                array, seed = condition_array(crop, condition, entry.key, config)
                encoded = encode_jpeg(array, config.edition.c.jpeg_quality)
                marks = [clock()]
                digest = array_sha256(array)
                marks.append(clock())
                path = output_path(condition, entry)
                info = storage.write_new(output_dir, path, encoded)
                marks.append(clock())
                record = frame_record(encode_example({"image": encoded, "label": entry.label,
                                                      "file_name": entry.file_name}))
                stream, hashed = shards[condition]
                stream.write(record)
                hashed.update(record)
                marks.append(clock())
                line = json_line({"image_key": entry.key, "wnid": entry.wnid, "label": entry.label,
                                  **condition.manifest_fields(), "seed": seed, "array_sha256": digest,
                                  "key": f"{condition.folder}/{entry.key}", "path": path, "sha256": info.sha256,
                                  "bytes": info.size}).encode("utf-8")
                stream, hashed = manifests[condition]
                stream.write(line)
                hashed.update(line)
                marks.append(clock())
                spent["own_work"] += marks[0] - start
                for step, begin, end in zip(FLOOR_STEPS, marks, marks[1:]):
                    spent[step] += end - begin
    finally:
        for stream, _ in (*shards.values(), *manifests.values()):
            stream.close()
    spent["floor"] = sum(spent[step] for step in FLOOR_STEPS if step != "manifest")
    own = spent["own_work"]
    return {"images": len(entries), "outputs": len(entries) * len(conditions),
            **{f"{name}_cpu_ms_per_image": ns / 1e6 / len(entries) for name, ns in spent.items()},
            "floor_over_own_work": 1 + spent["floor"] / own,
            "with_manifest_over_own_work": 1 + (spent["floor"] + spent["manifest"]) / own}
