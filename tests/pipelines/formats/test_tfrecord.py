"""tf.train.Example and TFRecord framing written without TensorFlow, checked against TensorFlow."""
import io

import pytest

from pipelines.formats.tfrecord import (FRAMING_BYTES, TFRecordError, decode_example, encode_example, frame_record,
                                iter_records, masked_crc32c)

FEATURES = {"image": b"\xff\xd8jpeg bytes\x00", "label": 281, "file_name": "ILSVRC2012_val_00001341.JPEG",
            "frames": [b"a", b"bc"], "ints": [-1, 0, 2**40], "score": 0.5}


def test_crc32c_check_value():
    import google_crc32c
    assert google_crc32c.value(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert masked_crc32c(b"") == 0xA282EAD8


def test_example_round_trip():
    decoded = decode_example(encode_example(FEATURES))
    assert decoded == {"image": [FEATURES["image"]], "label": [281], "file_name": [FEATURES["file_name"].encode()],
                       "frames": [b"a", b"bc"], "ints": [-1, 0, 2**40], "score": [0.5]}


def test_long_values_take_multi_byte_lengths():
    for size in (127, 128, 300, 16383, 16384, 200_000):
        features = {"image": bytes(range(256)) * (size // 256) + b"x" * (size % 256), "label": 999,
                    "file_name": "n" * size}
        data = encode_example(features)
        assert decode_example(data) == {"image": [features["image"]], "label": [999],
                                        "file_name": [features["file_name"].encode()]}


def test_example_is_independent_of_insertion_order():
    assert encode_example(dict(reversed(list(FEATURES.items())))) == encode_example(FEATURES)


def test_bad_feature_value_is_rejected():
    with pytest.raises(ValueError, match="bytes/str, int or float"):
        encode_example({"mixed": [1, b"x"]})


def test_framing_round_trip_and_corruption_detected():
    records = [b"", b"one", encode_example(FEATURES)]
    data = b"".join(frame_record(r) for r in records)
    assert len(data) == sum(len(r) for r in records) + FRAMING_BYTES * len(records)
    assert [r for _, r in iter_records(io.BytesIO(data))] == records
    flipped = bytearray(data)
    flipped[-6] ^= 1
    with pytest.raises(TFRecordError, match="CRC"):
        list(iter_records(io.BytesIO(bytes(flipped))))
    with pytest.raises(TFRecordError, match="truncated"):
        list(iter_records(io.BytesIO(data[:-3])))


def test_tensorflow_reads_our_records_and_we_read_its(tmp_path):
    tf = pytest.importorskip("tensorflow")
    ours = tmp_path / "ours.tfrecord"
    ours.write_bytes(b"".join(frame_record(encode_example(FEATURES)) for _ in range(2)))
    parsed = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(ours))]
    assert len(parsed) == 2
    feature = parsed[0].features.feature
    assert feature["image"].bytes_list.value == [FEATURES["image"]]
    assert feature["label"].int64_list.value == [281]
    assert list(feature["ints"].int64_list.value) == [-1, 0, 2**40]
    assert feature["score"].float_list.value == [0.5]

    theirs = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as writer:
        writer.write(parsed[0].SerializeToString())
    with open(theirs, "rb") as stream:
        (_, data), = list(iter_records(stream))
    assert decode_example(data)["frames"] == [b"a", b"bc"]


def test_an_example_is_encoded_from_its_declared_features():
    from schemas.tfds import IMAGENET2012_CORRUPTED, ClassLabel, Image, Scalar
    from schemas.tfds_p import Video

    values = {"image": FEATURES["image"], "label": 281, "file_name": FEATURES["file_name"]}
    assert encode_example(values, IMAGENET2012_CORRUPTED.features) == encode_example(values)  # the same bytes
    cifar = {"image": Image(shape=(32, 32, 3), encoding_format="png"), "label": ClassLabel(num_classes=10)}
    with pytest.raises(ValueError, match=r"values of undeclared feature\(s\) file_name; declared: image, label"):
        encode_example(values, cifar)  # a value the dataset does not declare would be lost without a word
    declared = {"video": Video(shape=(None, 8, 8, 3)), "delta_v": Scalar("float32")}
    decoded = decode_example(encode_example({"video": (b"a", b"bc"), "delta_v": 1}, declared))
    assert decoded == {"video": [b"a", b"bc"], "delta_v": [1.0]}  # the int stored as the declared float


def test_a_value_that_is_not_of_its_declared_feature_is_refused():
    from schemas.tfds import IMAGENET2012_CORRUPTED

    values = {"image": FEATURES["image"], "label": "281", "file_name": FEATURES["file_name"]}
    with pytest.raises(ValueError, match="feature 'label' is declared as ClassLabel"):
        encode_example(values, IMAGENET2012_CORRUPTED.features)
    with pytest.raises(ValueError, match="no value for its declared feature.*file_name"):
        encode_example({"image": FEATURES["image"], "label": 281}, IMAGENET2012_CORRUPTED.features)
