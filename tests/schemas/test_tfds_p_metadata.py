"""The ImageNet-P TFDS declarations: configs, package categories, and metadata equal to what
tensorflow_datasets writes itself for a Video feature."""
import json

import numpy as np
import pytest

from schemas.imagenet_p import PERTURBATIONS
from schemas.editions import category_trees
from schemas.tfds_p import DATASETS, IMAGENET_P, Video, imagenet_p_config


def test_twenty_configs_named_as_the_reference_folders():
    assert len(DATASETS) == 20 and len(IMAGENET_P.config_descriptions) == 20  # 3 noise types x 3 + 11
    assert [imagenet_p_config("gaussian_noise", d) for d in (1, 2, 3)] == [
        "gaussian_noise", "gaussian_noise_2", "gaussian_noise_3"]
    assert imagenet_p_config("translate", 1) == "translate"
    assert "41 frames" in IMAGENET_P.config_descriptions["translate"]
    assert IMAGENET_P.config_dir("shear") == "tfds/imagenet_p/shear/1.0.0"
    with pytest.raises(ValueError, match=r"must be one of \[1\]"):
        imagenet_p_config("rotate", 2)
    with pytest.raises(ValueError, match="valid names"):
        imagenet_p_config("fog", 1)


def test_package_categories_cover_every_dataset_folder():
    categories = category_trees()["ImageNet-P"]
    assert set(categories) == set(IMAGENET_P.config_descriptions)
    assert set(categories.values()) == {"noise", "blur", "weather", "digital", "validation"}
    assert categories["shot_noise_3"] == "noise" and categories["tilt"] == "digital"
    assert {name for name, c in categories.items() if c == "validation"} == {
        "speckle_noise", "speckle_noise_2", "speckle_noise_3", "gaussian_blur", "spatter", "shear"}
    assert all(categories[PERTURBATIONS[n].dataset_name(d)] == PERTURBATIONS[n].category for n, d in DATASETS)


def test_metadata_files_equal_write_metadata_output(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    tf = pytest.importorskip("tensorflow")
    folder = tmp_path / "imagenet_p" / "rotate" / "1.0.0"
    folder.mkdir(parents=True)
    features = tfds.features.FeaturesDict({
        "video": tfds.features.Video(shape=(None, 224, 224, 3)),
        "label": tfds.features.ClassLabel(names=list(IMAGENET_P.features["label"].names)),
        "file_name": tfds.features.Text()})
    example = features.serialize_example({"video": np.zeros((3, 224, 224, 3), np.uint8), "label": 7,
                                          "file_name": "x.JPEG"})
    with tf.io.TFRecordWriter(str(folder / IMAGENET_P.shard_name(0, 1))) as writer:
        writer.write(example)
    tfds.folder_dataset.write_metadata(data_dir=str(folder), features=features, split_infos=None,
                                       supervised_keys=("video", "label"), check_data=False)
    assert (folder / "features.json").read_text() == IMAGENET_P.features_json()
    assert {n: (folder / n).read_text() for n in IMAGENET_P.metadata_files()} == IMAGENET_P.metadata_files()
    theirs = json.loads((folder / "dataset_info.json").read_text())
    ours = json.loads(IMAGENET_P.dataset_info_json("rotate", [1], len(example)))
    for key in ("name", "version", "fileFormat", "splits", "supervisedKeys"):
        assert ours[key] == theirs[key], key


def test_video_feature_with_a_fixed_length():
    assert Video(shape=(31, 224, 224, 3)).config()["video"]["shape"]["dimensions"] == ["31", "224", "224", "3"]
