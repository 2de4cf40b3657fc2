"""ImageNet-C builds of the other editions through the same Beam graph: CIFAR-10/100-C (.npy and
TFDS cifar10_corrupted), Tiny-ImageNet-C, the 299 and 64x64 JPEG trees. Tiny builds: one
corruption, few images."""
import hashlib
import io
import json
import pickle
import tarfile

import numpy as np
import pytest
from PIL import Image

import transforms
from pipelines.beam.runner import RunOptions
from pipelines.beam.build import SourceSelection
from pipelines.beam.imagenet_c import build_imagenet_c
from pipelines.inputs.families import read_cifar, write_cifar_sample, write_tinyimagenet_sample
from schemas.configs import ImageNetCConfig
from pipelines.beam.npy_release import npy_header
from pipelines.release.package import package_release
from pipelines.release.verify import verify_release
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def build(output, edition, corruptions, severities, selection=SourceSelection()):
    config = ImageNetCConfig.select(corruptions, severities, edition=edition)
    return build_imagenet_c(str(output), selection, config, run=RunOptions(workers=1, progress_interval=3600))


def manifest(release_dir, config):
    return [json.loads(line) for line in (release_dir / "manifest" / f"{config}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def cifar_release(tmp_path_factory):
    output = tmp_path_factory.mktemp("cifar") / "release"
    return output, build(output, "cifar", ["glass_blur"], [1, 2])


def test_cifar_release_is_the_official_npy_layout(cifar_release, tmp_path):
    output, result = cifar_release
    assert result.failures == 0
    images, labels, _, family = read_cifar(write_cifar_sample(str(tmp_path)))
    assert family == "cifar10"
    stack = np.load(output / "CIFAR-10-C" / "glass_blur.npy")
    assert stack.shape == (2 * len(images), 32, 32, 3) and stack.dtype == np.uint8
    np.testing.assert_array_equal(np.load(output / "CIFAR-10-C" / "labels.npy"), np.tile(np.uint8(labels), 2))
    for severity in (1, 2):
        for row in manifest(output, f"frosted_glass_blur_{severity}"):
            position = int(row["image_key"].split(".")[0])
            expected = transforms.corrupt(images[position], "glass_blur", severity,
                                          np.random.RandomState(row["seed"]), edition="cifar")
            np.testing.assert_array_equal(stack[(severity - 1) * len(images) + position], expected)
            assert row["path"] == "CIFAR-10-C/glass_blur.npy"
            assert row["sha256"] == hashlib.sha256(expected.tobytes()).hexdigest()
    raw = (output / "CIFAR-10-C" / "labels.npy").read_bytes()
    buffer = io.BytesIO()
    np.save(buffer, np.load(output / "CIFAR-10-C" / "labels.npy"))
    assert raw == buffer.getvalue()  # the bytes np.save writes


def test_cifar_release_loads_through_unchanged_tfds(cifar_release):
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = cifar_release
    stack = np.load(output / "CIFAR-10-C" / "glass_blur.npy")
    labels = np.load(output / "CIFAR-10-C" / "labels.npy")
    dataset = tfds.load("cifar10_corrupted/frosted_glass_blur_1", data_dir=str(output / "tfds"), download=False,
                        split="test")
    loaded = sorted((ex["image"].numpy().tobytes(), int(ex["label"])) for ex in dataset)
    n = len(labels) // 2
    assert loaded == sorted((stack[i].tobytes(), int(labels[i])) for i in range(n))


def test_cifar_release_verifies_and_packages_as_one_tar_and_a_clean_tar(cifar_release):
    output, _ = cifar_release
    report = verify_release(str(output))
    assert report.ok, report.text()
    tar_path, clean_tar = package_release(str(output))
    assert tar_path.endswith("CIFAR-10-C.tar") and clean_tar.endswith("CIFAR-10-C-clean.tar")
    with tarfile.open(tar_path) as archive:
        assert archive.getnames() == ["CIFAR-10-C", "CIFAR-10-C/glass_blur.npy", "CIFAR-10-C/labels.npy"]
    with tarfile.open(clean_tar) as archive:
        assert archive.getnames() == ["CIFAR-10-C", "CIFAR-10-C/clean.npy"]
    assert verify_release(str(output)).ok


def test_cifar_release_holds_clean_npy_and_no_clean_leaves_the_other_bytes_alone(cifar_release, tmp_path):
    output, _ = cifar_release
    images, _, _, _ = read_cifar(write_cifar_sample(str(tmp_path)))
    clean = np.load(output / "CIFAR-10-C" / "clean.npy")
    assert clean.shape == (len(images), 32, 32, 3) and clean.dtype == np.uint8
    for i, image in enumerate(images):  # input order, as the corruptions received them
        np.testing.assert_array_equal(clean[i], transforms.preprocess(image, edition="cifar"))
    rows = manifest(output, "clean")
    assert len(rows) == len(images) and {r["path"] for r in rows} == {"CIFAR-10-C/clean.npy"}
    assert all(r["severity"] is None and r["corruption"] is None for r in rows)
    sums = (output / "SHA256SUMS").read_text()
    assert "CIFAR-10-C/clean.npy" in sums
    plain = tmp_path / "no-clean"
    config = ImageNetCConfig.select(["glass_blur"], [1, 2], edition="cifar", clean=False)
    build_imagenet_c(str(plain), SourceSelection(), config, run=RunOptions(workers=1, progress_interval=3600))
    assert not (plain / "CIFAR-10-C" / "clean.npy").exists()
    for name in ("glass_blur.npy", "labels.npy"):
        assert (plain / "CIFAR-10-C" / name).read_bytes() == (output / "CIFAR-10-C" / name).read_bytes()


def test_cifar_release_clean_tfds_config_loads_from_its_directory(cifar_release):
    tfds = pytest.importorskip("tensorflow_datasets")
    output, _ = cifar_release
    clean = np.load(output / "CIFAR-10-C" / "clean.npy")
    labels = np.load(output / "CIFAR-10-C" / "labels.npy")
    (version,) = (output / "tfds" / "cifar10_corrupted" / "clean").iterdir()
    builder = tfds.builder_from_directory(str(version))
    loaded = sorted((ex["image"].tobytes(), int(ex["label"])) for ex in tfds.as_numpy(builder.as_dataset(split="test")))
    assert loaded == sorted((clean[i].tobytes(), int(labels[i])) for i in range(len(clean)))


def test_cifar100_pickle_gives_cifar100_c(tmp_path):
    root = tmp_path / "cifar-100-python"
    root.mkdir()
    rng = np.random.RandomState(0)
    data = rng.randint(0, 256, (3, 3072)).astype(np.uint8)
    with open(root / "test", "wb") as stream:
        pickle.dump({b"data": data, b"fine_labels": [5, 99, 0], b"coarse_labels": [1, 2, 3],
                     b"filenames": [b"a.png", b"b.png", b"c.png"]}, stream, protocol=2)
    output = tmp_path / "release"
    result = build(output, "cifar", ["contrast"], [1], SourceSelection(str(root)))
    assert result.release.tree == "CIFAR-100-C" and result.release.tfds.name == "cifar100_corrupted"
    stack = np.load(output / "CIFAR-100-C" / "contrast.npy")
    images = data.reshape(3, 3, 32, 32).transpose(0, 2, 3, 1)
    seeds = {row["image_key"]: row["seed"] for row in manifest(output, "contrast_1")}
    for i in range(3):
        np.testing.assert_array_equal(stack[i], transforms.corrupt(
            images[i], "contrast", 1, np.random.RandomState(seeds[f"{i:05d}.png"]), edition="cifar"))
    assert np.load(output / "CIFAR-100-C" / "labels.npy").tolist() == [5, 99, 0]
    assert verify_release(str(output)).ok


def test_a_pickle_that_runs_code_is_refused_in_one_line(tmp_path, capsys):
    root = tmp_path / "cifar-10-batches-py"
    root.mkdir()

    class Evil:
        def __reduce__(self):
            return (print, ("owned",))

    (root / "test_batch").write_bytes(pickle.dumps({b"data": Evil(), b"labels": []}))
    code = cli(["build-c", "--edition", "cifar", "--input", str(root), "--output", str(tmp_path / "out")])
    err = capsys.readouterr()
    assert code == 2 and "owned" not in err.out
    assert "refusing to load builtins.print" in err.err and len(err.err.strip().splitlines()) == 1


def test_tinyimagenet_folder_gives_the_tiny_imagenet_c_tree(tmp_path):
    root = write_tinyimagenet_sample(str(tmp_path / "input"))
    (tmp_path / "input" / "tiny-imagenet-200" / "val" / "images" / "stray.JPEG").write_bytes(b"x")
    output = tmp_path / "release"
    code = cli(["build-c", "--edition", "tinyimagenet", "--input", root, "--output", str(output),
                "--corruptions", "contrast", "--severities", "1", "--workers", "1"])
    assert code == 1  # the stray file is a failure, everything else is built
    failures = [json.loads(line) for line in (output / "failures.jsonl").read_text().splitlines()]
    assert [(f["source"], f["stage"]) for f in failures] == [("val/images/stray.JPEG", "list")]
    rows = manifest(output, "contrast_1")
    assert len(rows) == 8
    annotations = dict(line.split("\t")[:2] for line in
                       (tmp_path / "input" / "tiny-imagenet-200" / "val" / "val_annotations.txt").read_text().splitlines())
    for row in rows:
        name = row["key"].rsplit("/", 1)[1]
        assert row["path"] == f"Tiny-ImageNet-C/contrast/1/{annotations[name]}/{name}"
        source = (tmp_path / "input" / "tiny-imagenet-200" / "val" / "images" / name).read_bytes()
        array = transforms.corrupt(transforms.preprocess(source, edition="tinyimagenet"), "contrast", 1,
                                   np.random.RandomState(row["seed"]), edition="tinyimagenet")
        assert (output / row["path"]).read_bytes() == transforms.encode_jpeg(array)
    assert verify_release(str(output)).ok
    tar_path, clean_path = package_release(str(output))
    with tarfile.open(tar_path) as archive:
        assert tar_path.endswith("Tiny-ImageNet-C.tar") and archive.getnames()[:2] == [
            "Tiny-ImageNet-C", "Tiny-ImageNet-C/contrast"]
    clean = manifest(output, "clean")  # the images as the corruptions received them, in a tar of their own
    assert [r["path"] for r in clean] == [f"Tiny-ImageNet-C/clean/{r['image_key']}" for r in rows]
    with tarfile.open(clean_path) as archive:
        assert clean_path.endswith("Tiny-ImageNet-C-clean.tar")
        assert sorted(m.name for m in archive.getmembers() if m.isfile()) == sorted(r["path"] for r in clean)


@pytest.mark.parametrize("edition,side,tree,dataset", [
    ("inception", 299, "ImageNet-C-299", "imagenet2012_corrupted_299"),
    ("imagenet64", 64, "ImageNet-64x64-C", "imagenet64x64_corrupted")])
def test_imagenet_editions_give_jpeg_trees_and_tfds_datasets(tmp_path, edition, side, tree, dataset):
    output = tmp_path / "release"
    result = build(output, edition, ["contrast"], [1], SourceSelection(limit=2))
    assert result.failures == 0 and result.release.tree == tree and result.release.image_size == side
    rows = manifest(output, "contrast_1")
    assert len(rows) == 2
    for row in rows:
        assert row["path"].startswith(f"{tree}/contrast/1/{row['wnid']}/")
        assert Image.open(output / row["path"]).size == (side, side)
    assert verify_release(str(output)).ok
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder_from_directory(str(output / "tfds" / dataset / "contrast_1" / "1.0.0"))
    loaded = {ex["file_name"].numpy().decode(): ex["image"].numpy().shape
              for ex in builder.as_dataset(split="validation")}
    assert loaded == {row["key"].rsplit("/", 1)[1]: (side, side, 3) for row in rows}


def test_npy_header_is_what_np_save_writes():
    buffer = io.BytesIO()
    np.save(buffer, np.zeros((50, 32, 32, 3), np.uint8))
    assert buffer.getvalue()[:len(npy_header((50, 32, 32, 3)))] == npy_header((50, 32, 32, 3))
    assert len(npy_header((50000, 32, 32, 3))) == 128  # as in the official CIFAR-10-C files


def test_preview_draws_edition_sized_cells(tmp_path):
    from skimage import data

    from pipelines.bench.preview import contact_sheet, sheet_size

    sheet = contact_sheet(data.chelsea(), ["fog", "contrast"], edition="cifar")
    assert sheet.size == sheet_size(2, cell=128)  # 32-pixel outputs enlarged 4x
    x = transforms.preprocess(data.chelsea(), edition="cifar")
    cell = np.asarray(sheet)[30:30 + 128, 200:200 + 128]
    np.testing.assert_array_equal(cell[::4, ::4], x)  # the clean column, pixel-replicated
