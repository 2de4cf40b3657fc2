"""evaluate on a VCR release: a tiny ONNX model and human files made here; a corrupted human file fails clearly."""
import contextlib
import io
import json

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from metrics.vcr import compare_curves, performance_curve  # noqa: E402
from pipelines.evaluation.model_input import model_input  # noqa: E402
from pipelines.beam.inference import Model  # noqa: E402
from pipelines.beam.runner import RunOptions  # noqa: E402
from pipelines.formats.manifests import read_manifests  # noqa: E402
from pipelines.beam.vcr_evaluate import evaluate_vcr  # noqa: E402
from pipelines.evaluation.vcr_scores import REFUSED, analyse, analysis_settings, read_vcr_manifest  # noqa: E402
from pipelines.evaluation.vcr_human import HumanFile, HumanFileError, load_human  # noqa: E402
import transforms  # noqa: E402
from pipelines.install.sample import sample_arrays  # noqa: E402
from schemas.wnids import wnid_to_label  # noqa: E402
from scripts.cli import main  # noqa: E402


def read_manifest(root: str) -> list:
    """Every manifest record of a release as its JSON object, sorted by key."""
    return [record.to_json() for record in read_manifests(root)]


def _features(array) -> np.ndarray:
    """Mean and max of each normalised channel: what the ONNX model below pools."""
    x = model_input(array)
    return np.concatenate([x.mean(axis=(1, 2)), x.max(axis=(1, 2))])


def _nearest_centroid():
    """(W, b): logits = features @ W + b = -|features - centroid|^2 + const for the sample's classes."""
    features: dict = {}
    for wnid, image in sample_arrays():
        features.setdefault(wnid_to_label()[wnid], []).append(_features(transforms.preprocess(image)))
    w, b = np.zeros((6, 1000)), np.full(1000, -1e4)
    for label, rows in features.items():
        centroid = np.mean(rows, axis=0)
        w[:, label], b[label] = 2 * centroid, -centroid @ centroid
    return w.astype(np.float32), b.astype(np.float32)


W, B = _nearest_centroid()
META = {"label_space": "imagenet1000", "vif_variant": "vcr-steerable-v1", "dv_resolution": "224crop",
        "source": "made in the test", "licence": "CC0"}


def write_onnx_model(path):
    """Nearest class centroid on pooled colour statistics: right on clean crops, less so when corrupted."""
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["input"], ["mean"]),
         helper.make_node("GlobalMaxPool", ["input"], ["max"]),
         helper.make_node("Concat", ["mean", "max"], ["pooled"], axis=1),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["scores"]),
         helper.make_node("Add", ["scores", "B"], ["logits"])],
        "centroids", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        initializer=[numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def top1(path) -> int:
    return int(np.argmax(_features(np.asarray(Image.open(path))) @ W + B))


def write_trials(path, corruptions, seed=0):
    rs = np.random.RandomState(seed)
    lines = ["corruption,vd_score,label,transf_pred,orig_pred,participant"]
    for corruption in corruptions:
        for i in range(600):
            v = rs.uniform()
            ok, cons = rs.uniform() < 0.95 - 0.5 * v * v, rs.uniform() < 0.97 - 0.3 * v
            answer = 7 if ok else 8
            lines.append(f"{corruption},{v!r},7,{answer},{answer if cons else 9},p{i % 13}")
    path.write_text("\n".join(lines) + "\n")
    (path.parent / (path.name + ".json")).write_text(json.dumps(META))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("vcr_eval")
    release = root / "release"
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert main(["build-vcr", "--output", str(release), "--corruptions", "contrast,gaussian_blur", "--levels", "4",
                     "--per-bin", "2", "--seed", "1", "--workers", "1"]) == 0
    # the sample's 8 x 4 draws cannot fill 2 per bin everywhere: the short bins are listed, one line each
    assert "warning: contrast: " in stderr.getvalue() and "hold fewer than --per-bin 2" in stderr.getvalue()
    model = root / "tiny.onnx"
    write_onnx_model(model)
    human = write_trials(root / "humans.csv", ["contrast", "gaussian_blur"])
    return root, release, model, human


def test_evaluate_with_human_trials(setup):
    root, release, model, human = setup
    # Contrast's range (factor <= 0.3) leaves delta_v < 0.3 empty: with VCR's empty bin = 0 its curve
    # is 0 from the start, so this run uses the logged deviations (the defaults run below).
    settings = analysis_settings(empty_bin="drop", knots="centre")
    out = evaluate_vcr(str(release), Model(str(model), batch_size=8), str(root / "with_human"), settings=settings,
                       human_file=HumanFile(path=str(human)), run=RunOptions(workers=1))
    metrics = json.loads((out / "metrics.json").read_text())
    rows = read_manifest(str(release))
    predicted = {r["key"]: top1(release / r["path"]) for r in rows}
    clean = {r["image_key"]: predicted[r["key"]] for r in rows if r["corruption"] == "clean"}
    trials = load_human(str(human), "224crop", settings)
    for corruption in ("contrast", "gaussian_blur"):
        examples = [r for r in rows if r["corruption"] == corruption]
        dv = np.asarray([r["delta_v"] for r in examples])
        correct = np.asarray([predicted[r["key"]] == r["label"] for r in examples])
        consistent = np.asarray([predicted[r["key"]] == clean[r["image_key"]] for r in examples])
        for prop, outcome in (("accuracy", correct), ("consistency", consistent)):
            expected = compare_curves(performance_curve(dv, outcome, **settings)["curve"],
                                      trials.curves[corruption][prop])
            got = metrics["corruptions"][corruption][prop]
            for name in ("A_m", "A_h", "A_m-h", "A_h-m", "HMRI", "MRSI"):
                assert got[name] == pytest.approx(expected[name], abs=1e-12), (corruption, prop, name)
            assert 0 <= got["HMRI"] <= 1
            assert got["MRSI"] is None if got["A_m"] == 0 else 0 <= got["MRSI"] <= 1  # A_m-h / A_m
    assert metrics["clean_accuracy"] == 1.0  # nearest centroid on the clean crops themselves
    assert 0 < metrics["corruptions"]["gaussian_blur"]["accuracy"]["MRSI"] < 1
    assert metrics["human_relative"] == "computed" and metrics["formulas"]["HMRI"].startswith("(A_h - A_h-m)")
    assert metrics["settings"]["deviations"] == ["empty_bin=drop", "knots=centre"]
    for name in ("vcr_contrast.png", "vcr_gaussian_blur.png", "vcr_accuracy_overview.png"):
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "HMRI" in report and "plots/vcr_contrast.png" in report
    lines = (out / "predictions" / "vcr" / "contrast.jsonl").read_text().splitlines()
    assert [json.loads(line)["top5"][0] for line in lines] == [
        predicted[r["key"]] for r in rows if r["corruption"] == "contrast"]


def test_without_human_file_hmri_is_refused(setup, capsys):
    root, release, model, _ = setup
    out = root / "no_human"
    assert main(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                 "--workers", "1"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["human"] is None and metrics["human_relative"] == REFUSED
    for corruption in ("contrast", "gaussian_blur"):
        for prop in ("accuracy", "consistency"):
            entry = metrics["corruptions"][corruption][prop]
            assert "A_m" in entry and "HMRI" not in entry and "MRSI" not in entry
    assert metrics["settings"]["deviations"] == []
    contrast = metrics["corruptions"]["contrast"]["accuracy"]
    assert contrast["bins"]["counts"][:6] == [0] * 6 and contrast["A_m"] < 0.01  # VCR's empty bins = 0 (see above)


def test_curves_json_human_file(setup):
    root, release, _, _ = setup
    path = root / "curves.json"
    path.write_text(json.dumps({"meta": META,
                                "contrast": {"accuracy": {"v": [0, 0.5, 1], "y": [0.9, 0.8, 0.2]}, "consistency": None},
                                "gaussian_blur": {"accuracy": {"tck": {"t": [0, 0, 0, 0, 1, 1, 1, 1],
                                                                       "c": [0.9, 0.9, 0.5, 0.3], "k": 3}}}}))
    human = load_human(str(path), "224crop", analysis_settings())
    rows = read_vcr_manifest(str(release))
    predictions = {r.key: 0 for r in rows}
    section, curves = analyse(rows, predictions, analysis_settings(), human)
    assert curves["contrast/accuracy/human"][0] == 0.9 and "HMRI" in section["contrast"]["accuracy"]
    assert "HMRI" not in section["contrast"]["consistency"]
    assert "no consistency curve" in section["contrast"]["consistency"]["human_relative"]


@pytest.mark.parametrize("case,text,sidecar,message", [
    ("missing-column", "corruption,vd_score,label\ncontrast,0.3,1\n", META, "lacks column(s) transf_pred"),
    ("bad-number", "corruption,vd_score,label,transf_pred\ncontrast,abc,1,1\n", META, "line 2: vd_score"),
    ("unknown-corruption", "corruption,vd_score,label,transf_pred\nfog,0.3,1,1\n", META, "unknown corruption 'fog'"),
    ("other-vif", "corruption,vd_score,label,transf_pred\ncontrast,0.3,1,1\n", {**META, "vif_variant": "vifp"},
     "vif_variant is 'vifp'"),
    ("16-class", "corruption,vd_score,label,transf_pred\ncontrast,0.3,1,1\n", {**META, "label_space": "imagenet16"},
     "does not match the model's 'imagenet1000'"),
    ("y-out-of-range", None, None, "y must lie in [0, 1]"),
    ("truncated-json", None, None, "not valid JSON"),
    ("bad-tck", None, None, "tck.k must be an integer degree 1..5"),
    ("no-sidecar", "corruption,vd_score,label,transf_pred\ncontrast,0.3,1,1\n", None, "metadata file"),
])
def test_corrupted_human_file_is_a_clear_error(setup, tmp_path, capsys, case, text, sidecar, message):
    _, release, model, _ = setup
    if case == "y-out-of-range":
        path = tmp_path / "h.json"
        path.write_text(json.dumps({"meta": META, "contrast": {"accuracy": {"v": [0, 1], "y": [1.2, 0.1]}}}))
    elif case == "truncated-json":
        path = tmp_path / "h.json"
        path.write_text(json.dumps({"meta": META, "contrast": {"accuracy": {"v": [0, 1], "y": [1, 0.1]}}})[:-9])
    elif case == "bad-tck":
        path = tmp_path / "h.json"
        path.write_text(json.dumps({"meta": META, "contrast": {"accuracy": {"tck": {"t": [0] * 8, "c": [1] * 4, "k": 7}}}}))
    else:
        path = tmp_path / "h.csv"
        path.write_text(text)
        if sidecar is not None:
            (tmp_path / "h.csv.json").write_text(json.dumps(sidecar))
    with pytest.raises(HumanFileError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_human(str(path), "224crop", analysis_settings())
    out = tmp_path / "out"
    assert main(["evaluate", "--release", str(release), "--model", str(model), "--output", str(out),
                 "--human", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (out / "metrics.json").exists()


def test_human_option_on_another_release_is_refused(setup, tmp_path, capsys):
    _, _, model, human = setup
    assert main(["evaluate", "--release", str(tmp_path), "--model", str(model), "--human", str(human)]) == 2
    assert "--human applies to VCR releases only" in capsys.readouterr().err


def test_native_release_feeds_the_model_resize_and_crop(setup, tmp_path):
    _, _, model, human = setup
    release = tmp_path / "native"
    assert main(["build-vcr", "--output", str(release), "--corruptions", "gaussian_blur", "--levels", "1",
                 "--dv-resolution", "native", "--workers", "1"]) == 0
    out = evaluate_vcr(str(release), Model(str(model), batch_size=8), str(tmp_path / "eval"), run=RunOptions(workers=1))
    rows = {r["key"]: r for r in read_manifest(str(release))}
    for line in (out / "predictions" / "vcr" / "gaussian_blur.jsonl").read_text().splitlines():
        row = json.loads(line)
        image = transforms.preprocess((release / rows[row["key"]]["path"]).read_bytes())
        assert row["top5"][0] == int(np.argmax(_features(image) @ W + B))
    with pytest.raises(HumanFileError, match="does not match the release's 'native'"):
        load_human(str(human), "native", analysis_settings())
