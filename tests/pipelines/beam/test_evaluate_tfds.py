"""``evaluate`` reading ImageNet-C as TFDS records (``DIR/tfds/<dataset>/<config>/<version>/``)."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

tfds = pytest.importorskip("tensorflow_datasets")
pytest.importorskip("onnxruntime")

from pipelines.beam.inference import Model  # noqa: E402
from pipelines.beam.runner import RunOptions  # noqa: E402
from pipelines.beam.evaluate import evaluate_release  # noqa: E402
from pipelines.evaluation.release_inputs import c_release, tfds_configs  # noqa: E402
from schemas.wnids import imagenet_wnids  # noqa: E402

CONFIGS = ("fog_2", "saturate_5")
DATASET = "imagenet2012_corrupted"


def write_config(version_dir: Path, seed: int) -> None:
    """Four 224 images with the ImageNet-C TFDS features, as one shard plus TFDS metadata."""
    import tensorflow as tf

    features = tfds.features.FeaturesDict({
        "image": tfds.features.Image(shape=(224, 224, 3), encoding_format="jpeg"),
        "label": tfds.features.ClassLabel(names=list(imagenet_wnids())),
        "file_name": tfds.features.Text(),
    })
    version_dir.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    shard = version_dir / f"{DATASET}-validation.tfrecord-00000-of-00001"
    with tf.io.TFRecordWriter(str(shard)) as writer:
        for i in range(4):
            image = np.full((224, 224, 3), rng.integers(0, 256, 3), dtype=np.uint8)
            writer.write(features.serialize_example(
                {"image": image, "label": i % 2, "file_name": f"ILSVRC2012_val_{i:08d}.JPEG"}))
    tfds.folder_dataset.write_metadata(
        data_dir=str(version_dir), features=features,
        filename_template="{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")


@pytest.fixture(scope="module")
def helpers():
    """The tiny ONNX model and its NumPy twin from test_evaluate_release.py (importlib mode)."""
    spec = importlib.util.spec_from_file_location(
        "evaluate_release_helpers", Path(__file__).with_name("test_evaluate_release.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tfds_release(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds_release")
    for seed, name in enumerate(CONFIGS):
        write_config(root / "tfds" / DATASET / name / "1.0.0", seed)
    return root


def test_configs_are_found_by_name(tfds_release):
    assert [config.name for config in tfds_configs(str(tfds_release), c_release(str(tfds_release)))] == list(CONFIGS)


def test_predictions_from_records_match_the_model(tfds_release, helpers, tmp_path):
    model = tmp_path / "tiny.onnx"
    helpers.write_onnx_model(model)
    out = evaluate_release(str(tfds_release), Model(str(model)), out_dir=str(tmp_path / "out"),
                           run=RunOptions(workers=1))
    builder = tfds.builder_from_directory(tfds_configs(str(tfds_release), c_release(str(tfds_release)))[0].location)
    dataset = builder.as_dataset(split="validation", decoders={"image": tfds.decode.SkipDecoding()})
    expected = {f"{imagenet_wnids()[int(e['label'])]}/{e['file_name'].decode()}":
                helpers.reference_top1(e["image"]) for e in tfds.as_numpy(dataset)}
    lines = (out / "predictions/imagenet-c/fog_2.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert {r["key"]: r["top5"][0] for r in rows} == expected
    errors = json.loads((out / "metrics.json").read_text())["imagenet_c"]["errors"]
    assert set(errors) == {"fog", "saturate"} and set(errors["fog"]) == {"2"}
    assert errors["fog"]["2"] == pytest.approx(np.mean([r["top5"][0] != r["label"] for r in rows]))
