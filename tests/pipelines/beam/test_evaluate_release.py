"""``evaluate`` end to end: a tiny JPEG / MP4 release, a tiny ONNX model built here, FnApi runner."""
import json

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from metrics.imagenet_p import flip_probability, mean_top5_distance  # noqa: E402
from pipelines.beam.inference import Model  # noqa: E402
from pipelines.beam.runner import RunOptions  # noqa: E402
from pipelines.beam.evaluate import evaluate_release  # noqa: E402
from pipelines.evaluation.model_input import model_input  # noqa: E402
from pipelines.evaluation.metrics_files import load_errors, load_flips  # noqa: E402
from schemas.wnids import imagenet_wnids  # noqa: E402

WNIDS = imagenet_wnids()[:2]
# Logits = mean colour (per normalised channel) @ W: a fixed, deterministic 3 x 1000 map in which
# reddish images favour class 0 and greenish ones class 1 (the two labels of the tiny release).
W = 0.5 * np.cos(np.arange(3)[:, None] * 1.7 + np.arange(1000)[None, :] * 0.37)
W[:, 0], W[:, 1] = (4, -2, -2), (-2, 4, -2)
W = W.astype(np.float32)


def write_onnx_model(path):
    """Global average pool -> flatten -> matmul by W: (N, 3, 224, 224) -> (N, 1000)."""
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["logits"])],
        "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        initializer=[numpy_helper.from_array(W, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def reference_top1(image_bytes_or_array) -> int:
    logits = model_input(image_bytes_or_array).mean(axis=(1, 2)) @ W
    return int(np.argmax(logits))


def colour_image(seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, 3)
    return np.clip(base + rng.integers(-20, 20, (224, 224, 3)), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    for c_index, corruption in enumerate(("fog", "saturate")):
        for severity in range(1, 6):
            for w_index, wnid in enumerate(WNIDS):
                folder = root / "ImageNet-C" / corruption / str(severity) / wnid
                folder.mkdir(parents=True)
                for i in range(2):
                    seed = 100 * c_index + 10 * severity + 2 * w_index + i
                    Image.fromarray(colour_image(seed)).save(folder / f"img_{i}.JPEG", quality=85)
    import imageio_ffmpeg

    for name in ("rotate", "gaussian_noise"):
        for w_index, wnid in enumerate(WNIDS):
            folder = root / "ImageNet-P" / name / wnid
            folder.mkdir(parents=True)
            writer = imageio_ffmpeg.write_frames(str(folder / "vid.mp4"), (224, 224), fps=1,
                                                 codec="libx264", output_params=["-crf", "20"])
            writer.send(None)
            for t in range(6):
                writer.send(colour_image(1000 + 7 * w_index + (t // 2)))
            writer.close()
    model = root / "tiny.onnx"
    write_onnx_model(model)
    out = evaluate_release(str(root), Model(str(model), batch_size=4), run=RunOptions(workers=1))
    return root, out


def test_outputs_are_where_the_docs_say(release):
    root, out = release
    assert out == root.with_name(root.name + "-evaluations") / "tiny"
    for name in ("metrics.json", "report.md", "imagenet-c-errors.json", "imagenet-p-predictions.npz",
                 "plots/error_vs_severity.png", "plots/corruption_errors.png",
                 "plots/flip_probability.png", "predictions/imagenet-c/fog_3.jsonl",
                 "predictions/imagenet-p/rotate.jsonl"):
        assert (out / name).is_file(), name


def test_imagenet_c_predictions_and_errors_match_the_model(release):
    root, out = release
    labels = {w: i for i, w in enumerate(imagenet_wnids())}
    errors, clean = load_errors(out / "imagenet-c-errors.json")
    all_wrong = []
    assert clean is None and sorted(errors) == ["fog", "saturate"]
    for corruption in ("fog", "saturate"):
        for severity in range(1, 6):
            rows = [json.loads(line) for line in
                    (out / f"predictions/imagenet-c/{corruption}_{severity}.jsonl").read_text().splitlines()]
            assert [r["key"] for r in rows] == sorted(r["key"] for r in rows) and len(rows) == 4
            wrong = 0
            for row in rows:
                path = root / "ImageNet-C" / corruption / str(severity) / row["key"]
                assert row["top5"][0] == reference_top1(path.read_bytes())
                assert row["label"] == labels[row["key"].split("/")[0]]
                wrong += row["top5"][0] != row["label"]
            assert errors[corruption][severity - 1] == pytest.approx(wrong / 4)
            all_wrong.append(wrong)
    assert 0 < sum(all_wrong) < 40  # the model gets some right and some wrong
    metrics = json.loads((out / "metrics.json").read_text())["imagenet_c"]
    summary = metrics["summary"]
    assert summary["mCE"] is None and len(summary["missing"]) == 14
    assert summary["CE"]["fog"] == pytest.approx(100 * sum(errors["fog"]) / sum(
        (0.67474, 0.76050, 0.84378, 0.87260, 0.94500)))
    assert set(summary["extra"]["CE"]) == {"saturate"}


def test_imagenet_p_predictions_match_the_model_and_the_metrics(release):
    root, out = release
    flips = load_flips(out / "imagenet-p-predictions.npz")
    assert sorted(flips) == ["gaussian_noise", "rotate"] and flips["rotate"].shape == (2, 6, 5)
    import cv2

    capture = cv2.VideoCapture(str(root / "ImageNet-P" / "rotate" / WNIDS[1] / "vid.mp4"))
    frames = []
    ok, frame = capture.read()
    while ok:
        frames.append(reference_top1(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)))
        ok, frame = capture.read()
    assert flips["rotate"][1, :, 0].tolist() == frames
    summary = json.loads((out / "metrics.json").read_text())["imagenet_p"]["summary"]
    rotate = summary["perturbations"]["rotate"]
    assert rotate["2"]["flip_probability"] == pytest.approx(flip_probability(flips["rotate"], "rotate", 2))
    assert rotate["1"]["top5_distance"] == pytest.approx(mean_top5_distance(flips["rotate"], "rotate", 1))
    assert set(summary["perturbations"]["gaussian_noise"]) == {"1"} and summary["mFR"] is None


def test_outputs_are_byte_identical_on_a_second_run(release, tmp_path):
    root, out = release
    again = evaluate_release(str(root), Model(str(root / "tiny.onnx"), batch_size=3), out_dir=str(tmp_path),
                             run=RunOptions(workers=2))
    for name in ("metrics.json", "imagenet-c-errors.json", "imagenet-p-predictions.npz",
                 "predictions/imagenet-c/saturate_5.jsonl", "predictions/imagenet-p/gaussian_noise.jsonl",
                 "report.md"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_configs_chooses_what_is_predicted_with_the_whole_runs_bytes(release, tmp_path):
    root, out = release
    part = evaluate_release(str(root), Model(str(root / "tiny.onnx"), batch_size=4), out_dir=str(tmp_path / "part"),
                            run=RunOptions(workers=1), configs=["fog_3", "rotate"])
    predicted = sorted(p.relative_to(part / "predictions").as_posix() for p in (part / "predictions").rglob("*.jsonl"))
    assert predicted == ["imagenet-c/fog_3.jsonl", "imagenet-p/rotate.jsonl"]
    for name in predicted:
        assert (part / "predictions" / name).read_bytes() == (out / "predictions" / name).read_bytes(), name
    with pytest.raises(ValueError, match="--configs: the release holds no fog_9; it holds fog_1, "):
        evaluate_release(str(root), Model(str(root / "tiny.onnx")), out_dir=str(tmp_path / "x"), configs=["fog_9"])


def test_an_empty_release_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="holds no ImageNet-C"):
        evaluate_release(str(tmp_path), Model(str(tmp_path / "m.onnx")))


def test_cli_builds_the_sample_release_and_evaluates_it(tmp_path):
    """The issue's end-to-end case: the bundled sample, all 15 benchmark corruptions x 5 severities,
    built and evaluated through the command line with an ONNX model, report and plots written."""
    from schemas.imagenet_c import BENCHMARK_CORRUPTIONS
    from scripts.cli import main as cli

    release, model, out = tmp_path / "sample", tmp_path / "tiny.onnx", tmp_path / "eval"
    assert cli(["build-c", "--output", str(release), "--workers", "2",
                "--corruptions", ",".join(BENCHMARK_CORRUPTIONS)]) == 0
    write_onnx_model(model)
    assert cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                "--clean-error", "0.5", "--workers", "2"]) == 0
    summary = json.loads((out / "metrics.json").read_text())["imagenet_c"]["summary"]
    errors, clean = load_errors(out / "imagenet-c-errors.json")
    assert sorted(errors) == sorted(BENCHMARK_CORRUPTIONS) and clean == 0.5
    assert summary["missing"] == [] and summary["mCE"] > 0 and summary["relative_mCE"] > 0
    for plot in ("error_vs_severity", "corruption_errors"):
        assert (out / "plots" / f"{plot}.png").stat().st_size > 10_000
    assert "mCE" in (out / "report.md").read_text()
