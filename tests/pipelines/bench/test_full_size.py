"""`imagenet-cp bench --full-size`: the validation-like input, and the whole run at a tiny size."""
import importlib.util
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipelines.bench import full_size
from pipelines.inputs.families import read_cifar
from pipelines.inputs.listing import index_source
from schemas.imagenet_val import validation_wnid
from scripts.cli import main


def test_the_input_kinds_are_a_distribution_drawn_per_image():
    assert sum(kind.share for kind in full_size.INPUT_KINDS) == pytest.approx(1.0)
    assert full_size.input_kind(7) == full_size.input_kind(7)
    drawn = Counter(full_size.input_kind(index) for index in range(1, 20_001))
    for kind in full_size.INPUT_KINDS:
        assert drawn[kind] / 20_000 == pytest.approx(kind.share, abs=0.01 + kind.share / 2), kind
    assert {kind for kind in drawn if kind.share >= 0.004} == {k for k in full_size.INPUT_KINDS if k.share >= 0.004}


@pytest.mark.parametrize("kind", full_size.INPUT_KINDS, ids=lambda kind: f"{kind.width}x{kind.height}-{kind.mode}-"
                                                                         f"{kind.format}")
def test_each_kind_is_saved_at_its_size_mode_and_format(kind):
    index = next(i for i in range(1, 100_000) if full_size.input_kind(i) == kind)
    data = full_size.validation_like_image(index)
    assert data == full_size.validation_like_image(index)
    image = Image.open(io.BytesIO(data))
    assert (image.size, image.mode, image.format) == ((kind.width, kind.height), kind.mode, kind.format)


def test_the_input_reads_as_a_validation_folder_of_the_ground_truths_classes(tmp_path):
    folder = tmp_path / "val"
    written = full_size.write_validation_like(str(folder), 30, workers=2)
    assert written == sum(path.stat().st_size for path in folder.rglob("*.JPEG"))
    index = index_source(str(folder))
    assert not index.failures and len(index.entries) == 30
    assert all(entry.wnid == validation_wnid(entry.file_name) for entry in index.entries)
    with pytest.raises(ValueError, match="count"):
        full_size.write_validation_like(str(tmp_path / "x"), 50_001)


def test_projection_scales_the_largest_sizes_cpu_per_output_to_a_whole_release():
    steps = [{"step": "verify", "images": 10, "cpu_ms_per_output": 9.0},
             {"step": "verify", "images": 20, "cpu_ms_per_output": 7.5},
             {"step": "build-c (killed)", "images": 20, "cpu_ms_per_output": 2.0}]
    hours = full_size.projection(steps, (50_000, 96), cores=(2, 16))
    assert hours == {"verify": {"2": pytest.approx(7.5 * 50_000 * 96 / 1000 / 3600 / 2),
                                "16": pytest.approx(7.5 * 50_000 * 96 / 1000 / 3600 / 16)}}


@pytest.mark.beam
def test_the_full_size_command_runs_every_step_at_a_tiny_size(tmp_path, capsys, lite0_onnx):
    scratch = tmp_path / "scratch"
    assert main(["bench", "--full-size", "--sizes", "40,80", "--workers", "2", "--scratch", str(scratch),
                 "--model", str(lite0_onnx), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    names = ["build-c (killed)", "build-c (rerun)", "build-c (killed + rerun)", "verify", "package", "publish",
             "evaluate (killed)", "evaluate (rerun)", "evaluate (killed + rerun)"]
    assert [(s["step"], s["images"]) for s in result["steps"]] == \
        [("build-c", 40)] + [(n, 40) for n in names] + [(n, 80) for n in names]
    for step in result["steps"]:
        assert step["killed"] == step["step"].endswith("(killed)")
        assert step["seconds"] > 0 and step["cpu_seconds"] > 0 and step["driver_peak_rss_mib"] > 50
        assert step["outputs"] == step["images"] * (2 if step["step"].startswith("evaluate") else 10)
    assert all(s["worker_peak_rss_mib"] > 50 for s in result["steps"] if s["step"].startswith("build-c"))
    # evaluate's local workers are threads of its process: its peak is the driver's
    assert all(s["worker_peak_rss_mib"] is None for s in result["steps"] if s["step"].startswith("evaluate"))
    assert all(s["disk_written_bytes"] > 0 for s in result["steps"] if s["step"] in ("build-c", "package"))
    rerun = next(s for s in result["steps"] if "same_digest" in s)
    assert rerun["images"] == 40 and rerun["same_digest"] is True and rerun["over_uninterrupted"] > 0
    assert set(result["projection"]) == {"build-c (killed + rerun)", "verify", "package", "publish",
                                         "evaluate (killed + rerun)"}
    for name in ("build-c (killed)", "evaluate (killed)"):
        killed = next(s for s in result["steps"] if s["step"] == name)
        assert 0.5 <= killed["committed_fraction"] <= 1, killed  # tiny sizes: one part can hold all
    # evaluate predicted the two configs, and only them
    predictions = scratch / "evaluation-80" / "predictions" / "imagenet-c"
    assert sorted(p.name for p in predictions.iterdir()) == ["clean.jsonl", "gaussian_noise_3.jsonl"]
    assert len((predictions / "clean.jsonl").read_text().splitlines()) == 80
    assert result["input"]["input"] == "synthetic" and result["input"]["bytes"] > 80 * 10_000
    assert len(result["configs"]) == 10
    # the scratch folder named by --scratch is kept, with a verified release of the largest size
    assert main(["verify", str(scratch / "release-80")]) == 0


def _tiny_onnx(path, side: int, classes: int):
    """The tests' small classifier (global average pool -> matmul) for ``side`` x ``side`` inputs."""
    spec = importlib.util.spec_from_file_location(
        "evaluate_editions_helpers", Path(__file__).parents[1] / "beam" / "test_evaluate_editions.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    helpers.write_onnx_model(path, side, classes, 1)
    return path


@pytest.mark.beam
@pytest.mark.parametrize("benchmark, edition, side, classes, tree", [
    ("c", "imagenet64", 64, 1000, "ImageNet-64x64-C"), ("p", "cifar", 32, 10, "CIFAR-10-P")])
def test_the_full_size_command_builds_every_config_of_an_edition(tmp_path, capsys, benchmark, edition, side, classes,
                                                                 tree):
    pytest.importorskip("onnx")
    scratch, model = tmp_path / "scratch", _tiny_onnx(tmp_path / "tiny.onnx", side, classes)
    assert main(["bench", "--full-size", "--benchmark", benchmark, "--edition", edition, "--configs", "all",
                 "--sizes", "3", "--workers", "2", "--scratch", str(scratch), "--model", str(model),
                 "--evaluated-configs", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    plan = full_size.FullSizePlan(benchmark, edition, "all", 3)
    assert (result["benchmark"], result["edition"], result["configs"]) == (benchmark, edition, list(plan.groups))
    assert result["whole"] == ([50_000, 96] if benchmark == "c" else [10_000, 20])
    build = f"build-{benchmark}"
    assert [s["step"] for s in result["steps"]][:2] == [build, f"{build} (killed)"]
    for step in result["steps"]:
        per_image = 3 if step["step"].startswith("evaluate") else len(plan.groups)
        assert step["outputs"] == step["images"] * per_image and step["cpu_seconds"] > 0
    assert next(s for s in result["steps"] if "same_digest" in s)["same_digest"] is True
    release = scratch / "release-3"
    assert main(["verify", str(release)]) == 0
    if benchmark == "c":  # 95 corruption x severity folders and the clean one, 3 JPEGs each
        built = [path for path in (release / tree).glob("*/*") if path.is_dir() and path.name.isdigit()]
        assert len(built) == 95 and len(list((release / tree / "clean").rglob("*.JPEG"))) == 3
    else:  # one (3, frames, 32, 32, 3) array per set
        arrays = {path.stem: np.load(path, mmap_mode="r") for path in (release / tree).glob("*.npy")}
        assert sorted(arrays) == sorted(plan.groups)
        assert all(a.shape[0] == 3 and a.shape[2:] == (32, 32, 3) for a in arrays.values())
    predictions = scratch / "evaluation-3" / "predictions"
    assert sorted(p.stem for p in predictions.glob("*/*.jsonl")) == sorted(plan.groups[:3])
    assert all(len(p.read_text().splitlines()) == 3 for p in predictions.glob("*/*.jsonl"))


def test_a_cifar_input_is_a_cifar_10_test_set_the_build_reads(tmp_path):
    written = full_size.write_cifar_like(str(tmp_path), 25, seed=3)
    images, labels, names, family = read_cifar(str(tmp_path / "cifar-10-batches-py"))
    assert written == sum(p.stat().st_size for p in (tmp_path / "cifar-10-batches-py").iterdir())
    assert images.shape == (25, 32, 32, 3) and family == "cifar10" and len(names) == 10
    expected = [full_size.cifar_like_image(index, 3) for index in range(25)]
    assert all(np.array_equal(image, e) for image, (e, _) in zip(images, expected))
    assert labels == [label for _, label in expected] and len(set(labels)) > 3
    with pytest.raises(ValueError, match="count"):
        full_size.write_cifar_like(str(tmp_path / "x"), 10_001)


@pytest.mark.parametrize("benchmark, configs, groups", [("c", "ten", 10), ("c", "all", 96), ("p", "ten", 10),
                                                        ("p", "all", 20)])
def test_a_plan_names_its_configs_and_the_builds_flags(benchmark, configs, groups):
    plan = full_size.FullSizePlan(benchmark, "imagenet" if benchmark == "c" else "cifar", configs)
    assert len(plan.groups) == groups
    flags = plan.build_args()
    assert flags[:2] == ["--edition", plan.edition] and (len(flags) == 2) == (configs == "all")
    with pytest.raises(ValueError, match="configs"):
        full_size.FullSizePlan(benchmark, configs="some")
    with pytest.raises(ValueError, match="unknown edition"):
        full_size.FullSizePlan(benchmark, "nonexistent")


def test_a_plans_evaluation_commits_a_record_per_prediction_or_per_frame():
    assert full_size.FullSizePlan("c", "imagenet64", "all", 4).evaluated_records() == 4
    plan = full_size.FullSizePlan("p", "cifar", "all", 4)
    frames = [plan.selection("all").table.perturbations[name].frames for name, _ in plan.selection("all").pairs[:4]]
    assert plan.evaluated_records() == sum(frames) and min(frames) > 1  # the kill waits for frames, not videos


def test_a_plan_hands_its_formats_to_the_build_and_refuses_an_unknown_one():
    plan = full_size.FullSizePlan("p", "cifar", "all", formats=("tree",))
    assert plan.build_args() == ["--edition", "cifar", "--formats", "tree"]
    assert full_size.FullSizePlan(formats=("tree", "tfds")).build_args()[2:4] == ["--formats", "tfds,tree"]
    with pytest.raises(ValueError, match="unknown output format 'png'"):
        full_size.FullSizePlan(formats=("png",))
