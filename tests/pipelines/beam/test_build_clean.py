"""The clean config of an ImageNet-C release (tree, TFDS, manifest, verify, package, --no-clean) and
the bundled ``robustbench-5000`` id list."""
import hashlib
import json
import shutil
import tarfile

import pytest

from pipelines.beam.build import SourceSelection
from schemas.configs import ImageNetCConfig
from pipelines.release.package import package_release
from pipelines.release.verify import verify_release
from schemas.image_ids import ID_LISTS, IdList, named_id_list_bytes
from schemas.release import FAILURES
from scripts.cli import main as cli
from transforms import encode_jpeg, preprocess

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def rows(release_dir, config):
    return [json.loads(line) for line in (release_dir / "manifest" / f"{config}.jsonl").read_text().splitlines()]


def test_clean_config_holds_the_images_as_the_corruptions_received_them(sample_release, sample_folder):
    output, result = sample_release
    clean = rows(output, "clean")
    sources = {f"{p.parent.name}/{p.name}": p.read_bytes() for p in sample_folder.glob("*/*.JPEG")}
    assert [r["image_key"] for r in clean] == sorted(sources)
    for row in clean:
        crop = preprocess(sources[row["image_key"]])
        data = (output / row["path"]).read_bytes()
        assert row["path"] == f"ImageNet-C/clean/{row['image_key']}" and row["key"] == f"clean/{row['image_key']}"
        assert data == encode_jpeg(crop) and row["sha256"] == hashlib.sha256(data).hexdigest()
        assert row["array_sha256"] == hashlib.sha256(crop.tobytes()).hexdigest()
        assert (row["corruption"], row["severity"], row["seed"]) == (None, None, None)
        assert (output / row["shard"]).is_file() and "/clean/3.1.0/" in row["shard"]
    release = result.release
    assert release.config.clean is True and release.tfds.configs[0] == "clean"
    assert "manifest/clean.jsonl" in release.manifest_parts


def test_clean_config_loads_with_tfds_beside_the_drop_in_configs(sample_release):
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = sample_release
    skip = {"image": tfds.decode.SkipDecoding()}
    expected = sorted((output / r["path"]).read_bytes() for r in rows(output, "clean"))
    loaded = tfds.load("imagenet2012_corrupted/clean", data_dir=str(output / "tfds"), download=False,
                       split="validation", decoders=skip)
    assert sorted(ex["image"].numpy() for ex in loaded) == expected
    builder = tfds.builder_from_directory(str(output / "tfds" / "imagenet2012_corrupted" / "clean" / "3.1.0"))
    assert builder.info.config_name == "clean" and builder.info.splits["validation"].num_examples == 8
    # the registered builder's configs still load unchanged from the same data_dir
    assert len(list(tfds.load("imagenet2012_corrupted/gaussian_noise_1", data_dir=str(output / "tfds"),
                              download=False, split="validation", decoders=skip))) == 8


def test_verify_and_package_cover_the_clean_config(sample_release, tmp_path):
    output, _ = sample_release
    copy = tmp_path / "copy"
    shutil.copytree(output, copy)
    row = rows(copy, "clean")[3]
    data = bytearray((copy / row["path"]).read_bytes())
    data[len(data) // 3] ^= 0x10
    (copy / row["path"]).write_bytes(bytes(data))
    assert verify_release(str(copy)).changed == [row["path"]]
    tars = package_release(str(output), str(tmp_path / "packages"))
    assert tars[-1].endswith("clean.tar")
    with tarfile.open(tars[-1]) as archive:
        names = sorted(m.name for m in archive.getmembers() if m.isfile())
    assert names == sorted(r["key"] for r in rows(output, "clean"))


def test_no_clean_leaves_the_clean_config_out_and_the_rest_unchanged(sample_release, tmp_path):
    output = tmp_path / "noclean"
    assert cli(["build-c", "--output", str(output), "--workers", "2", "--corruptions", "gaussian_noise,contrast",
                "--severities", "1,2", "--no-clean"]) == 0
    release = json.loads((output / "release.json").read_text())
    configs = ["gaussian_noise_1", "gaussian_noise_2", "contrast_1", "contrast_2"]
    assert release["config"]["clean"] is False and release["tfds"]["configs"] == configs
    assert release["counts"]["outputs_per_config"] == dict.fromkeys(sorted(configs), 8)
    for config in configs:  # the clean row changes nothing in the corrupted outputs
        assert rows(output, config) == rows(sample_release[0], config)
    assert not (output / "ImageNet-C" / "clean").exists()
    assert not (output / "tfds" / "imagenet2012_corrupted" / "clean").exists()
    assert verify_release(str(output)).ok
    assert ImageNetCConfig.select(["fog"]).groups[0] == "clean"
    with pytest.raises(ValueError, match="clean must be True or False"):
        ImageNetCConfig.select(["fog"], clean="no")


def test_robustbench_5000_selects_exactly_the_listed_ids_present(sample_folder, tmp_path, fast_build):
    listed = named_id_list_bytes("robustbench-5000").decode().splitlines()
    assert len(listed) == len(set(listed)) == ID_LISTS["robustbench-5000"].count == 5000
    photo = next(sample_folder.glob("*/*.JPEG")).read_bytes()
    chosen = [listed[0], listed[1234], listed[4999]]
    others = [f"{chosen[0].split('/')[0]}/ILSVRC2012_val_{n:08d}.JPEG" for n in range(1, 50)]
    others = [key for key in others if key not in set(listed)][:3]
    assert len(others) == 3
    folder = tmp_path / "val"
    for key in chosen + others:
        (folder / key).parent.mkdir(parents=True, exist_ok=True)
        (folder / key).write_bytes(photo)
    result = fast_build(tmp_path / "rb", SourceSelection(str(folder), "robustbench-5000"),
                        config=ImageNetCConfig.select(["contrast"], [1]))
    assert [r["image_key"] for r in rows(tmp_path / "rb", "contrast_1")] == sorted(chosen)
    assert [r["image_key"] for r in rows(tmp_path / "rb", "clean")] == sorted(chosen)
    assert result.release.config.image_ids_sha256 == ID_LISTS["robustbench-5000"].sha256
    failures = [json.loads(line) for line in (tmp_path / "rb" / FAILURES).read_text().splitlines()]
    assert len(failures) == 5000 - 3 and {f["stage"] for f in failures} == {"list"}
    assert not set(chosen) & {f["key"] for f in failures}


def test_a_damaged_bundled_list_is_refused(monkeypatch):
    entry = ID_LISTS["robustbench-5000"]
    monkeypatch.setattr("schemas.image_ids.ID_LISTS", {"robustbench-5000": IdList(
        entry.file, "0" * 64, entry.count, entry.source, entry.licence)})
    with pytest.raises(ValueError, match="damaged"):
        named_id_list_bytes("robustbench-5000")
    with pytest.raises(ValueError, match="bundled lists: robustbench-5000"):
        named_id_list_bytes("robustbench-50")
