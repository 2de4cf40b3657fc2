"""``build-p --edition``: the inception / tinyimagenet / imagenet64 MP4 trees and the CIFAR-10-P ``.npy``
layout, on one or two sample images, TFDS-loadable, verified and packaged."""
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
from pipelines.release.verify import verify_release
from scripts.cli import main as cli
from pipelines.inputs.families import list_input
from pipelines.inputs.listing import read_entry
from transforms import example_rng, perturb_sequence
from transforms.views_p import edition_input
from schemas.editions import get_edition

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def build(output, edition, perturbations, limit=1, difficulties=(1,)):
    config = ImageNetPConfig.select(perturbations, list(difficulties), preset="ultrafast", edition=edition)
    return build_imagenet_p(str(output), SourceSelection(limit=limit), config,
                            RunOptions(workers=1, progress_interval=3600))


def rows(release, group):
    return [json.loads(line) for line in (release / "manifest" / f"{group}.jsonl").read_text().splitlines()]


def opencv_frames(path):
    capture, frames = cv2.VideoCapture(str(path)), []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return np.stack(frames)


def recomputed(release, row, edition):
    """The sequence of a manifest row, recomputed from the edition's bundled sample (listed afresh)."""
    scratch = release.parent / f"{edition}_sample_again"
    entries = {e.key: e for e in list_input(get_edition(edition), None, str(scratch)).index.entries}
    image = edition_input(read_entry(entries[row["image_key"]]), get_edition(edition).p)
    rng = example_rng(0, row["image_key"], row["perturbation"], row["difficulty"])
    return perturb_sequence(image, row["perturbation"], rng, row["difficulty"], edition=edition)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return tmp_path_factory.mktemp("p_editions")


@pytest.mark.parametrize("edition, tree, dataset, shape", [
    ("tinyimagenet", "Tiny-ImageNet-P", "tiny_imagenet_p", (64, 64)),  # Tiny ImageNet's own 64x64 images
    ("inception", "ImageNet-P-299", "imagenet_p_299", (299, 299)),
    ("imagenet64", "ImageNet-64x64-P", "imagenet64x64_p", (64, 96)),  # motion_blur keeps the aspect
])
def test_mp4_editions_write_the_official_tree_and_tfds_holds_the_decoded_frames(sample, edition, tree, dataset, shape):
    tfds = pytest.importorskip("tensorflow_datasets")
    release = sample / edition
    name = "scale" if edition == "inception" else "motion_blur"
    result = build(release, edition, [name])
    assert result.failures == 0
    document = json.loads((release / "release.json").read_text())
    assert document["tree"] == tree and document["config"]["edition"] == edition == document["edition"]
    assert document["benchmark"] == "p"
    assert document["p_edition"]["frame_size"] == get_edition(edition).p.frame_size
    row, = rows(release, name)
    wnid, stem = row["image_key"].split("/")[0], os.path.splitext(row["image_key"].split("/")[1])[0]
    assert row["path"] == f"{tree}/{name}/{wnid}/{stem}.mp4"
    decoded = opencv_frames(release / row["path"])
    frames = recomputed(release, row, edition)
    assert decoded.shape == frames.shape == (31, *shape, 3)
    assert 10 * np.log10(255 ** 2 / np.mean((decoded.astype(float) - frames) ** 2)) > 28
    builder = tfds.builder_from_directory(str(release / "tfds" / dataset / name / "1.0.0"))
    example, = builder.as_dataset(split="validation")
    np.testing.assert_array_equal(example["video"].numpy(), decoded)
    assert verify_release(str(release)).ok


def test_cifar_edition_writes_one_npy_per_dataset_in_input_order(sample, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    release = sample / "cifar"
    assert cli(["build-p", "--edition", "cifar", "--output", str(release), "--limit", "2", "--workers", "1",
                "--perturbations", "translate,shot_noise", "--difficulties", "1,2"]) == 0
    assert sorted(os.listdir(release / "CIFAR-10-P")) == ["shot_noise.npy", "shot_noise_2.npy", "translate.npy"]
    for group, frames in (("translate", 16), ("shot_noise_2", 31)):
        array = np.load(release / "CIFAR-10-P" / f"{group}.npy")
        listed = rows(release, group)
        assert array.shape == (2, frames, 32, 32, 3) and array.dtype == np.uint8
        assert [r["image_key"] for r in listed] == sorted(r["image_key"] for r in listed)  # the .npy order
        for sequence, row in zip(array, listed):
            np.testing.assert_array_equal(sequence, recomputed(release, row, "cifar"))
            assert row["path"] == f"CIFAR-10-P/{group}.npy" and row["key"] == f"{group}/{row['image_key'].rsplit('.', 1)[0]}"
            assert row["sha256"] == row["frames_sha256"] and 0 <= row["label"] < 10  # a CIFAR-10 label
        loaded = {ex["file_name"].numpy().decode(): ex["video"].numpy() for ex in
                  tfds.builder_from_directory(str(release / "tfds" / "cifar10_p" / group / "1.0.0")).as_dataset(split="test")}
        for sequence, row in zip(array, listed):
            np.testing.assert_array_equal(loaded[row["image_key"]], sequence)
    assert verify_release(str(release)).ok
    tars = package_release(str(release), str(tmp_path / "packages"))
    assert [os.path.basename(t) for t in tars] == ["noise.tar", "digital.tar"]
    with tarfile.open(tars[0]) as archive:
        assert sorted(archive.getnames()) == ["shot_noise.npy", "shot_noise_2.npy"]


def test_unknown_edition_is_refused(tmp_path, capsys):
    assert cli(["build-p", "--edition", "cifar100", "--output", str(tmp_path / "x")]) == 2
    assert "valid editions" in capsys.readouterr().err


def test_a_cifar_release_without_tfds_makes_no_tfds_frames_and_the_same_arrays(tmp_path, monkeypatch):
    """``--formats tree``: no format reads the TFDS examples, so no sequence's PNG frames are made (nor
    kept in the parts), and the arrays, manifests and their checksums are those of the default build."""
    import pipelines.beam.imagenet_p as imagenet_p

    encoded, encode = [], imagenet_p.encode_frames_lossless
    monkeypatch.setattr(imagenet_p, "encode_frames_lossless",
                        lambda frames: encoded.append(len(frames)) or encode(frames))
    config = ImageNetPConfig.select(["translate", "shot_noise"], [1, 2], edition="cifar")
    in_process = RunOptions(workers=1, progress_interval=3600, beam_args=("--direct_running_mode=in_memory",))
    sums = {}
    for formats in (("tfds", "tree"), ("tree",)):
        encoded.clear()
        release = tmp_path / "-".join(formats)
        build_imagenet_p(str(release), SourceSelection(limit=2), config, in_process, formats=formats)
        assert len(encoded) == (6 if "tfds" in formats else 0)  # 2 images x 3 datasets
        assert verify_release(str(release)).ok
        sums[formats] = sorted(line for line in (release / "SHA256SUMS").read_text().splitlines()
                               if line.split()[1].startswith(("CIFAR-10-P/", "manifest/")))
    assert len(sums["tree",]) == 6 and sums["tree",] == sums["tfds", "tree"]
