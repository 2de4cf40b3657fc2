"""``imagenet-cp bench --webdataset``: the shard writing of a release, measured without changing it."""
from __future__ import annotations

import json

import pytest

from pipelines.bench.webdataset import format_webdataset_table, measure_webdataset


def fake_release(root):
    """A release's manifest and tree files (what the measurement reads), two images of one config."""
    rows = []
    for number, wnid in enumerate(("n01440764", "n01443537")):
        path = f"ImageNet-C/fog/3/{wnid}/ILSVRC2012_val_0000000{number}.JPEG"
        (root / path).parent.mkdir(parents=True)
        (root / path).write_bytes(bytes([number]) * (700 + number))
        rows.append({"key": path[len("ImageNet-C/"):], "path": path, "bytes": 700 + number, "label": number})
    (root / "manifest").mkdir()
    (root / "manifest" / "fog_3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_measures_every_image_and_the_bytes_the_shards_add(tmp_path):
    release = fake_release(tmp_path / "release")
    before = sorted(p.relative_to(release) for p in release.rglob("*"))
    result = measure_webdataset(str(release), repeats=1)
    assert (result["images"], result["configs"], result["tree_bytes_per_image"]) == (2, 1, 700.5)
    # two tar headers per sample and the padding to 512 bytes, the end blocks and the record padding
    assert result["shard_bytes_per_image"] == 10240 / 2 and result["ms_per_image"] > 0
    assert "2 images in 1 configs" in format_webdataset_table(result)
    assert sorted(p.relative_to(release) for p in release.rglob("*")) == before


def test_a_folder_without_a_tree_is_refused(tmp_path):
    (tmp_path / "manifest").mkdir()
    with pytest.raises(ValueError, match="no config of a folder tree"):
        measure_webdataset(str(tmp_path))
