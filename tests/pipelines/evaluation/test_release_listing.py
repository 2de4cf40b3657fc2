"""evaluate lists a JPEG tree condition from the release's manifest (every key, path and class in
key order), not by walking its class folders; without a manifest (an official download) it walks."""
import json
import shutil

import pytest

from pipelines.evaluation.release_inputs import (c_configs, c_examples, c_release, labelled_paths, manifest_files,
                                                 tree_labels)
from schemas.release import RELEASE_JSON


@pytest.fixture()
def release(sample_release, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(sample_release[0], copy)
    return copy


def _listing(root):
    c = c_release(str(root))
    labels = tree_labels(str(root), c)
    return c, labels, c_configs(str(root), c)


def test_the_manifest_lists_what_the_walk_finds(release):
    c, labels, configs = _listing(release)
    assert len(configs) > 1
    for config in configs:
        listed = manifest_files(config, str(release), c, labels)
        assert listed is not None, config.name
        walked = [((config.name, key, label), path) for key, label, path in labelled_paths(config.location,
                                                                                           labels=labels)]
        assert list(listed) == walked and walked


def test_without_release_json_the_tree_is_walked(release):
    c, labels, configs = _listing(release)
    expected = list(c_examples(configs[0], str(release), c, labels))
    (release / RELEASE_JSON).unlink()
    c, labels, configs = _listing(release)
    assert manifest_files(configs[0], str(release), c, labels) is None
    assert list(c_examples(configs[0], str(release), c, labels)) == expected


def test_a_manifest_row_outside_its_condition_is_refused(release):
    c, labels, configs = _listing(release)
    config = configs[0]
    part = release / "manifest" / f"{config.name}.jsonl"
    rows = [json.loads(line) for line in part.read_text().splitlines()]
    rows[0]["path"] = "elsewhere/" + rows[0]["path"]
    part.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ValueError, match="line 1"):
        list(c_examples(config, str(release), c, labels))


def test_a_releases_tree_and_edition_are_found_one_way(tmp_path):
    from pipelines.evaluation.release_inputs import release_tree
    from schemas.release import Release

    trees = {"ImageNet-C": "imagenet", "CIFAR-10-C": "cifar"}
    named = Release(edition="cifar", benchmark="c", tree="CIFAR-10-C")
    assert release_tree(str(tmp_path), named, trees) == ("CIFAR-10-C", "cifar")  # the tree release.json names
    assert release_tree(str(tmp_path), None, trees) is None  # nothing named, no folder
    (tmp_path / "ImageNet-C").mkdir()
    assert release_tree(str(tmp_path), None, trees) == ("ImageNet-C", "imagenet")  # an official download
    other = Release(edition="imagenet", benchmark="vcr", tree="vcr")  # names no tree of these
    assert release_tree(str(tmp_path), other, trees) == ("ImageNet-C", "imagenet")
