"""The WebDataset shard format: keys, member types, shard plans and tar bytes (no Beam)."""
from __future__ import annotations

import io
import tarfile

import pytest

from pipelines.formats.webdataset import (MAX_SHARD_BYTES, member_extension, plan_shards, read_shard,
                                          sample_bytes, sample_key, sample_size, write_shards)


def test_keys_are_class_and_stem_without_dots():
    assert sample_key("ImageNet-C/fog/3/n01440764/ILSVRC2012_val_00000293.JPEG") == "n01440764_ILSVRC2012_val_00000293"
    assert sample_key("ImageNet-P/rotate/n02123045/ILSVRC2012_val_00001341.mp4") == "n02123045_ILSVRC2012_val_00001341"
    assert sample_key("Tiny-ImageNet-C/frost/1/n01443537/val_1.2.JPEG") == "n01443537_val_1_2"


def test_member_types_follow_the_tree_files():
    assert [member_extension(p) for p in ("a/b/x.JPEG", "a/b/x.jpg", "a/b/x.mp4", "a/b/x.png")] == [
        "jpg", "jpg", "mp4", "png"]
    with pytest.raises(ValueError, match="no WebDataset member type"):
        member_extension("CIFAR-10-C/fog.npy")


def test_shard_plans_stay_under_the_limit_and_keep_order():
    assert plan_shards([]) == []
    assert plan_shards([10] * 5) == [(0, 5)]
    assert plan_shards([8_000] * 5, max_bytes=30_000) == [(0, 2), (2, 4), (4, 5)]
    assert plan_shards([50_000, 10], max_bytes=30_000) == [(0, 1), (1, 2)]  # too big: alone
    assert MAX_SHARD_BYTES == 10 ** 9


def test_sample_bytes_are_what_tarfile_reads_and_sized_in_advance():
    data = bytes(range(256)) * 5
    chunk = sample_bytes("n01440764_x", "jpg", data, 7)
    assert len(chunk) == sample_size("n01440764_x", "jpg", len(data), 7)
    [(key, members)] = list(read_shard(io.BytesIO(chunk + b"\0" * 10240)))
    assert (key, members) == ("n01440764_x", {"jpg": data, "cls": b"7"})
    with tarfile.open(fileobj=io.BytesIO(chunk + b"\0" * 10240)) as archive:
        assert [(m.name, m.mtime, m.uid, m.uname, m.mode) for m in archive] == [
            ("n01440764_x.jpg", 0, 0, "", 0o644), ("n01440764_x.cls", 0, 0, "", 0o644)]


def test_repeated_keys_and_wrong_sizes_are_refused(tmp_path):
    (tmp_path / "T" / "c" / "n1").mkdir(parents=True)
    (tmp_path / "T/c/n1/a.JPEG").write_bytes(b"abc")
    with pytest.raises(ValueError, match="same WebDataset key"):
        write_shards(str(tmp_path), "c", [("n1_a", "T/c/n1/a.JPEG", 3, 0)] * 2)
    with pytest.raises(ValueError, match="the manifest says 4"):
        write_shards(str(tmp_path), "c", [("n1_a", "T/c/n1/a.JPEG", 4, 0)])


def test_stacked_sequences_refuse_webdataset_in_one_line():
    from pipelines.formats.release_formats import check_build_formats
    from pipelines.formats.release_sink import BuildKind

    check_build_formats(["tree", "webdataset"], BuildKind("p", "imagenet", stacked=False))
    check_build_formats(["tfds", "webdataset"], BuildKind("c", "cifar", stacked=True))  # ImageNet-P's rules only
    with pytest.raises(ValueError, match="ImageNet-P writes stacked .npy sequences"):
        check_build_formats(["tree", "webdataset"], BuildKind("p", "cifar", stacked=True))
    with pytest.raises(ValueError, match="needs tree too: its samples are the tree's MP4 files"):
        check_build_formats(["tfds", "webdataset"], BuildKind("p", "imagenet", stacked=False))
