"""imagenet-cp publish: the dataset card and croissant.json of C (224, CIFAR), P and VCR releases
load with the real clients (Hugging Face ``datasets``, ``mlcroissant``), the card's YAML parses and
holds the BibTeX, and the published release still verifies."""
import hashlib
import json
import logging
import shutil
import subprocess

import pytest
import yaml

from pipelines.release.publish import DIGEST_LABEL, publish_release
from pipelines.release.verify import verify_release
from schemas.class_names import class_name
from schemas.publication import CIFAR10_LABELS, HF_DIR, PUBLISHED_NAMES
from schemas.release import CHECKSUMS
from scripts.cli import main as cli

datasets = pytest.importorskip("datasets", reason="the test extra installs Hugging Face datasets")
mlc = pytest.importorskip("mlcroissant", reason="the test extra installs mlcroissant")

pytestmark = pytest.mark.beam  # builds releases

SMALL = {
    "c224": ["build-c", "--limit", "3", "--corruptions", "contrast", "--severities", "1"],
    "cifar": ["build-c", "--edition", "cifar", "--limit", "3", "--corruptions", "contrast", "--severities", "1"],
    "p": ["build-p", "--limit", "1", "--perturbations", "brightness", "--preset", "ultrafast"],
    "vcr": ["build-vcr", "--limit", "2", "--corruptions", "gaussian_noise", "--levels", "2"],
}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """``kind -> release folder``: the smallest build of each kind (which writes the card, the Croissant
    file and the index), then ``imagenet-cp publish`` on it, which writes the same bytes again."""
    made = {}

    def get(kind):
        if kind not in made:
            output = tmp_path_factory.mktemp(kind) / "release"
            assert cli(SMALL[kind] + ["--output", str(output), "--workers", "1"]) == 0
            built = _top_files(output)
            assert {CHECKSUMS, "README.md", "croissant.json"} <= set(built)
            assert cli(["publish", str(output)]) == 0
            assert _top_files(output) == built
            made[kind] = output
        return made[kind]

    return get


def _top_files(release):
    return {p.name: p.read_bytes() for p in release.iterdir() if p.is_file() and not p.name.startswith(".")}


def _front_matter(release):
    text = (release / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1]), text


def _records(release, record_set):
    logging.getLogger("absl").setLevel(logging.ERROR)
    dataset = mlc.Dataset(str(release / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors
    return list(dataset.records(record_set))


def _manifest(release, config):
    return [json.loads(line) for line in (release / "manifest" / f"{config}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("kind", ["c224", "cifar"])
def test_hugging_face_datasets_loads_a_c_config_with_the_label_names(published, kind, tmp_path):
    release = published(kind)
    matter, _ = _front_matter(release)
    split = "test" if kind == "cifar" else "validation"
    assert [c["config_name"] for c in matter["configs"]] == ["clean", "contrast_1"]
    ds = datasets.load_dataset(str(release), "contrast_1", split=split, cache_dir=str(tmp_path / "cache"))
    rows = _manifest(release, "contrast_1")
    assert [r["key"] for r in rows] == ds["key"]
    assert [r["label"] for r in rows] == ds["label"]
    names = ds.features["label"].names
    if kind == "cifar":
        assert tuple(names) == CIFAR10_LABELS
        assert [names[r["label"]] for r in rows] == [r["wnid"] for r in rows]  # CIFAR's class names
        assert ds[0]["image"].size == (32, 32)
    else:
        assert len(names) == 1000 and names[0] == "tench"
        assert [names[r["label"]] for r in rows] == [class_name(r["wnid"]) for r in rows]
        assert hashlib.sha256((release / rows[0]["path"]).read_bytes()).hexdigest() == rows[0]["sha256"]
        assert ds[0]["image"].size == (224, 224)
    assert set(ds["corruption"]) == {"contrast"} and set(ds["severity"]) == {1}


@pytest.mark.parametrize("kind", ["c224", "cifar", "p", "vcr"])
def test_mlcroissant_validates_and_reads_the_records(published, kind):
    release = published(kind)
    config = {"c224": "contrast_1", "cifar": "contrast_1", "p": "brightness", "vcr": "gaussian_noise"}[kind]
    records = _records(release, config)
    rows = _manifest(release, config)
    assert sorted(r[f"{config}/key"].decode() for r in records) == [r["key"] for r in rows]
    by_key = {r["key"]: r for r in rows}
    for record in records:
        row = by_key[record[f"{config}/key"].decode()]
        assert record[f"{config}/label"] == row["label"]
        if kind == "p":
            assert record[f"{config}/frames"] == row["frames"] and record[f"{config}/path"].decode() == row["path"]
        else:
            assert record[f"{config}/image"].size[0] == (32 if kind == "cifar" else 224)
    document = json.loads((release / "croissant.json").read_text())
    listed = {f["contentUrl"]: f["sha256"] for f in document["distribution"] if "contentUrl" in f}
    for path, digest in listed.items():
        assert hashlib.sha256((release / path).read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("kind", ["c224", "cifar", "p", "vcr"])
def test_the_card_parses_holds_the_bibtex_and_the_release_still_verifies(published, kind):
    release = published(kind)
    matter, text = _front_matter(release)
    assert "@inproceedings{hendrycks2019robustness" in matter["citation_bibtex"]
    assert matter["citation_bibtex"] in text.split("```bibtex\n", 1)[1]
    if kind == "vcr":
        assert "@article{shen2024vcr" in matter["citation_bibtex"]
    assert matter["license"] and matter["task_categories"] and matter["size_categories"] == ["n<1K"]
    assert "sha256sum SHA256SUMS" in text and "imagenet-cp build-" in text
    assert verify_release(str(release)).ok
    listed = (release / CHECKSUMS).read_text()
    assert "  README.md\n" in listed and "  croissant.json\n" in listed


def test_publish_is_deterministic_and_prints_the_release_digest(published, tmp_path, capsys):
    release = tmp_path / "again"
    shutil.copytree(published("c224"), release)
    before = {p.name: p.read_bytes() for p in release.iterdir() if p.is_file()}
    capsys.readouterr()
    assert cli(["publish", str(release)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert {p.name: p.read_bytes() for p in release.iterdir() if p.is_file()} == before
    expected = subprocess.run(["sha256sum", CHECKSUMS], cwd=release, capture_output=True, text=True).stdout.split()[0]
    assert line == f"{DIGEST_LABEL}: {expected}"


def test_publish_refuses_a_release_that_fails_verify(published, tmp_path, capsys):
    release = tmp_path / "broken"
    shutil.copytree(published("c224"), release)
    (release / "sources.jsonl").write_text("tampered\n")
    capsys.readouterr()
    assert cli(["publish", str(release)]) == 2
    assert "fails verification, not published" in capsys.readouterr().err
    with pytest.raises(ValueError):
        publish_release(str(release))


def _relist(release, path):
    digest = hashlib.sha256((release / path).read_bytes()).hexdigest()
    lines = (release / CHECKSUMS).read_text().splitlines()
    (release / CHECKSUMS).write_text("".join(
        (f"{digest}  {path}" if line.endswith("  " + path) else line) + "\n" for line in lines))


@pytest.mark.parametrize("kind, index", [("c224", "metadata.parquet"), ("cifar", "hf/contrast_1.parquet")])
def test_verify_reads_the_hugging_face_index_against_the_manifests(published, tmp_path, kind, index):
    """An index rewritten with its SHA256SUMS line (another label; for CIFAR another image too) fails verify."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    release = tmp_path / kind
    shutil.copytree(published(kind), release)
    table = pq.read_table(release / index)
    rows = table.to_pylist()
    rows[0]["label"] = (rows[0]["label"] + 1) % 10
    if kind == "cifar":
        rows[0]["image"] = rows[-1]["image"]
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), release / index)
    _relist(release, index)
    text = verify_release(str(release)).text()
    assert f"{index}: row 1 of" in text
    if kind == "cifar":
        assert f"{index}: the image of {rows[0]['key']} differs from the manifest's array_sha256" in text


def test_a_forced_rebuild_replaces_the_published_files(published, tmp_path):
    """README.md, croissant.json and the index belong to the release: --force replaces them with the new build's."""
    release = tmp_path / "rebuilt"
    shutil.copytree(published("c224"), release)
    assert "contrast_1" in (release / "README.md").read_text()
    assert cli(["build-c", "--output", str(release), "--limit", "2", "--corruptions", "contrast", "--severities", "2",
                "--workers", "1", "--force"]) == 0
    card = (release / "README.md").read_text()
    assert "contrast_2" in card and "contrast_1" not in card
    assert "contrast_1" not in (release / "croissant.json").read_text()
    assert all((release / name).exists() for name in PUBLISHED_NAMES if name != HF_DIR)
    assert verify_release(str(release)).ok


def test_the_card_of_an_unknown_edition_or_source_family_raises_instead_of_falling_back():
    from pipelines.release.card import citations, release_input, title
    from schemas.release import Release

    release = Release(edition="imagenet256", benchmark="c", tree="imagenet-256-c", source_family="imagenet")
    for read in (title, citations, release_input):
        with pytest.raises(ValueError, match="unknown edition 'imagenet256'; valid editions: imagenet, "):
            read(release)
    with pytest.raises(ValueError, match="unknown source family 'cifar10' for this edition; valid: imagenet"):
        release_input(Release(edition="imagenet", benchmark="c", tree="ImageNet-C", source_family="cifar10"))
    assert title(Release(edition="inception", benchmark="vcr", tree="vcr")) == "VCR (visually-continuous " \
        "corruption robustness) (299x299, Inception input)"
