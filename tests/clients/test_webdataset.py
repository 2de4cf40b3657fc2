"""WebDataset shards of ImageNet-C and ImageNet-P releases, read by ``webdataset.WebDataset``."""
from __future__ import annotations

import hashlib
import json
import tarfile

import pytest

from pipelines.beam.build import SourceSelection
from pipelines.beam.imagenet_c import build_imagenet_c
from pipelines.beam.imagenet_p import build_imagenet_p
from pipelines.beam.runner import RunOptions
from pipelines.formats.webdataset import manifest_samples, read_shard, write_shards
from pipelines.release.package import package_release
from pipelines.release.verify import verify_release
from schemas.configs import ImageNetCConfig, ImageNetPConfig
from schemas.release import checksum_line, parse_checksum_lines

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def manifest(release, config):
    return [json.loads(line) for line in (release / "manifest" / f"{config}.jsonl").read_text().splitlines()]


def iterate(release, config):
    """``(key, {extension: bytes})`` of every sample of a config, as WebDataset reads its shards."""
    import webdataset

    shards = sorted(str(p) for p in (release / "webdataset" / config).glob(f"{config}-*.tar"))
    return [(s["__key__"], s) for s in webdataset.WebDataset(shards, shardshuffle=False, empty_check=False)]


def expected_samples(release, config, extension):
    return [(row["path"].rsplit("/", 2)[1] + "_" + row["path"].rsplit("/", 1)[1].rsplit(".", 1)[0],
             (release / row["path"]).read_bytes(), row["label"]) for row in manifest(release, config)]


@pytest.fixture(scope="module")
def c_release(tmp_path_factory):
    output = tmp_path_factory.mktemp("wds_c") / "release"
    build_imagenet_c(str(output), SourceSelection(), ImageNetCConfig.select(["contrast", "fog"], [1]),
                     RunOptions(workers=1, progress_interval=3600), formats=["tfds", "tree", "webdataset"])
    return output


@pytest.fixture(scope="module")
def p_release(tmp_path_factory):
    output = tmp_path_factory.mktemp("wds_p") / "release"
    build_imagenet_p(str(output), SourceSelection(limit=2), ImageNetPConfig.select(["translate"], preset="ultrafast"),
                     RunOptions(workers=1, progress_interval=3600), formats=["tfds", "tree", "webdataset"])
    return output


@pytest.mark.parametrize("config", ["contrast_1", "fog_1", "clean"])
def test_webdataset_iterates_every_c_config_with_the_tree_bytes_and_imagenet_labels(c_release, config):
    samples = iterate(c_release, config)
    assert [(key, s["jpg"], int(s["cls"])) for key, s in samples] == expected_samples(c_release, config, "jpg")
    assert all("." not in key for key, _ in samples) and len(samples) == 8


def test_webdataset_iterates_the_p_videos_with_their_labels(p_release):
    samples = iterate(p_release, "translate")
    assert [(key, s["mp4"], int(s["cls"])) for key, s in samples] == expected_samples(p_release, "translate", "mp4")
    assert len(samples) == 2


def test_the_shards_are_listed_verified_and_a_changed_one_is_caught(c_release, tmp_path):
    listed = parse_checksum_lines((c_release / "SHA256SUMS").read_text().splitlines())
    assert "webdataset/fog_1/fog_1-000000.tar" in listed and json.loads(
        (c_release / "release.json").read_text())["config"]["formats"] == ["tfds", "tree", "webdataset"]
    assert verify_release(str(c_release)).ok
    tars = package_release(str(c_release))  # the tree's packages; the shards are published as they are
    assert tars and verify_release(str(c_release)).ok
    shard = c_release / "webdataset" / "fog_1" / "fog_1-000000.tar"
    original, sums = shard.read_bytes(), (c_release / "SHA256SUMS").read_text()
    try:
        changed = bytearray(original)
        changed[700] ^= 1  # a byte of the first image
        shard.write_bytes(bytes(changed))
        assert "changed: webdataset/fog_1/fog_1-000000.tar" in verify_release(str(c_release)).text()
        # a consistent SHA256SUMS does not hide shards that disagree with the manifest
        samples = manifest_samples((c_release / "manifest" / "fog_1.jsonl").read_text().splitlines())
        relabelled = [(key, path, size, (label + 1) % 1000) for key, path, size, label in samples]
        write_shards(str(tmp_path), "fog_1", relabelled, read=lambda p: (c_release / p).read_bytes())
        shard.write_bytes((tmp_path / "webdataset" / "fog_1" / "fog_1-000000.tar").read_bytes())
        digest = hashlib.sha256(shard.read_bytes()).hexdigest()
        (c_release / "SHA256SUMS").write_text(sums.replace(checksum_line(listed["webdataset/fog_1/fog_1-000000.tar"],
                                                                         "webdataset/fog_1/fog_1-000000.tar"),
                                                           checksum_line(digest, "webdataset/fog_1/fog_1-000000.tar")))
        text = verify_release(str(c_release)).text()
        assert f"webdataset/fog_1/{samples[0][0]}: label b'{(samples[0][3] + 1) % 1000}'" in text
    finally:
        shard.write_bytes(original)
        (c_release / "SHA256SUMS").write_text(sums)
    assert verify_release(str(c_release)).ok


def test_shards_split_at_the_byte_limit_and_are_reproducible(c_release, tmp_path):
    samples = manifest_samples((c_release / "manifest" / "contrast_1.jsonl").read_text().splitlines())
    read = lambda p: (c_release / p).read_bytes()  # noqa: E731
    first = write_shards(str(tmp_path / "a"), "contrast_1", samples, read=read, max_bytes=40_000)
    again = write_shards(str(tmp_path / "b"), "contrast_1", samples, read=read, max_bytes=40_000)
    assert len(first) > 2 and [i.sha256 for i in first] == [i.sha256 for i in again]
    keys = []
    for info in first:
        path = tmp_path / "a" / info.path
        assert path.stat().st_size <= 40_000 and path.stat().st_size % tarfile.RECORDSIZE == 0
        with tarfile.open(path) as archive:
            assert all((m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) == (0, 0, 0, "", "", 0o644) for m in archive)
        with open(path, "rb") as stream:
            keys += [key for key, _ in read_shard(stream)]
    assert keys == [key for key, *_ in samples] == sorted(keys)


def test_cifar_shards_hold_each_row_as_a_lossless_png_with_cifar_labels(tmp_path):
    import io

    import numpy as np
    from PIL import Image

    from pipelines.inputs.families import SAMPLE_CIFAR10_LABELS

    output = tmp_path / "cifar"
    build_imagenet_c(str(output), SourceSelection(), ImageNetCConfig.select(["contrast"], [1, 2], edition="cifar"),
                     RunOptions(workers=1, progress_interval=3600), formats=["tfds", "tree", "webdataset"])
    rows, count = np.load(output / "CIFAR-10-C" / "contrast.npy"), len(SAMPLE_CIFAR10_LABELS)
    for block, config in enumerate(("contrast_1", "contrast_2")):
        samples = iterate(output, config)
        assert [int(s["cls"]) for _, s in samples] == list(SAMPLE_CIFAR10_LABELS)
        for (key, sample), row in zip(samples, rows[block * count:(block + 1) * count]):
            assert "." not in key and np.array_equal(np.asarray(Image.open(io.BytesIO(sample["png"]))), row)
    assert verify_release(str(output)).ok


def test_a_config_whose_shards_are_gone_from_sha256sums_is_caught(c_release):
    sums = (c_release / "SHA256SUMS").read_text()
    shard = c_release / "webdataset" / "contrast_1" / "contrast_1-000000.tar"
    original = shard.read_bytes()
    try:
        shard.unlink()
        (c_release / "webdataset" / "contrast_1").rmdir()
        (c_release / "SHA256SUMS").write_text("".join(line for line in sums.splitlines(True)
                                                      if "webdataset/contrast_1/" not in line))
        assert "webdataset/contrast_1/: no shard listed in SHA256SUMS" in verify_release(str(c_release)).text()
    finally:
        shard.parent.mkdir(exist_ok=True)
        shard.write_bytes(original)
        (c_release / "SHA256SUMS").write_text(sums)
    assert verify_release(str(c_release)).ok
