"""The TFDS metadata we write without TensorFlow equals what tensorflow_datasets writes itself."""
import json

import pytest

from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.tfds import IMAGENET2012_CORRUPTED as DATASET
from schemas.tfds import imagenet_c_config
from schemas.wnids import imagenet_wnids


def test_configs_and_names_match_tfds_imagenet2012_corrupted():
    tfds = pytest.importorskip("tensorflow_datasets")
    builder_cls = tfds.builder_cls("imagenet2012_corrupted")
    ours = {imagenet_c_config(c, s) for c in CORRUPTIONS for s in SEVERITIES}
    assert ours == {c.name for c in builder_cls.BUILDER_CONFIGS}
    assert set(DATASET.config_descriptions) == ours | {"clean"}  # ours: tfds.load reads it from files
    assert {str(c.version) for c in builder_cls.BUILDER_CONFIGS} == {DATASET.version}
    assert DATASET.config_dir("fog_3") == "tfds/imagenet2012_corrupted/fog_3/3.1.0"
    assert DATASET.shard_name(2, 12) == "imagenet2012_corrupted-validation.tfrecord-00002-of-00012"
    with pytest.raises(ValueError, match="valid configs"):
        DATASET.config_dir("fog_6")
    with pytest.raises(ValueError, match="shard index"):
        DATASET.shard_name(12, 12)


def test_metadata_files_equal_write_metadata_output(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    tf = pytest.importorskip("tensorflow")
    folder = tmp_path / "imagenet2012_corrupted" / "fog_3" / "3.1.0"
    folder.mkdir(parents=True)
    features = tfds.builder("imagenet2012_corrupted/fog_3", data_dir=str(tmp_path / "unused")).info.features
    example = features.serialize_example({"image": tf.zeros((224, 224, 3), tf.uint8).numpy(), "label": 7,
                                          "file_name": "x.JPEG"})
    for index, count in enumerate((2, 1)):
        with tf.io.TFRecordWriter(str(folder / DATASET.shard_name(index, 2))) as writer:
            for _ in range(count):
                writer.write(example)
    tfds.folder_dataset.write_metadata(data_dir=str(folder), features=features, split_infos=None,
                                       supervised_keys=("image", "label"), check_data=False)
    assert (folder / "features.json").read_text() == DATASET.features_json()
    assert {n: (folder / n).read_text() for n in DATASET.metadata_files()} == DATASET.metadata_files()
    assert DATASET.metadata_files()["label.labels.txt"].split() == list(imagenet_wnids())
    theirs = json.loads((folder / "dataset_info.json").read_text())
    ours = json.loads(DATASET.dataset_info_json("fog_3", [2, 1], 3 * len(example)))
    for key in ("name", "version", "fileFormat", "splits", "supervisedKeys"):
        assert ours[key] == theirs[key], key
    assert ours["configName"] == "fog_3"
