"""Releases as RobustBench, torchvision and Hugging Face load them, unchanged, with the right labels.

The ImageNet-C release is built from an input holding the first RobustBench test ids (each of
another class, so the subset misses 994 classes) with ``--image-ids robustbench-5000``: the
folder-inferring loaders must still give ImageNet's index for every image, from the release
directory and from its extracted package. The CIFAR release is the bundled CIFAR-10 sample.
"""
from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest
from PIL import Image

from pipelines.beam.runner import RunOptions

from pipelines.beam.build import SourceSelection
from pipelines.beam.imagenet_c import build_imagenet_c
from schemas.configs import ImageNetCConfig
from pipelines.inputs.families import SAMPLE_CIFAR10_LABELS
from pipelines.release.package import package_release
from pipelines.release.verify import verify_release
from schemas.image_ids import ID_LISTS
from schemas.wnids import imagenet_wnids, wnid_to_label

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

IMAGES = 6
"""The first RobustBench ids: the first batch ``load_imagenetc(n_examples=IMAGES)`` reads."""
OTHERS = ("n01440764/ILSVRC2012_val_00000293.JPEG", "n01443537/ILSVRC2012_val_00000236.JPEG")
"""Inputs that RobustBench's list leaves out (the build must too)."""


def robustbench_ids() -> list[str]:
    from importlib import resources

    text = resources.files("schemas").joinpath(f"data/{ID_LISTS['robustbench-5000'].file}").read_text()
    return text.split()


def write_input(folder, ids) -> None:
    """A val folder of small, distinct JPEGs named as the ids."""
    for number, image_id in enumerate(ids):
        rng = np.random.default_rng(number)
        pixels = (np.linspace(0, 255, 96 * 128 * 3).reshape(96, 128, 3) * rng.uniform(0.3, 1, 3)
                  + rng.integers(0, 40, (96, 128, 3))).clip(0, 255).astype(np.uint8)
        path = folder / image_id
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path, format="JPEG", quality=95)


@pytest.fixture(scope="module")
def subset_release(tmp_path_factory):
    """A release of contrast 1 (and clean) of the first RobustBench ids; the ids it holds."""
    root = tmp_path_factory.mktemp("robustbench")
    ids = robustbench_ids()[:IMAGES]
    write_input(root / "val", ids + list(OTHERS))
    result = build_imagenet_c(str(root / "release"), SourceSelection(str(root / "val"), "robustbench-5000"),
                              ImageNetCConfig.select(["contrast"], [1]),
                              RunOptions(workers=1, progress_interval=3600))
    assert result.release.counts.images == IMAGES
    return root / "release", ids


def test_the_tree_folder_is_the_one_robustbench_reads(subset_release):
    release, _ = subset_release
    assert json.loads((release / "release.json").read_text())["tree"] == "ImageNet-C"
    assert (release / "ImageNet-C" / "contrast" / "1").is_dir()


def test_robustbench_load_imagenetc_gives_imagenet_labels_and_the_tree_pixels(subset_release, robustbench_data):
    release, ids = subset_release
    x, y = robustbench_data.load_imagenetc(n_examples=IMAGES, severity=1, data_dir=str(release),
                                           corruptions=("contrast",))
    assert y.tolist() == [wnid_to_label()[i.split("/")[0]] for i in ids]
    for image, image_id in zip(x.numpy(), ids):
        tree = np.asarray(Image.open(release / "ImageNet-C" / "contrast" / "1" / image_id).convert("RGB"))
        np.testing.assert_allclose(image.transpose(1, 2, 0), tree / 255.0, atol=1e-6)


@pytest.mark.parametrize("folder", ["contrast/1", "clean"])
def test_torchvision_image_folder_numbers_classes_as_imagenet(subset_release, torchvision, folder):
    release, ids = subset_release
    dataset = torchvision.datasets.ImageFolder(str(release / "ImageNet-C" / folder), allow_empty=True)
    assert dataset.classes == list(imagenet_wnids())
    assert sorted((s.split("/")[-2], t) for s, t in dataset.samples) == sorted(
        (i.split("/")[0], wnid_to_label()[i.split("/")[0]]) for i in ids)


def test_hugging_face_imagefolder_with_the_release_class_names(subset_release, tmp_path):
    from datasets import ClassLabel, Features, Image as ImageFeature, load_dataset

    release, ids = subset_release
    names = (release / "tfds/imagenet2012_corrupted/contrast_1/3.1.0/label.labels.txt").read_text().split()
    splits = load_dataset("imagefolder", data_dir=str(release / "ImageNet-C" / "contrast" / "1"),
                          features=Features({"image": ImageFeature(), "label": ClassLabel(names=names)}),
                          cache_dir=str(tmp_path / "hf"))
    (dataset,) = splits.values()  # one split, named by the files ('validation' for ILSVRC2012_val_*)
    assert sorted(dataset["label"]) == sorted(wnid_to_label()[i.split("/")[0]] for i in ids)


def test_the_subset_verifies_and_its_package_carries_every_class_folder(subset_release, tmp_path, torchvision):
    release, ids = subset_release
    assert verify_release(str(release)).ok
    (release / "ImageNet-C" / "contrast" / "1" / "n15075141").rmdir()  # an expected empty folder gone
    assert "missing: ImageNet-C/contrast/1/n15075141/" in verify_release(str(release)).text()
    (release / "ImageNet-C" / "contrast" / "1" / "n15075141").mkdir()
    (release / "ImageNet-C" / "contrast" / "1" / "n99999999").mkdir()  # not a class: extra
    assert "extra: ImageNet-C/contrast/1/n99999999/" in verify_release(str(release)).text()
    (release / "ImageNet-C" / "contrast" / "1" / "n99999999").rmdir()
    tars = package_release(str(release))
    with tarfile.open(next(t for t in tars if t.endswith("/digital.tar"))) as archive:
        folders = {m.name for m in archive if m.isdir()}
        archive.extractall(tmp_path / "extracted", filter="data")
    assert {f"contrast/1/{w}" for w in imagenet_wnids()} <= folders
    dataset = torchvision.datasets.ImageFolder(str(tmp_path / "extracted" / "contrast" / "1"), allow_empty=True)
    assert sorted(t for _, t in dataset.samples) == sorted(wnid_to_label()[i.split("/")[0]] for i in ids)


@pytest.fixture(scope="module")
def cifar_release(tmp_path_factory):
    output = tmp_path_factory.mktemp("cifar") / "release"
    build_imagenet_c(str(output), SourceSelection(), ImageNetCConfig.select(["contrast"], [1, 2], edition="cifar"),
                     RunOptions(workers=1, progress_interval=3600))
    return output


def test_robustbench_load_cifar10c_reads_the_cifar_release_unchanged(cifar_release, robustbench_data):
    count = len(SAMPLE_CIFAR10_LABELS)
    x, y = robustbench_data.load_cifar10c(n_examples=count, severity=1, data_dir=str(cifar_release),
                                          corruptions=("contrast",))
    rows = np.load(cifar_release / "CIFAR-10-C" / "contrast.npy")[:count]
    assert y.tolist() == list(SAMPLE_CIFAR10_LABELS)
    np.testing.assert_allclose(x.numpy(), rows.transpose(0, 3, 1, 2) / 255.0, atol=1e-6)
