"""--formats: a release holds the output formats its build chose (tree, tfds, webdataset), each file
byte for byte the default build's, and verify, package, publish and evaluate work on any choice."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.beam.imagenet_p import plan as p_plan
from pipelines.release.verify import verify_release
from schemas.configs import ImageNetCConfig, ImageNetPConfig
from schemas.release import parse_checksum_lines
from scripts.cli import main

from tests.pipelines.conftest import build

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

CONFIG = ImageNetCConfig.select(["fog"], [1])
CHOICES = {"default": ("tfds", "tree"), "tree": ("tree",), "tfds": ("tfds",), "webdataset": ("webdataset",),
           "all": ("tfds", "tree", "webdataset")}
TOP = {"tree": "ImageNet-C", "tfds": "tfds", "webdataset": "webdataset"}


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("formats")
    for name, formats in CHOICES.items():
        build(root / name, config=CONFIG, workers=1, formats=formats)
    return {name: root / name for name in CHOICES}


def files_below(release: Path, top: str) -> dict[str, bytes]:
    return {str(p.relative_to(release)): p.read_bytes() for p in sorted((release / top).rglob("*")) if p.is_file()}


def listed(release: Path) -> dict:
    return parse_checksum_lines((release / "SHA256SUMS").read_text().splitlines())


@pytest.mark.parametrize("name", ["tree", "tfds", "webdataset"])
def test_a_release_holds_the_chosen_formats_byte_for_byte_and_the_same_manifests(releases, name):
    release, reference = releases[name], releases["all"]
    assert files_below(release, TOP[name]) == files_below(reference, TOP[name]) != {}
    for other in set(TOP) - {name}:
        assert not (release / TOP[other]).exists()
        assert not any(path.startswith(TOP[other] + "/") for path in listed(release))
    assert files_below(release, "manifest") == files_below(releases["default"], "manifest")
    document = json.loads((release / "release.json").read_text())
    assert document["config"]["formats"] == [name]
    assert ("class_names" in document) == (name != "tfds")  # no label file to hold them
    assert verify_release(str(release)).ok


def test_the_default_records_no_formats_and_holds_the_tree_and_the_records(releases):
    document = json.loads((releases["default"] / "release.json").read_text())
    assert "formats" not in document["config"] and "class_names" not in document
    for name in ("tree", "tfds"):
        assert files_below(releases["default"], TOP[name]) == files_below(releases["all"], TOP[name])


def test_the_card_and_croissant_name_only_what_is_there(releases):
    card = (releases["tfds"] / "README.md").read_text()
    assert "tfds.builder_from_directory" in card and "datasets.load_dataset" not in card
    assert "holds no folder tree" in card and not (releases["tfds"] / "metadata.parquet").exists()
    croissant = json.loads((releases["tfds"] / "croissant.json").read_text())
    assert not any(d["@type"] == "cr:FileSet" for d in croissant["distribution"])
    card = (releases["tree"] / "README.md").read_text()
    assert "datasets.load_dataset" in card and "tfds.builder_from_directory" not in card
    assert "webdataset.WebDataset" in (releases["webdataset"] / "README.md").read_text()


@pytest.mark.parametrize("name", ["tree", "tfds"])
def test_package_publish_and_verify_work_on_a_release_of_one_format(releases, tmp_path, name):
    release = tmp_path / name
    _copy(releases[name], release)
    assert main(["package", str(release)]) == 0
    tars = sorted(p.name for p in (release / "packages").glob("*.tar"))
    assert tars == (["clean.tar", "weather.tar"] if name == "tree" else ["tfds-clean.tar", "tfds-fog_1.tar"])
    assert main(["publish", str(release)]) == 0
    assert main(["verify", str(release)]) == 0


def test_package_refuses_a_release_of_webdataset_shards_in_one_line(releases, capsys):
    assert main(["package", str(releases["webdataset"]), "--output", "/nonexistent/packages"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_evaluate_reads_the_tfds_records_of_a_release_without_a_tree_to_the_same_bytes(releases, tmp_path,
                                                                                        lite0_onnx):
    for name in ("tree", "tfds"):
        assert main(["evaluate", "--release", str(releases[name]), "--model", str(lite0_onnx),
                     "--output", str(tmp_path / name), "--workers", "1"]) == 0
    produced = [{str(p.relative_to(tmp_path / n)): p.read_bytes() for p in (tmp_path / n).rglob("*") if p.is_file()
                 and p.name != "report.md"} for n in ("tree", "tfds")]
    assert produced[0] == produced[1] and any(k.startswith("predictions/") for k in produced[0])


@pytest.mark.parametrize("formats, message", [
    ("", "no output format chosen"),
    ("tree,tiff", "unknown output format 'tiff'; valid: tfds, tree, webdataset"),
])
def test_a_bad_choice_is_refused_in_one_line(tmp_path, capsys, formats, message):
    code = main(["build-c", "--output", str(tmp_path / "r"), "--corruptions", "fog", "--severities", "1",
                 "--workers", "1", "--formats", formats])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err
    assert not (tmp_path / "r" / "release.json").exists()


def test_a_resume_with_other_formats_is_refused_in_one_line(releases, tmp_path, capsys):
    release = tmp_path / "r"
    _copy(releases["tree"], release)
    code = main(["build-c", "--output", str(release), "--corruptions", "fog", "--severities", "1", "--workers", "1",
                 "--formats", "tfds"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "(formats tree there, tfds here)" in err and "\n" not in err


def test_webdataset_of_imagenet_p_needs_the_tree_of_mp4_files():
    with pytest.raises(ValueError, match="needs tree too"):
        p_plan(ImageNetPConfig(), formats=["webdataset"])
    with pytest.raises(ValueError, match="no output format chosen"):
        p_plan(ImageNetPConfig(), formats=[])


def _copy(source: Path, destination: Path) -> None:
    import shutil

    shutil.copytree(source, destination)
