"""``imagenet-cp metrics`` on malformed inputs: one clear line on stderr, exit 2, never invalid JSON."""
import json

import numpy as np
import pytest

from pipelines.evaluation.metrics_files import write_flips
from schemas.baselines import ALEXNET_IMAGENET_C
from schemas.imagenet_p import TEST_PERTURBATIONS
from scripts.cli import main

ALEXNET = {c: list(e) for c, e in ALEXNET_IMAGENET_C.corruptions.items()}


def run(capsys, *argv):
    code = main(["metrics", *argv])
    captured = capsys.readouterr()
    if code == 0:
        json.loads(captured.out, parse_constant=lambda name: pytest.fail(f"{name} in the output"))
    return code, captured.out, captured.err


def errors_file(tmp_path, name, corruptions=None, clean=0.2, text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps({"clean": clean, "corruptions": corruptions}))
    return str(path)


@pytest.mark.parametrize("value,reason", [
    (True, "must map to a list of 5 numbers in [0, 1]"),
    ("0.5", "must map to a list of 5 numbers in [0, 1]"),
    (1.5, "must map to a list of 5 numbers in [0, 1]"),
    (None, "must map to a list of 5 numbers in [0, 1]"),
])
def test_malformed_error_values(tmp_path, capsys, value, reason):
    corruptions = dict(ALEXNET, fog=[value] + ALEXNET["fog"][1:])
    code, out, err = run(capsys, "--errors", errors_file(tmp_path, "e.json", corruptions))
    assert code == 2 and out == "" and reason in err and "'fog'" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinities_are_refused(tmp_path, capsys, literal):
    text = json.dumps({"clean": 0.2, "corruptions": ALEXNET}).replace(str(ALEXNET["fog"][0]), literal, 1)
    code, _, err = run(capsys, "--errors", errors_file(tmp_path, "e.json", text=text))
    assert code == 2 and f"{literal.lstrip('-')} is not a number JSON allows" in err


@pytest.mark.parametrize("clean", [True, "x", -0.1, 2])
def test_malformed_clean_error(tmp_path, capsys, clean):
    code, _, err = run(capsys, "--errors", errors_file(tmp_path, "e.json", ALEXNET, clean=clean))
    assert code == 2 and '"clean" must be a number in [0, 1] or null' in err


def test_zero_and_missing_baseline_entries(tmp_path, capsys):
    model = errors_file(tmp_path, "model.json", ALEXNET)
    zero = errors_file(tmp_path, "zero.json", dict(ALEXNET, fog=[0.0] * 5), clean=0.0)
    code, out, err = run(capsys, "--errors", model, "--baseline", zero)
    assert code == 2 and out == "" and "errors above 0" in err and "fog" in err
    partial = errors_file(tmp_path, "partial.json", {c: e for c, e in ALEXNET.items() if c != "fog"})
    code, _, err = run(capsys, "--errors", model, "--baseline", partial)
    assert code == 2 and "baseline partial has no errors for fog" in err and "KeyError" not in err
    flat = errors_file(tmp_path, "flat.json", dict(ALEXNET, fog=[0.3] * 5), clean=0.3)
    code, _, err = run(capsys, "--errors", model, "--baseline", flat)
    assert code == 2 and "Relative CE divides" in err


def test_unreadable_and_empty_inputs(tmp_path, capsys):
    for argv, reason in [
        (["--errors", str(tmp_path / "missing.json")], "cannot read: no such file or directory"),
        (["--errors", errors_file(tmp_path, "bad.json", text="{not json")], "not valid JSON"),
        (["--errors", errors_file(tmp_path, "empty.json", {})], '"corruptions" is empty'),
        (["--errors", errors_file(tmp_path, "list.json", text="[1, 2]")], "expected {"),
        (["--flips", errors_file(tmp_path, "flips.npz", text="not a zip")], "not a readable .npz archive"),
        (["--flips", str(tmp_path / "missing.npz")], "cannot read"),
        (["--imagenet-a", errors_file(tmp_path, "a.npz", text="PK\x03\x04 broken")], "not a readable .npz"),
    ]:
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and reason in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "Errno" not in err
    np.savez(tmp_path / "none.npz")
    code, _, err = run(capsys, "--flips", str(tmp_path / "none.npz"))
    assert code == 2 and "holds no prediction arrays" in err


def test_zero_videos_and_bad_flip_baselines(tmp_path, capsys):
    write_flips(tmp_path / "empty.npz", {p: np.zeros((0, 31, 5), np.int64) for p in TEST_PERTURBATIONS})
    code, _, err = run(capsys, "--flips", str(tmp_path / "empty.npz"))
    assert code == 2 and "holds no video" in err
    write_flips(tmp_path / "floats.npz", {"rotate": np.zeros((2, 31), np.float32)})
    code, _, err = run(capsys, "--flips", str(tmp_path / "floats.npz"))
    assert code == 2 and "must be integer classes" in err
    frames = np.arange(31)[None, :, None] + np.arange(5)
    write_flips(tmp_path / "model.npz", {p: np.repeat(frames, 2, axis=0) for p in TEST_PERTURBATIONS})
    for values, reason in [({"flip_probability": 0, "top5_distance": 1}, "must be a number above 0"),
                           ({"flip_probability": True, "top5_distance": 1}, "must be a number above 0")]:
        baseline = tmp_path / "base.json"
        baseline.write_text(json.dumps({p: values for p in TEST_PERTURBATIONS}))
        code, _, err = run(capsys, "--flips", str(tmp_path / "model.npz"), "--flip-baseline", str(baseline))
        assert code == 2 and reason in err
    still = np.zeros((2, 31, 5), np.int64)  # a baseline model that never flips: FR would divide by 0
    write_flips(tmp_path / "still.npz", {p: still for p in TEST_PERTURBATIONS})
    code, out, err = run(capsys, "--flips", str(tmp_path / "model.npz"), "--flip-baseline", str(tmp_path / "still.npz"))
    assert code == 2 and out == "" and "positive" in err


def test_nan_logits_are_refused(tmp_path, capsys):
    logits = np.zeros((2, 1000))
    logits[0, 0] = np.nan
    np.savez(tmp_path / "a.npz", logits=logits, labels=np.array([1, 2]))
    code, _, err = run(capsys, "--imagenet-a", str(tmp_path / "a.npz"))
    assert code == 2 and "NaN or infinite" in err


@pytest.mark.parametrize("text", [
    '{"clean": 0.9, "clean": 0.2, "corruptions": CORRUPTIONS}',
    '{"clean": 0.2, "corruptions": {"fog": [0.1, 0.2, 0.3, 0.4, 0.5], "fog": [0.5, 0.5, 0.5, 0.5, 0.5]}}',
])
def test_duplicate_keys_are_refused(tmp_path, capsys, text):
    path = errors_file(tmp_path, "e.json", text=text.replace("CORRUPTIONS", json.dumps(ALEXNET)))
    code, out, err = run(capsys, "--errors", path)
    assert code == 2 and out == "" and "appears twice in one object" in err and path in err, err
    assert len(err.strip().splitlines()) == 1
    baseline = errors_file(tmp_path, "model.json", ALEXNET)
    code, out, err = run(capsys, "--errors", baseline, "--baseline", path)
    assert code == 2 and out == "" and "appears twice" in err and path in err


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_npz_with_an_array_twice_is_refused(tmp_path, capsys):
    import io
    import zipfile

    path = tmp_path / "flips.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for value in (0, 1):
            buffer = io.BytesIO()
            np.save(buffer, np.full((2, 10, 5), value, dtype=np.int64))
            archive.writestr("rotate.npy", buffer.getvalue())
    code, out, err = run(capsys, "--flips", str(path))
    assert code == 2 and out == "" and "'rotate.npy' appears twice" in err and str(path) in err, err
    assert len(err.strip().splitlines()) == 1
