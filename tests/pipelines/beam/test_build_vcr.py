"""build-vcr end to end on the bundled sample: Delta v of the saved PNGs, 1 vs 2 workers, TFDS, verify, package."""
import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipelines.release.package import package_release
from schemas.configs import VcrConfig
from pipelines.beam.runner import RunOptions
from pipelines.beam.vcr import _select, build_vcr, short_bins
from pipelines.formats.manifests import read_manifests
from pipelines.release.verify import verify_release
from schemas.vcr import CLEAN
from transforms.vif import delta_v, vif

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

CONFIG = VcrConfig.select(["contrast", "gaussian_blur"], levels=3, seed=5, per_bin=1)


def read_manifest(root: str) -> list:
    """Every manifest record of a release as its JSON object, sorted by key."""
    return [record.to_json() for record in read_manifests(root)]


def _build(path, workers):
    return build_vcr(str(path), run=RunOptions(workers=workers, progress_interval=3600), config=CONFIG)


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("vcr")
    return (root / "one", _build(root / "one", 1)), (root / "two", _build(root / "two", 2))


def _files(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_one_and_two_workers_are_byte_identical(releases):
    (one, result), (two, _) = releases
    assert result.failures == 0
    assert _files(one) == _files(two)


def test_manifest_rows_and_delta_v_of_the_saved_pngs(releases):
    (root, result), _ = releases
    rows = read_manifest(str(root))
    examples = [r for r in rows if r["corruption"] != CLEAN]
    clean = {r["image_key"]: r for r in rows if r["corruption"] == CLEAN}
    assert len(clean) == 8 and result.release.counts.outputs == len(rows)
    # per_bin 1: at most one example per (corruption, bin), chosen among the 8 x 3 draws
    assert len({(r["corruption"], r["bin"]) for r in examples}) == len(examples)
    assert 0 < len(examples) <= 2 * 20
    for row in examples:
        assert {"key", "path", "clean_path", "corruption", "parameters", "seed", "vif", "delta_v", "label"} <= set(row)
        assert set(row["parameters"]) == ({"factor"} if row["corruption"] == "contrast" else {"sigma"})
        distorted = np.asarray(Image.open(root / row["path"]))
        reference = np.asarray(Image.open(root / row["clean_path"]))
        assert row["clean_path"] == clean[row["image_key"]]["path"]
        assert vif(reference, distorted) == row["vif"]
        assert delta_v(reference, distorted) == row["delta_v"]
    assert json.loads((root / "release.json").read_text())["config"]["vif_variant"] == "vcr-steerable-v1"


def test_selection_ignores_order():
    rng = random.Random(0)
    candidates = [{"key": f"c/{i}", "rank": f"{rng.getrandbits(64):016x}", "image_key": f"k{i}"} for i in range(30)]
    picked = list(_select((("contrast", 3), candidates), 4))
    for _ in range(5):
        rng.shuffle(candidates)
        assert list(_select((("contrast", 3), list(candidates)), 4)) == picked
    assert len(picked) == 4 and all(c["bin"] == 3 for _, c in picked)


def test_verify_package_and_short_bins(releases, tmp_path):
    (root, _), _ = releases
    assert verify_release(str(root)).ok
    tars = package_release(str(root), str(tmp_path / "packages"))
    assert sorted(Path(t).name for t in tars) == ["clean.tar", "contrast.tar", "gaussian_blur.tar"]
    short = short_bins(str(root), CONFIG)
    counts = {c: 20 - len(b) for c, b in short.items()}
    rows = [r for r in read_manifest(str(root)) if r["corruption"] != CLEAN]
    assert sum(counts.values()) == len(rows)


def test_tfds_reads_the_records(releases):
    tfds = pytest.importorskip("tensorflow_datasets")
    (root, _), _ = releases
    rows = {r["key"]: r for r in read_manifest(str(root))}
    builder = tfds.builder_from_directory(str(root / "tfds" / "vcr" / "contrast" / "1.0.0"))
    seen = 0
    for example in tfds.as_numpy(builder.as_dataset(split="validation")):
        row = rows[example["file_name"].decode()]
        np.testing.assert_array_equal(example["image"], np.asarray(Image.open(root / row["path"])))
        assert example["label"] == row["label"]
        assert example["delta_v"] == np.float32(row["delta_v"])
        seen += 1
    assert seen == sum(1 for r in rows.values() if r["corruption"] == "contrast")


@pytest.mark.parametrize("options,message", [
    (["--corruptions", "motion_blur", "--operators", "vcr-code"], "no vcr-code operator for motion_blur"),
    (["--levels", "0"], "levels must be an int >= 1"),
    (["--corruptions", "fog"], "fog"),
    (["--parameters", "index"], "parameters must be one of grid, uniform"),
])
def test_bad_options_are_one_line(tmp_path, capsys, options, message):
    from scripts.cli import main

    assert main(["build-vcr", "--output", str(tmp_path / "out"), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_native_resolution(tmp_path):
    """VCR's own convention: corrupt and measure the image at its native size."""
    config = VcrConfig.select(["gaussian_blur"], levels=1, seed=2, dv_resolution="native")
    result = build_vcr(str(tmp_path / "native"), run=RunOptions(workers=1, progress_interval=3600), config=config)
    root = tmp_path / "native"
    assert result.failures == 0 and result.release.config.dv_resolution == "native"
    sizes = set()
    for row in (r for r in read_manifest(str(root)) if r["corruption"] != CLEAN):
        distorted = np.asarray(Image.open(root / row["path"]))
        reference = np.asarray(Image.open(root / row["clean_path"]))
        assert distorted.shape == reference.shape
        sizes.add(distorted.shape)
        assert delta_v(reference, distorted) == row["delta_v"]
    assert len(sizes) > 1 and (224, 224, 3) not in sizes
    features = json.loads((root / "tfds/vcr/gaussian_blur/1.0.0/features.json").read_text())
    assert features["featuresDict"]["features"]["image"]["image"]["shape"]["dimensions"] == ["-1", "-1", "3"]


def test_an_image_that_does_not_decode_is_a_failure_row_and_the_others_are_built(tmp_path, capsys):
    """A truncated JPEG among good ones: one row of failures.jsonl (the measure stage's), the
    release of the others sealed, exit status 1 as for every build that lists failures."""
    from scripts.cli import main

    folder = tmp_path / "in" / "n01440764"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    for number in (1, 2):
        pixels = (rng.random((260, 300, 3)) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"ILSVRC2012_val_{number:08d}.JPEG", quality=90)
    whole = (folder / "ILSVRC2012_val_00000001.JPEG").read_bytes()
    (folder / "ILSVRC2012_val_00000009.JPEG").write_bytes(whole[:len(whole) // 2])
    output = tmp_path / "out"
    assert main(["build-vcr", "--input", str(tmp_path / "in"), "--output", str(output), "--corruptions",
                 "gaussian_noise", "--levels", "2", "--workers", "1"]) == 1
    failures = [json.loads(line) for line in (output / "failures.jsonl").read_text().splitlines()]
    assert [(f["key"], f["stage"]) for f in failures] == [("n01440764/ILSVRC2012_val_00000009.JPEG", "decode")]
    assert "truncated" in failures[0]["reason"]
    rows = read_manifest(str(output))
    assert {r["image_key"] for r in rows} == {f"n01440764/ILSVRC2012_val_0000000{n}.JPEG" for n in (1, 2)}
    assert (output / "release.json").exists() and verify_release(str(output)).ok
    assert "Traceback" not in capsys.readouterr().err
