"""`imagenet-cp bench --scaling`: the synthetic ImageNet set, the memory probes and a tiny scaling run."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pipelines.bench import scaling as bench_scaling
from pipelines.inputs.listing import index_source
from schemas.imagenet_val import validation_wnid
from scripts.cli import main

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def test_synthetic_images_are_deterministic_imagenet_sized_and_varied():
    first = bench_scaling.synthetic_image(1)
    np.testing.assert_array_equal(first, bench_scaling.synthetic_image(1))
    assert not np.array_equal(first, bench_scaling.synthetic_image(1, seed=1))
    shapes = {bench_scaling.synthetic_image(i).shape for i in range(1, 13)}
    assert shapes == {(375, 500, 3), (500, 375, 3)}
    assert first.dtype == np.uint8 and first.std() > 20  # a photograph, not a flat fill


def test_synthetic_folder_reads_as_an_imagenet_validation_folder(tmp_path):
    folder = bench_scaling.write_synthetic_imagenet(str(tmp_path / "val"), 6)
    index = index_source(folder)
    assert not index.failures and len(index.entries) == 6
    for entry in index.entries:
        assert entry.wnid == validation_wnid(entry.file_name)
    with pytest.raises(ValueError, match="count"):
        bench_scaling.write_synthetic_imagenet(str(tmp_path / "x"), 0)


def test_memory_probes_see_this_process_and_its_children():
    assert bench_scaling.peak_rss_mib(os.getpid()) > 10
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert child.pid in bench_scaling.descendant_pids(os.getpid())
        assert bench_scaling.command_line(child.pid)[1:] == ("-c", "import time; time.sleep(5)")
    finally:
        child.kill()
        child.wait()
    assert bench_scaling.peak_rss_mib(child.pid) is None and bench_scaling.command_line(child.pid) == ()


def test_scaling_run_through_the_cli(capsys):
    assert main(["bench", "--scaling", "--json", "--sizes", "3", "--workers", "1,2", "--corruptions", "contrast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["conditions_per_image"] == 5 and result["corruptions"] == ["contrast"]
    assert result["rng"] == "reference" and result["machine"]["cores"] >= 1
    assert [(run["images"], run["workers"], run["outputs"]) for run in result["runs"]] == [(3, 1, 15), (3, 2, 15)]
    for run in result["runs"]:
        assert run["images_per_s"] == pytest.approx(3 / run["seconds"])
        assert len(run["worker_peak_rss_mib"]) == run["workers"]
        assert all(mib > 50 for mib in run["worker_peak_rss_mib"]) and run["driver_peak_rss_mib"] > 50
        assert len(run["load_average"]) == 3
        assert 0 < run["image_work_cpu_seconds"] < run["cpu_seconds"]  # the images' own work, inside the build
    floor = result["format_floor"]  # the format's own cost, in one process, on the smallest size
    assert (floor["images"], floor["outputs"]) == (3, 15) and floor["floor_over_own_work"] > 1
    assert result["runs"][0]["speedup"] == 1.0
    assert result["runs"][1]["speedup"] == pytest.approx(result["runs"][1]["images_per_s"]
                                                         / result["runs"][0]["images_per_s"])


def test_scaling_keeps_every_build_until_the_last_then_removes_its_scratch(tmp_path, monkeypatch, capsys):
    # No build may create its files right after the previous build's were deleted (see the module docstring).
    monkeypatch.setattr(bench_scaling.tempfile, "tempdir", str(tmp_path))
    measure, seen = bench_scaling.measure_build, []

    def recording(input_dir, count, config, workers, output_dir):
        seen.append(sorted(os.listdir(os.path.dirname(output_dir))))
        return measure(input_dir, count, config, workers, output_dir)

    monkeypatch.setattr(bench_scaling, "measure_build", recording)
    assert main(["bench", "--scaling", "--json", "--sizes", "2,3", "--workers", "1", "--corruptions",
                 "contrast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert seen == [["input"], ["build-2-1", "input"]]
    assert os.listdir(tmp_path) == []
    assert result["scratch_filesystem"] == bench_scaling.filesystem_type(str(tmp_path)) is not None
    assert bench_scaling.filesystem_type("/proc") == "proc"


def test_scaling_rejects_bad_options(capsys):
    assert main(["bench", "--scaling", "--rng", "reference,fast"]) == 2
    assert "one rng mode" in capsys.readouterr().err
    assert main(["bench", "--scaling", "--sizes", "0"]) == 2
    assert "sizes" in capsys.readouterr().err


def test_driver_memory_trend_extrapolates_the_largest_worker_count():
    runs = [{"workers": 1, "outputs": 100, "driver_peak_rss_mib": 999.0},
            {"workers": 2, "outputs": 1000, "driver_peak_rss_mib": 200.0},
            {"workers": 2, "outputs": 5000, "driver_peak_rss_mib": 210.0}]
    trend = bench_scaling.driver_memory_trend(runs, full_outputs=9000)
    assert trend["from_outputs"] == 1000 and trend["to_outputs"] == 5000 and trend["ratio"] == pytest.approx(1.05)
    assert trend["kib_per_output"] == pytest.approx(10 / 4000 * 1024)
    assert trend["full_driver_peak_mib"] == pytest.approx(220.0)
    assert bench_scaling.driver_memory_trend(runs[:2]) is None
    table = bench_scaling.format_scaling_table({
        "runs": [], "conditions_per_image": 20, "corruptions": ["contrast"], "severities": [1], "rng": "reference",
        "memory": "m", "machine": {"cpu": "c", "usable_cores": 2, "cores": 2, "python": "3"}, "driver_memory": trend,
        "resume": {"killed_at_fraction": 0.5, "killed_after_seconds": 10.0, "rerun_seconds": 6.0,
                   "rerun_ratio": 0.5, "fresh_seconds": 12.0}})
    assert "extrapolated to 9,000 outputs: 220 MiB" in table and "rerun 6.0 s = 50% of a fresh build" in table


def test_build_cost_at_the_margin_and_for_the_whole_largest_build():
    runs = [{"workers": 1, "images": 10, "cpu_seconds": 99.0, "image_work_cpu_seconds": 9.0},
            {"workers": 2, "images": 10, "cpu_seconds": 30.0, "image_work_cpu_seconds": 8.0},
            {"workers": 2, "images": 50, "cpu_seconds": 70.0, "image_work_cpu_seconds": 40.0}]
    cost = bench_scaling.build_cost(runs, bench_ms=800.0)
    assert (cost["from_images"], cost["to_images"], cost["workers"]) == (10, 50, 2)
    assert cost["build_cpu_ms_per_image"] == pytest.approx(1000.0) and cost["build_over_bench"] == pytest.approx(1.25)
    assert cost["image_work_cpu_ms_per_image"] == pytest.approx(800.0)
    assert cost["build_over_image_work"] == pytest.approx(1.25)
    assert cost["whole_build_cpu_ms_per_image"] == pytest.approx(1400.0)
    assert cost["whole_build_over_bench"] == pytest.approx(1.75)
    assert bench_scaling.build_cost(runs[:2], 800.0) is None
    table = bench_scaling.format_scaling_table({
        "runs": [], "conditions_per_image": 95, "corruptions": ["fog"], "severities": [1], "rng": "reference",
        "memory": "m", "machine": {"cpu": "c", "usable_cores": 2, "cores": 2, "python": "3"}, "build_cost": cost})
    assert "build / bench 1.25" in table and "whole build of 50 images: 1400 CPU ms per image; build / bench 1.75" in table
    assert "the images' own work inside those builds: 800 CPU ms per image; build / own work 1.25" in table
