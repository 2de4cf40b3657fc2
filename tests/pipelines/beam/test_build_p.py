"""End-to-end ImageNet-P builds on Beam's FnApiRunner: the MP4 tree, OpenCV decoding, TFDS loading
of the frames decoded from the MP4s (or the lossless ones), determinism across worker counts, bad inputs, verify and package.

Most builds use the ultrafast preset on one or two sample images; one test runs the default
(veryslow) preset on one short-to-encode sequence."""
import hashlib
import json
import os
import tarfile

import cv2
import numpy as np
import pytest

from pipelines.beam.runner import RunOptions

from pipelines.beam.build import SourceSelection
from schemas.configs import ImageNetPConfig
from pipelines.beam.imagenet_p import build_imagenet_p
from pipelines.release.package import package_release
from pipelines.install.sample import write_sample
from pipelines.formats.video import encode_h264
from pipelines.release.verify import verify_release
from schemas.release import CHECKSUMS, FAILURES, SOURCES
from schemas.tfds_p import DATASETS, imagenet_p_config
from schemas.wnids import wnid_to_label
from scripts.cli import main as cli
from transforms import example_rng, example_seed, perturb_sequence, preprocess_uncropped

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

FAST = ImageNetPConfig.select(["gaussian_noise", "translate"], [1, 2], preset="ultrafast")
CONFIGS = ("gaussian_noise", "gaussian_noise_2", "translate")
IMAGES = 2


def build(output, config=FAST, limit=IMAGES, workers=2):
    return build_imagenet_p(str(output), SourceSelection(limit=limit), config,
                            RunOptions(workers=workers, progress_interval=3600))


def manifest(release_dir, config):
    with open(release_dir / "manifest" / f"{config}.jsonl") as stream:
        return [json.loads(line) for line in stream]


def opencv_frames(path):
    """Every frame ``cv2.VideoCapture`` reads, as the reference evaluator reads them (BGR -> RGB)."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return np.stack(frames)


def expected_frames(release_dir, row, seed=0):
    """The sequence of a manifest row, recomputed from its source image."""
    source = release_dir / ".." / "sample_source" / row["image_key"]
    image = preprocess_uncropped(source.read_bytes())
    rng = example_rng(seed, row["image_key"], row["perturbation"], row["difficulty"])
    return perturb_sequence(image, row["perturbation"], rng, row["difficulty"])


@pytest.fixture(scope="module")
def p_release(tmp_path_factory):
    """(release directory, BuildResult): two sample images, three datasets, ultrafast, 2 workers;
    the sample written next to it as ``../sample_source`` for recomputing the sequences."""
    root = tmp_path_factory.mktemp("p_release")
    write_sample(str(root / "sample_source"))
    return root / "release", build(root / "release")


def test_release_layout_manifest_and_release_json(p_release):
    output, result = p_release
    release = json.loads((output / "release.json").read_text())
    assert release == result.release.to_json() and (release["edition"], release["benchmark"], release["tree"]) == ("imagenet", "p", "ImageNet-P")
    assert release["counts"]["outputs_per_config"] == dict.fromkeys(CONFIGS, IMAGES)
    assert release["counts"]["failures"] == 0 and release["input"]["kind"] == "sample"
    assert result.counters == {"images_read": IMAGES, "outputs_written": 3 * IMAGES, "failures": 0}
    assert (release["config"]["preset"], release["config"]["simd"]) == ("ultrafast", True)
    assert release["config"]["tfds_frames"] == "decoded" == release["video"]["tfds_frames"]["source"]
    encoder = release["video"]["encoder"]
    assert encoder["x264_params"] == "cpu-independent=1" and encoder["mode"] == "simd-cpu-independent"
    assert encoder["preset"] == "ultrafast" and encoder["threads"] == 1 and encoder["cpu_capabilities"]
    assert release["video"]["rate_control"] == {"gaussian_noise": "-tune grain", "translate": "-crf 20"}
    assert {"ffmpeg", "libx264", "imageio-ffmpeg", "zlib", "numpy", "x264_cpu_capabilities"} <= set(release["library_versions"])
    assert not [p for p in os.listdir(output) if p.startswith(".")]
    for config in CONFIGS:
        for row in manifest(output, config):
            stem = os.path.splitext(row["image_key"].split("/")[1])[0]
            assert row["path"] == f"ImageNet-P/{config}/{row['wnid']}/{stem}.mp4" == f"ImageNet-P/{row['key']}"
            assert imagenet_p_config(row["perturbation"], row["difficulty"]) == config
            assert row["sha256"] == hashlib.sha256((output / row["path"]).read_bytes()).hexdigest()
            assert row["label"] == wnid_to_label()[row["wnid"]] and (output / row["shard"]).is_file()
            assert row["frames"] == (41 if config == "translate" else 31)
            assert row["seed"] == example_seed(0, row["image_key"], row["perturbation"], row["difficulty"])


def test_every_mp4_decodes_with_opencv_to_its_frames(p_release):
    output, _ = p_release
    for config in CONFIGS:
        for row in manifest(output, config):
            decoded = opencv_frames(output / row["path"])
            assert decoded.shape == (row["frames"], 224, 224, 3)
            frames = expected_frames(output, row)
            assert hashlib.sha256(frames.tobytes()).hexdigest() == row["frames_sha256"]
            error = np.mean((decoded.astype(float) - frames) ** 2)
            assert 10 * np.log10(255 ** 2 / error) > 28  # ultrafast H.264 of these very frames


def test_tfds_frames_are_the_opencv_decoded_frames_of_the_mp4s(p_release):
    """TFDS and the MP4 tree hold the same pixels, frame for frame, for every config of the build."""
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = p_release
    for config in CONFIGS:
        builder = tfds.builder_from_directory(str(output / "tfds" / "imagenet_p" / config / "1.0.0"))
        loaded = {ex["file_name"].numpy().decode(): ex["video"].numpy() for ex in builder.as_dataset(split="validation")}
        rows = manifest(output, config)
        assert len(loaded) == len(rows) == IMAGES
        for row in rows:
            video = loaded[row["image_key"].split("/")[1]]
            np.testing.assert_array_equal(video, opencv_frames(output / row["path"]))
            assert not np.array_equal(video, expected_frames(output, row))  # H.264 is lossy: not the lossless frames


def test_tfds_lossless_option_loads_the_frames_before_the_encode(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    output = tmp_path / "lossless"
    write_sample(str(tmp_path / "sample_source"))
    config = ImageNetPConfig.select(["gaussian_noise", "translate"], [1], preset="ultrafast", tfds_frames="lossless")
    build(output, config, limit=1, workers=1)
    assert json.loads((output / "release.json").read_text())["video"]["tfds_frames"]["source"] == "lossless"
    for config in ("gaussian_noise", "translate"):
        builder = tfds.builder_from_directory(str(output / "tfds" / "imagenet_p" / config / "1.0.0"))
        assert builder.info.splits["validation"].num_examples == 1
        loaded = {ex["file_name"].numpy().decode(): ex for ex in builder.as_dataset(split="validation")}
        rows = manifest(output, config)
        assert sorted(loaded) == sorted(row["image_key"].split("/")[1] for row in rows)
        for row in rows:
            example = loaded[row["image_key"].split("/")[1]]
            assert int(example["label"]) == row["label"]
            np.testing.assert_array_equal(example["video"].numpy(), expected_frames(output, row))
    examples = list(tfds.load("imagenet_p/translate", data_dir=str(output / "tfds"), split="validation"))
    assert len(examples) == 1 and examples[0]["video"].shape == (41, 224, 224, 3)


def test_verify_and_package(p_release, tmp_path):
    output, _ = p_release
    assert verify_release(str(output)).ok and cli(["verify", str(output)]) == 0
    tars = package_release(str(output), str(tmp_path / "packages"))
    assert [os.path.basename(t) for t in tars] == ["noise.tar", "digital.tar"]
    with tarfile.open(tars[0]) as archive:
        names = sorted(m.name for m in archive.getmembers() if m.isfile())
    assert names == sorted(r["key"] for c in ("gaussian_noise", "gaussian_noise_2") for r in manifest(output, c))


def test_one_worker_gives_the_same_release(p_release, tmp_path):
    output, _ = p_release
    build(tmp_path / "one", workers=1)
    for name in (CHECKSUMS, "release.json", SOURCES):
        assert (tmp_path / "one" / name).read_bytes() == (output / name).read_bytes(), name


def test_bad_and_colliding_inputs_are_reported(sample_folder, tmp_path, capsys):
    val = tmp_path / "val" / "n02123045"
    val.mkdir(parents=True)
    good = (sample_folder / "n02123045" / "ILSVRC2012_val_00001341.JPEG").read_bytes()
    (val / "ILSVRC2012_val_00001341.JPEG").write_bytes(good)
    (val / "ILSVRC2012_val_00001341.png").write_bytes(good)  # the same video name
    (val / "ILSVRC2012_val_00001686.JPEG").write_bytes(good[:len(good) // 3])  # truncated
    output = tmp_path / "release"
    code = cli(["build-p", "--input", str(tmp_path / "val"), "--output", str(output), "--workers", "1",
                "--perturbations", "brightness", "--preset", "ultrafast"])
    assert code == 1 and "2 failures" in capsys.readouterr().out
    failures = {f["key"]: f for f in map(json.loads, (output / FAILURES).read_text().splitlines())}
    assert failures["n02123045/ILSVRC2012_val_00001341.png"]["stage"] == "list"
    assert "duplicate video name" in failures["n02123045/ILSVRC2012_val_00001341.png"]["reason"]
    assert failures["n02123045/ILSVRC2012_val_00001686.JPEG"]["stage"] == "decode"
    assert [r["image_key"] for r in manifest(output, "brightness")] == ["n02123045/ILSVRC2012_val_00001341.JPEG"]
    assert verify_release(str(output)).ok


def test_every_dataset_on_one_image_loads_with_tfds(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    config = ImageNetPConfig.select(preset="ultrafast")
    result = build(tmp_path / "all", config, limit=1)
    configs = [imagenet_p_config(n, d) for n, d in DATASETS]
    assert result.failures == 0 and len(configs) == 20
    assert result.release.counts.outputs_per_config == dict.fromkeys(sorted(configs), 1)
    for config in configs:
        row, = manifest(tmp_path / "all", config)
        assert opencv_frames(tmp_path / "all" / row["path"]).shape == (row["frames"], 224, 224, 3)
        builder = tfds.builder_from_directory(str(tmp_path / "all" / "tfds" / "imagenet_p" / config / "1.0.0"))
        example, = builder.as_dataset(split="validation")
        frames = example["video"].numpy()
        np.testing.assert_array_equal(frames, opencv_frames(tmp_path / "all" / row["path"]))
        assert frames.shape == (row["frames"], 224, 224, 3)
    assert verify_release(str(tmp_path / "all")).ok


def test_default_simd_and_no_simd_builds_give_identical_veryslow_mp4s(sample_folder, tmp_path):
    """The default encode (SIMD, cpu-independent) and --no-simd (plain C) write the same release files."""
    def build_cli(name, *flags):
        assert cli(["build-p", "--input", str(sample_folder), "--output", str(tmp_path / name), "--limit", "1",
                    "--perturbations", "zoom_blur", "--workers", "1", "--release-seed", "7", *flags]) == 0
        return tmp_path / name
    simd, plain = build_cli("simd"), build_cli("plain", "--no-simd")
    release = json.loads((simd / "release.json").read_text())
    assert (release["config"]["preset"], release["config"]["simd"], release["config"]["seed"]) == ("veryslow", True, 7)
    assert json.loads((plain / "release.json").read_text())["video"]["encoder"]["x264_params"] == "asm=0"
    row, = manifest(simd, "zoom_blur")
    def checksums(release):  # every file but release.json, which records the encoder mode, and the card and
        # croissant.json, which say so and list release.json's digest
        return [line for line in (release / CHECKSUMS).read_text().splitlines()
                if not line.endswith(("release.json", "README.md", "croissant.json"))]
    assert checksums(simd) == checksums(plain) and len(checksums(simd)) > 3
    assert (simd / row["path"]).read_bytes() == (plain / row["path"]).read_bytes()
    image = preprocess_uncropped((sample_folder / row["image_key"]).read_bytes())
    frames = perturb_sequence(image, "zoom_blur", example_rng(7, row["image_key"], "zoom_blur", 1))
    assert (simd / row["path"]).read_bytes() == encode_h264(frames, noise=False)


def test_bad_options_are_refused(tmp_path, capsys):
    assert cli(["build-p", "--output", str(tmp_path / "x"), "--preset", "turbo"]) == 2
    assert "valid presets" in capsys.readouterr().err
    assert cli(["build-p", "--output", str(tmp_path / "x"), "--perturbations", "rotate", "--difficulties", "3"]) == 2
    assert "no dataset selected" in capsys.readouterr().err
