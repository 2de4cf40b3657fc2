"""The floor of the release format: the own work and the format's steps of every output, timed apart."""
from __future__ import annotations

import hashlib
import json

import pytest

from schemas.configs import ImageNetCConfig
from pipelines.bench import scaling as bench_scaling
from pipelines.bench.format_floor import FLOOR_STEPS, measure_format_floor
from pipelines.formats.tfrecord import decode_example, iter_records


def test_the_floor_writes_every_output_and_times_each_step(tmp_path):
    input_dir = bench_scaling.write_synthetic_imagenet(str(tmp_path / "input"), 2)
    config = ImageNetCConfig.select(["contrast", "fog"], [1, 3])
    floor = measure_format_floor(input_dir, 2, config, str(tmp_path / "floor"))
    assert (floor["images"], floor["outputs"]) == (2, 10)  # clean + 2 corruptions x 2 severities
    assert all(floor[f"{step}_cpu_ms_per_image"] > 0 for step in ("own_work",) + FLOOR_STEPS)
    assert floor["floor_cpu_ms_per_image"] == pytest.approx(sum(floor[f"{step}_cpu_ms_per_image"]
                                                                for step in ("records", "tree_files", "examples")))
    assert 1 < floor["floor_over_own_work"] < floor["with_manifest_over_own_work"]
    for name in ("clean", "fog_3"):
        rows = [json.loads(line) for line in (tmp_path / "floor" / f"{name}.jsonl").read_text().splitlines()]
        with open(tmp_path / "floor" / f"{name}.tfrecord", "rb") as stream:
            examples = [decode_example(data) for _, data in iter_records(stream)]
        assert len(rows) == len(examples) == 2
        for row, example in zip(rows, examples):
            data = (tmp_path / "floor" / row["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == row["sha256"] and example["image"] == [data]
            assert example["label"] == [row["label"]] and len(row["array_sha256"]) == 64


def test_the_floor_rejects_a_bad_count_and_a_npy_edition(tmp_path):
    with pytest.raises(ValueError, match="count"):
        measure_format_floor(str(tmp_path), 0)
    with pytest.raises(ValueError, match="JPEG"):
        measure_format_floor(str(tmp_path), 1, ImageNetCConfig(edition="cifar"))


def test_the_scaling_table_shows_the_floor():
    floor = {"images": 100, "own_work_cpu_ms_per_image": 300.0, "records_cpu_ms_per_image": 11.0,
             "tree_files_cpu_ms_per_image": 8.0, "examples_cpu_ms_per_image": 5.0, "manifest_cpu_ms_per_image": 3.0,
             "floor_cpu_ms_per_image": 24.0,
             "floor_over_own_work": 1.08, "with_manifest_over_own_work": 1.09}
    cost = bench_scaling.build_cost([{"workers": 2, "images": 10, "cpu_seconds": 30.0, "image_work_cpu_seconds": 8.0},
                                     {"workers": 2, "images": 50, "cpu_seconds": 70.0, "image_work_cpu_seconds": 40.0}],
                                    None)
    table = bench_scaling.format_scaling_table({
        "runs": [], "conditions_per_image": 95, "corruptions": ["fog"], "severities": [1], "rng": "reference",
        "memory": "m", "machine": {"cpu": "c", "usable_cores": 2, "cores": 2, "python": "3"}, "build_cost": cost,
        "format_floor": floor})
    assert "the format's floor (100 images in one process" in table
    assert "24 CPU ms per image; floor / own work 1.080 (1.090 with manifest lines)" in table
