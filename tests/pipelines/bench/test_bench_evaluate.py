"""``imagenet-cp bench --evaluate``: the loop and evaluate see the same images and predict the same
classes, and the figures come out in one run (what they are is for the bench to say, not a test)."""
import json

import pytest

pytestmark = pytest.mark.beam  # runs evaluate's Beam pipeline: `pytest -m "not beam"` leaves it out

pytest.importorskip("onnxruntime")

from scripts.cli import main as cli  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "evaluate_release_helpers", Path(__file__).parents[1] / "beam" / "test_evaluate_release.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    path = tmp_path_factory.mktemp("model") / "tiny.onnx"
    helpers.write_onnx_model(path)
    return path


def test_bench_evaluate_times_the_loop_and_evaluate_on_the_same_images(tiny_model, capsys):
    assert cli(["bench", "--evaluate", str(tiny_model), "--evaluate-images", "12", "--workers", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["images"] == 12 and result["loop"]["images"] == 12 and result["loop"]["threads"] == 2
    (run,) = result["evaluate"]
    assert run["workers"] == 1 and run["images_per_second"] > 0
    assert run["ratio_to_loop"] == pytest.approx(result["loop"]["seconds"] / run["seconds"])


def test_bench_evaluate_refuses_a_missing_model(tmp_path, capsys):
    assert cli(["bench", "--evaluate", str(tmp_path / "none.onnx")]) == 2
    assert "no such model file" in capsys.readouterr().err
