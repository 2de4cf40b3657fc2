"""What evaluate's processes import, and the line of each step's seconds (``evaluate --verbose``)."""
import subprocess
import sys

from pipelines.beam.inference import step_seconds


def test_beam_inference_is_imported_without_torch_and_keeps_its_memory_metric():
    """Beam's model manager (which imports torch) stays out of the driver and the workers; Beam
    still imports it itself on first use, and its memory metric of a model load still reads."""
    code = ("import sys\n"
            "import pipelines.beam.evaluate\n"
            "from apache_beam.ml.inference import base\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "assert not {'numba', 'scipy', 'skimage'} & set(sys.modules), 'the corruptions imported'\n"
            "assert base.ModelManager is None and base.resource is not None\n"
            "assert base._get_current_process_memory_in_bytes() > 0\n"
            "from apache_beam.ml.inference.model_manager import ModelManager\n"
            "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_a_local_evaluation_runs_its_workers_as_threads_and_a_build_as_processes():
    """Evaluate's local workers are threads of the driver (no worker process to start or stop);
    a build's are processes; a named runner gets the options as given."""
    from apache_beam.options.pipeline_options import DirectOptions

    from pipelines.beam.runner import make_pipeline

    def mode(**kwargs):
        return make_pipeline(2, **kwargs)._options.view_as(DirectOptions).direct_running_mode

    assert (mode(in_threads=True), mode()) == ("multi_threading", "multi_processing")
    assert mode(beam_args=["--runner=PortableRunner"], in_threads=True) == "in_memory"  # Beam's default, untouched
    assert mode(beam_args=["--direct_running_mode=multi_processing"], in_threads=True) == "multi_processing"


def test_a_step_without_marks_is_merged_into_the_next():
    steps = step_seconds(100.0, 101.0, (102.0, 120.0), {"written_ms": (118.0, 119.0)}, 121.0)
    assert steps == [("imports", 1.0), ("checks", 1.0), ("files and report", 17.0), ("shutdown", 1.0),
                     ("total", 21.0)]


def test_verbose_ends_with_each_steps_seconds(sample_release, tmp_path, capsys):
    """``evaluate --verbose`` on the sample release: the last stderr line dates every step, and the
    steps add up to the total."""
    import importlib.util
    from pathlib import Path

    import pytest

    pytest.importorskip("onnx")
    from scripts.cli import main as cli

    spec = importlib.util.spec_from_file_location(
        "evaluate_release_helpers", Path(__file__).with_name("test_evaluate_release.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    model = tmp_path / "tiny.onnx"
    helpers.write_onnx_model(model)
    assert cli(["evaluate", "--release", str(sample_release[0]), "--model", str(model), "--output",
                str(tmp_path / "eval"), "--configs", "clean", "--workers", "1", "--verbose"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("seconds: imports "), line
    steps = dict(part.rsplit(" ", 1) for part in line[len("seconds: "):].split(", "))
    assert list(steps) == ["imports", "checks", "to the first prediction", "predictions", "files and report",
                           "shutdown", "total"], line
    seconds = {name: float(value) for name, value in steps.items()}
    assert all(value >= 0 for value in seconds.values())
    assert abs(sum(v for k, v in seconds.items() if k != "total") - seconds["total"]) < 0.1 * len(seconds)
