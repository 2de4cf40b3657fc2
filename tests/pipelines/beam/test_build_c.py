"""End-to-end ImageNet-C builds on Beam's FnApiRunner: outputs, TFDS loading, determinism,
bad inputs, verify and package."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from pipelines.beam.build import SourceSelection
from pipelines.beam.runner import RunOptions
from schemas.configs import ImageNetCConfig
from pipelines.beam.progress import IMAGE_WORK_COUNTER
from pipelines.release.package import package_release
from pipelines.release.verify import verify_release
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.release import CHECKSUMS, FAILURES, SOURCES, parse_checksum_lines
from schemas.wnids import wnid_to_label
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

CONFIGS = ("gaussian_noise_1", "gaussian_noise_2", "contrast_1", "contrast_2")


def manifest(release_dir, config):
    with open(release_dir / "manifest" / f"{config}.jsonl") as stream:
        return [json.loads(line) for line in stream]


def test_sample_release_layout(sample_release):
    output, result = sample_release
    release = json.loads((output / "release.json").read_text())
    assert release == result.release.to_json()
    assert release["input"]["kind"] == "sample" and release["counts"]["failures"] == 0
    images = release["counts"]["images"]
    assert images == 8 and release["counts"]["outputs_per_config"] == dict.fromkeys(CONFIGS + ("clean",), images)
    counters = dict(result.counters)
    assert counters.pop(IMAGE_WORK_COUNTER) > 0  # the images' own work, in CPU microseconds
    assert counters == {"images_read": images, "outputs_written": 5 * images, "failures": 0}
    assert set(release["library_versions"]) >= {"pillow", "libjpeg", "numpy", "scipy", "scikit-image", "opencv"}
    assert not [p for p in os.listdir(output) if p.startswith(".")]  # scratch folders removed
    for config in CONFIGS:
        corruption, severity = config.rsplit("_", 1)
        for row in manifest(output, config):
            path = output / row["path"]
            assert row["path"] == f"ImageNet-C/{corruption}/{severity}/{row['wnid']}/{row['key'].rsplit('/', 1)[1]}"
            assert hashlib.sha256(path.read_bytes()).hexdigest() == row["sha256"] == \
                hashlib.sha256(path.read_bytes()).hexdigest()
            assert row["bytes"] == path.stat().st_size and row["label"] == wnid_to_label()[row["wnid"]]
            assert (row["corruption"], row["severity"]) == (corruption, int(severity))
            assert (output / row["shard"]).is_file()
    notes = [json.loads(line)["note"] for line in (output / SOURCES).read_text().splitlines()]
    assert notes.count("L image converted to RGB") == 2


def test_torchvision_style_image_folder_layout(sample_release):
    output, _ = sample_release
    for config in CONFIGS:
        corruption, severity = config.rsplit("_", 1)
        folder = output / "ImageNet-C" / corruption / severity
        classes = sorted(os.listdir(folder))
        assert all(c in wnid_to_label() for c in classes)
        assert sum(len(os.listdir(folder / c)) for c in classes) == 8


def test_tfds_builder_from_directory_loads_every_config(sample_release):
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = sample_release
    for config in CONFIGS:
        builder = tfds.builder_from_directory(str(output / "tfds" / "imagenet2012_corrupted" / config / "3.1.0"))
        assert builder.info.splits["validation"].num_examples == 8
        assert builder.info.features["label"].num_classes == 1000
        dataset = builder.as_dataset(split="validation", decoders={"image": tfds.decode.SkipDecoding()})
        loaded = {ex["file_name"].numpy().decode(): (int(ex["label"]), ex["image"].numpy()) for ex in dataset}
        expected = {row["key"].rsplit("/", 1)[1]: (row["label"], (output / row["path"]).read_bytes())
                    for row in manifest(output, config)}
        assert loaded == expected


def test_unchanged_tfds_load_reads_the_release(sample_release):
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = sample_release
    dataset = tfds.load("imagenet2012_corrupted/contrast_2", data_dir=str(output / "tfds"), download=False,
                        split="validation")
    examples = list(dataset)
    assert len(examples) == 8 and examples[0]["image"].shape == (224, 224, 3)


def test_one_and_two_workers_give_identical_releases(sample_release, tmp_path, fast_build):
    output, _ = sample_release
    fast_build(tmp_path / "one", workers=1)
    assert (tmp_path / "one" / CHECKSUMS).read_bytes() == (output / CHECKSUMS).read_bytes()
    assert (tmp_path / "one" / "release.json").read_bytes() == (output / "release.json").read_bytes()


def test_output_of_another_config_is_refused(sample_release):
    output, _ = sample_release
    with pytest.raises(ValueError, match="holds a release of another config"):
        from pipelines.beam.imagenet_c import build_imagenet_c
        build_imagenet_c(str(output), config=ImageNetCConfig.select(["contrast"], [1]))


def test_verify_catches_a_flipped_byte_and_missing_and_extra_files(sample_release, tmp_path):
    output, _ = sample_release
    copy = tmp_path / "copy"
    shutil.copytree(output, copy)
    assert verify_release(str(copy)).ok
    assert cli(["verify", str(copy)]) == 0
    row = manifest(copy, "contrast_1")[0]
    data = bytearray((copy / row["path"]).read_bytes())
    data[len(data) // 2] ^= 0x01
    (copy / row["path"]).write_bytes(bytes(data))
    (copy / "stray.txt").write_text("x")
    (copy / FAILURES).unlink()
    report = verify_release(str(copy))
    assert (report.changed, report.extra, report.missing) == ([row["path"]], ["stray.txt"], [FAILURES])
    assert cli(["verify", str(copy)]) == 1


def test_package_writes_reproducible_category_tars(sample_release, tmp_path):
    output, _ = sample_release
    first = package_release(str(output), str(tmp_path / "a"))
    second = package_release(str(output), str(tmp_path / "b"))
    assert [os.path.basename(p) for p in first] == ["noise.tar", "digital.tar", "clean.tar"]
    assert [open(p, "rb").read() for p in first] == [open(p, "rb").read() for p in second]
    with tarfile.open(first[1]) as archive:
        names = [m.name for m in archive.getmembers() if m.isfile()]
    rows = manifest(output, "contrast_1") + manifest(output, "contrast_2")
    assert sorted(names) == sorted(r["key"] for r in rows)
    sums = parse_checksum_lines((tmp_path / "a" / CHECKSUMS).read_text().splitlines())
    assert sums == {os.path.basename(p): hashlib.sha256(open(p, "rb").read()).hexdigest() for p in first}


def test_package_inside_the_release_is_verified_too(sample_release, tmp_path):
    output, _ = sample_release
    copy = tmp_path / "copy"
    shutil.copytree(output, copy)
    assert cli(["package", str(copy)]) == 0
    assert verify_release(str(copy)).ok
    with open(copy / "packages" / "noise.tar", "r+b") as stream:
        stream.seek(700)
        byte = stream.read(1)
        stream.seek(700)
        stream.write(bytes([byte[0] ^ 0xFF]))
    assert verify_release(str(copy)).changed == ["packages/noise.tar"]


def test_bad_inputs_are_listed_and_good_ones_built(bad_input_folder, bad_inputs, tmp_path, capsys):
    bad, odd = bad_inputs
    output = tmp_path / "release"
    code = cli(["build-c", "--input", str(bad_input_folder), "--output", str(output), "--workers", "2",
                "--corruptions", "contrast", "--severities", "1"])
    assert code == 1
    assert f"{len(bad)} failures" in capsys.readouterr().out
    failures = [json.loads(line) for line in (output / FAILURES).read_text().splitlines()]
    assert sorted(f["key"] for f in failures) == sorted(bad)
    for failure in failures:
        assert bad[failure["key"]] in failure["reason"], failure
    sources = {s["key"]: s for s in map(json.loads, (output / SOURCES).read_text().splitlines())}
    assert len(sources) == 8 + len(odd)
    for key, note in odd.items():
        assert sources[key]["note"] == note
        assert (output / "ImageNet-C" / "contrast" / "1" / key).is_file()
    assert verify_release(str(output)).ok


def test_tar_and_tfds_inputs_give_the_same_outputs(sample_release, sample_tar, sample_tfds, tmp_path, fast_build):
    output, _ = sample_release
    for name, source in (("tar", sample_tar), ("tfds", sample_tfds)):
        result = fast_build(tmp_path / name, SourceSelection(str(source)))
        assert result.release.input.kind == name
        for config in CONFIGS:
            assert manifest(tmp_path / name, config) == manifest(output, config)
    assert result.failures == 0
    tar_failures = (tmp_path / "tar" / FAILURES).read_text()
    assert "../ILSVRC2012_val_00000999.JPEG" in tar_failures


def test_image_ids_and_limit_select_a_subset(sample_folder, tmp_path, fast_build):
    keys = sorted(f"{p.parent.name}/{p.name}" for p in sample_folder.glob("*/*.JPEG"))
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join([keys[0], keys[3].split("/")[1], keys[5]]) + "\n")
    result = fast_build(tmp_path / "subset", SourceSelection(str(sample_folder), str(ids), limit=2),
                        config=ImageNetCConfig.select(["contrast"], [1]))
    assert result.release.counts.outputs_per_config == {"clean": 2, "contrast_1": 2} and result.failures == 0
    assert result.release.config.image_ids_sha256 == hashlib.sha256(ids.read_bytes()).hexdigest()
    assert [row["image_key"] for row in manifest(tmp_path / "subset", "contrast_1")] == [keys[0], keys[3]]


def test_progress_lines_are_printed(sample_folder, tmp_path):
    from pipelines.beam.imagenet_c import build_imagenet_c
    stream = io.StringIO()
    build_imagenet_c(str(tmp_path / "p"), SourceSelection(str(sample_folder)),
                     ImageNetCConfig.select(["contrast"], [1]),
                     RunOptions(workers=1, progress_interval=0.2, stream=stream))
    assert "progress: " in stream.getvalue() and " outputs (" in stream.getvalue()


def test_full_sample_build_all_95_configs(tmp_path, fast_build):
    """Every corruption and severity, two images: all configs load with TFDS and match the tree."""
    tfds = pytest.importorskip("tensorflow_datasets")
    result = fast_build(tmp_path / "full", SourceSelection(limit=2), config=ImageNetCConfig())
    assert result.failures == 0
    configs = [f"{c}_{s}" for c in CORRUPTIONS for s in SEVERITIES]
    assert result.release.counts.outputs_per_config == dict.fromkeys(sorted(configs + ["clean"]), 2)
    for config in configs:
        loaded = tfds.load(f"imagenet2012_corrupted/{config}", data_dir=str(tmp_path / "full" / "tfds"),
                           download=False, split="validation", decoders={"image": tfds.decode.SkipDecoding()})
        images = sorted(ex["image"].numpy() for ex in loaded)
        assert images == sorted((tmp_path / "full" / r["path"]).read_bytes() for r in manifest(tmp_path / "full", config))
    assert verify_release(str(tmp_path / "full")).ok


PLANTED_BUG = '''
"""Planted by test_a_bug_stops_the_build_with_one_line: in every worker process Python starts,
contrast raises a TypeError, as a bug in a transform would (a worker imports this at start-up)."""
import transforms.corruptions


def contrast_with_a_bug(x, rng, **parameters):
    raise TypeError("unsupported operand type(s) for *: 'planted' and 'bug'")


transforms.corruptions.FUNCTIONS["contrast"] = contrast_with_a_bug
'''


PLANTED_DECODE_BUG = '''
"""Planted by test_a_bug_stops_the_build_with_one_line: in every worker process Python
starts, the decoder the stages call raises a plain ValueError, as a bug in it would (the module
is looked up by name: the package's attribute ``transforms.preprocess`` is the function)."""
from importlib import import_module


def to_pil_with_a_bug(image):
    raise ValueError("planted bug: a decoder that raises a plain ValueError")


import_module("transforms.preprocess").to_pil = to_pil_with_a_bug
'''


PLANTED_READ_BUG = '''
"""Planted by test_a_bug_stops_the_build_with_one_line: in every worker process Python starts,
the read stage's reader raises a plain ValueError, as a bug in it would (the read stage binds the
name when it is imported, after this module ran). Importing the module imports Beam, which logs a
warning and so gives the root logger a handler; it is taken off again, so that ``--debug`` still
sets up logging in the driver."""
import logging

import pipelines.inputs.listing


def read_entry_with_a_bug(entry):
    raise ValueError("planted bug: a reader that raises a plain ValueError")


pipelines.inputs.listing.read_entry = read_entry_with_a_bug
logging.getLogger().handlers.clear()
'''


PLANTED_MEASURE_BUG = '''
"""Planted by test_a_bug_stops_the_build_with_one_line: in every worker process Python starts,
VCR's measure stage gets a VIF reference that raises a plain ValueError, as a bug in it would (the
module is looked up by name: the package's attribute ``transforms.vif`` is the function)."""
from importlib import import_module


def vif_reference_with_a_bug(reference):
    raise ValueError("planted bug: a VIF reference that raises a plain ValueError")


import_module("transforms.vif").VifReference = vif_reference_with_a_bug
'''

C_COMMAND = ["build-c", "--workers", "1", "--corruptions", "contrast", "--severities", "1", "--limit", "2"]
VCR_COMMAND = ["build-vcr", "--workers", "1", "--corruptions", "contrast", "--levels", "1", "--limit", "2"]


@pytest.mark.parametrize("planted_code, command, error, function", [
    (PLANTED_BUG, C_COMMAND, "TypeError: unsupported operand type(s) for *: 'planted' and 'bug'",
     "contrast_with_a_bug"),
    (PLANTED_DECODE_BUG, C_COMMAND, "ValueError: planted bug: a decoder that raises a plain ValueError",
     "to_pil_with_a_bug"),
    (PLANTED_READ_BUG, C_COMMAND, "ValueError: planted bug: a reader that raises a plain ValueError",
     "read_entry_with_a_bug"),
    (PLANTED_MEASURE_BUG, VCR_COMMAND, "ValueError: planted bug: a VIF reference that raises a plain ValueError",
     "vif_reference_with_a_bug"),
], ids=["a TypeError in a corruption", "a ValueError in a decode stage", "a ValueError in the read stage",
        "a ValueError in VCR's measure stage"])
def test_a_bug_stops_the_build_with_one_line(tmp_path, monkeypatch, capsys, planted_code, command, error, function):
    """A bug is not bad data: a TypeError in a corruption, or a plain ValueError in the reading, the
    decoding or VCR's measuring of every image (only a read's OSError and a BadInput are bad data),
    stops the build (one line, exit 1, no release.json) where a BadInput would be a row of
    failures.jsonl; --debug shows the traceback. The bug is planted in the workers' processes with
    a ``sitecustomize`` module on their PYTHONPATH."""
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(planted_code)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(planted), root, os.environ.get("PYTHONPATH")])))
    output = tmp_path / "release"
    command = [*command, "--output", str(output)]
    assert cli(command) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("progress:")]
    assert errors == [f"error: building {output}: {error}"]
    assert not (output / "release.json").exists() and not (output / FAILURES).exists()
    run = subprocess.run([sys.executable, "-c", "import sys; from scripts.cli import main; sys.exit(main())",
                          "--debug", *command, "--force"], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback (most recent call last)" in run.stderr
    assert f"in {function}" in run.stderr and not (output / "release.json").exists()
