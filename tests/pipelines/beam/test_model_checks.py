"""Every model is checked before any prediction: four bad ONNX models (10 classes, NaN logits, 32x32
input on a 224 release, a file that is not ONNX) are each refused by ``evaluate`` and ``filter-a``
with one line and exit 2, and nothing that looks like a result is written."""
import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.beam  # runs Beam pipelines: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from schemas.wnids import imagenet_wnids  # noqa: E402
from scripts.cli import main as cli  # noqa: E402

WNID = imagenet_wnids()[0]


def save_model(path, nodes, side, classes, initializers):
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                           ["N", 3, side, side])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def pooled_linear(path, side=224, classes=1000, log=False):
    """GlobalAveragePool -> Flatten [-> Log] -> MatMul: (N, 3, side, side) -> (N, classes). With
    ``log``, an image whose mean normalised colour is negative in some channel gets NaN logits."""
    weights = np.random.default_rng(classes).normal(0, 1, (3, classes)).astype(np.float32)
    nodes = [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
             helper.make_node("Flatten", ["pooled"], ["flat"])]
    if log:
        nodes.append(helper.make_node("Log", ["flat"], ["features"]))
    nodes.append(helper.make_node("MatMul", ["features" if log else "flat", "W"], ["logits"]))
    return save_model(path, nodes, side, classes, [numpy_helper.from_array(weights, "W")])


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    not_onnx = root / "notes.onnx"
    not_onnx.write_text("these are my notes, not a model\n")
    return {
        "ten_classes": (pooled_linear(root / "ten.onnx", classes=10), "gives 10 logits per image"),
        "nan_logits": (pooled_linear(root / "nan.onnx", log=True), "NaN or infinite logits for 2 "),
        "input_32": (pooled_linear(root / "small.onnx", side=32), "takes 32x32 images"),
        "not_onnx": (not_onnx, "does not load as onnx: it is a text file of"),
    }


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A 224 ImageNet-C tree of four images: the first two (in key order) bright, the last two dark."""
    root = tmp_path_factory.mktemp("release")
    folder = root / "ImageNet-C" / "fog" / "1" / WNID
    folder.mkdir(parents=True)
    for i, level in enumerate((220, 200, 20, 10)):
        Image.fromarray(np.full((224, 224, 3), level, np.uint8)).save(folder / f"img_{i}.JPEG", quality=85)
    return root


@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    """filter-a candidates: two dark photographs weakly labelled as the first class."""
    root = tmp_path_factory.mktemp("candidates")
    (root / WNID).mkdir()
    for i in range(2):
        Image.fromarray(np.full((300, 260, 3), 10 + i, np.uint8)).save(root / WNID / f"c{i}.jpg", quality=90)
    return root


def refusal(capsys, command: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(f"imagenet-cp {command}:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def written_files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("case", ["ten_classes", "nan_logits", "input_32", "not_onnx"])
def test_evaluate_refuses_a_bad_model_with_one_line(case, bad_models, release, tmp_path, capsys):
    model, expected = bad_models[case]
    out = tmp_path / "out"
    code = cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                "--workers", "1", "--batch-size", "2"])
    line = refusal(capsys, "evaluate")
    assert code == 2 and expected in line, line
    assert written_files(out) == []


def test_nan_logits_found_after_the_trial_batch_name_the_first_keys(bad_models, release, tmp_path, capsys):
    """The trial batch (the two bright images) passes; the dark ones are counted in the run."""
    model, _ = bad_models["nan_logits"]
    code = cli(["evaluate", "--release", str(release), "--model", str(model), "--output", str(tmp_path / "out"),
                "--workers", "1", "--batch-size", "2"])
    line = refusal(capsys, "evaluate")
    assert code == 2 and f"(first: fog_1/{WNID}/img_2.JPEG, fog_1/{WNID}/img_3.JPEG)" in line, line
    assert not (tmp_path / "out").exists()  # nor the predictions committed before the refusal, nor the folder


@pytest.mark.parametrize("case", ["ten_classes", "nan_logits", "input_32", "not_onnx"])
def test_filter_a_refuses_a_bad_model_with_one_line(case, bad_models, candidates, tmp_path, capsys):
    model, expected = bad_models[case]
    if case == "nan_logits":  # both candidates are dark: the trial on the first one's ten crops refuses it
        expected = "NaN or infinite logits for 10 of 10 trial images"
    out = tmp_path / "out"
    code = cli(["filter-a", "--candidates", str(candidates), "--model", str(model), "--output", str(out),
                "--workers", "1"])
    line = refusal(capsys, "filter-a")
    assert code == 2 and expected in line, line
    assert written_files(out) == []
