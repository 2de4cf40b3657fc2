"""ImageNet-P build pieces that need no pipeline: the config, one video, the release document."""
import hashlib

import numpy as np
import pytest
from skimage import data

from schemas.configs import ImageNetPConfig
from pipelines.beam.imagenet_p import (SequenceTask, imagenet_p_document, make_video,
                                  one_image_per_video_name, video_name)
from pipelines.formats.video import decode_frames_lossless, decode_video
from schemas.records import Failure, Locator, OutputRecord, SourceEntry
from transforms import example_rng, example_seed, perturb_sequence, preprocess_uncropped


def entry(key="n02123045/ILSVRC2012_val_00001341.JPEG"):
    return SourceEntry(key=key, wnid=key.split("/")[0], label=281, locator=Locator(f"/in/{key}"), source=key)


def test_default_config_is_every_dataset_at_the_reference_preset():
    config = ImageNetPConfig()
    assert len(config.pairs) == 20 and config.preset == "veryslow" and config.simd is True
    assert config.tfds_frames == "decoded"
    assert config.groups[:4] == ("gaussian_noise", "gaussian_noise_2", "gaussian_noise_3", "shot_noise")
    assert config.groups[-1] == "shear"


def test_select_orders_filters_and_validates():
    config = ImageNetPConfig.select(["rotate", "speckle_noise"], [3, 1], preset="ultrafast", seed=4)
    assert config.perturbations == ("rotate", "speckle_noise") and config.difficulties == (1, 3)
    assert config.groups == ("rotate", "speckle_noise", "speckle_noise_3")
    assert config.to_json() == {"perturbations": ["rotate", "speckle_noise"], "difficulties": [1, 3],
                                "preset": "ultrafast", "simd": True, "seed": 4,
                                "tfds_frames": "decoded", "edition": "imagenet"}
    for kwargs, message in [({"perturbations": ["fog"]}, "valid names"),
                            ({"perturbations": []}, "valid names"),
                            ({"difficulties": [4]}, "subset of"),
                            ({"preset": "turbo"}, "valid presets"),
                            ({"simd": 1}, "simd"),
                            ({"seed": -1}, "seed"),
                            ({"tfds_frames": "mp4"}, "tfds_frames"),
                            ({"edition": "cifar100"}, "valid editions"),
                            ({"perturbations": ["rotate"], "difficulties": [2]}, "no dataset selected")]:
        with pytest.raises(ValueError, match=message):
            ImageNetPConfig.select(**kwargs)


@pytest.mark.parametrize("tfds_frames", ["decoded", "lossless"])
def test_make_video_is_the_sequence_encoded_and_its_tfds_frames(tfds_frames):
    config = ImageNetPConfig.select(["gaussian_noise"], [2], preset="ultrafast", seed=3, tfds_frames=tfds_frames)
    image = preprocess_uncropped(data.chelsea())
    source = entry()
    record = make_video(SequenceTask(source, image, "gaussian_noise", 2), config)
    assert isinstance(record, OutputRecord)
    frames = perturb_sequence(image, "gaussian_noise", example_rng(3, source.key, "gaussian_noise", 2), 2)
    assert record.key == "gaussian_noise_2/n02123045/ILSVRC2012_val_00001341.mp4"
    assert record.path == "ImageNet-P/" + record.key and record.group == "gaussian_noise_2"
    assert record.data[4:8] == b"ftyp"
    for option in (b"crf=23.0 qcomp=0.80", b"deadzone=6,6", b"threads=1 "):  # x264's SEI: -tune grain, 1 thread
        assert option in record.data, option
    assert record.example["label"] == 281 and record.example["file_name"] == "ILSVRC2012_val_00001341.JPEG"
    expected = decode_video(record.data) if tfds_frames == "decoded" else frames
    np.testing.assert_array_equal(decode_frames_lossless(record.example["video"]), expected)
    assert record.metadata == {
        "image_key": source.key, "wnid": "n02123045", "label": 281, "perturbation": "gaussian_noise",
        "difficulty": 2, "seed": example_seed(3, source.key, "gaussian_noise", 2), "frames": 31,
        "frames_sha256": hashlib.sha256(frames.tobytes()).hexdigest()}


def test_a_sequence_that_meets_bad_input_becomes_a_failure_and_any_other_error_stops(monkeypatch):
    import pipelines.beam.imagenet_p as imagenet_p
    from transforms import BadInput

    def bad_input(*args, **kwargs):
        raise BadInput("this image cannot make the sequence")

    image = np.zeros((256, 300, 3), np.uint8)
    monkeypatch.setattr(imagenet_p, "perturb_sequence", bad_input)
    failure = make_video(SequenceTask(entry(), image, "rotate", 1), ImageNetPConfig.select(["rotate"]))
    assert isinstance(failure, Failure) and failure.stage == "perturb"
    assert failure.key == "rotate/n02123045/ILSVRC2012_val_00001341.mp4" and "BadInput" in failure.reason
    monkeypatch.undo()
    tiny = np.zeros((10, 10, 3), np.uint8)  # not a Resize(256) output: a bug of the caller, not bad data
    with pytest.raises(ValueError, match=r"min\(H, W\) = 256"):
        make_video(SequenceTask(entry(), tiny, "rotate", 1), ImageNetPConfig.select(["rotate"]))


def test_images_sharing_a_video_name_keep_the_first_by_key():
    jpeg, png = entry("n01440764/x.JPEG"), entry("n01440764/x.png")
    assert video_name(jpeg) == video_name(png) == "n01440764/x.mp4"
    other = entry("n01440764/y.JPEG")
    kept, (rejected,) = one_image_per_video_name([png, other, jpeg])
    assert kept == [other, jpeg]  # input order
    assert rejected == Failure(png.key, png.source, "list", "duplicate video name: n01440764/x.png and "
                               "n01440764/x.JPEG would both make <dataset>/n01440764/x.mp4; n01440764/x.JPEG is used")
    assert one_image_per_video_name([entry("n01440764/X.png"), jpeg])[0] == [entry("n01440764/X.png")]  # case-folded


def test_document_records_the_encoder_settings_and_tfds_configs():
    document = imagenet_p_document(ImageNetPConfig.select(["shot_noise", "tilt"], preset="fast", simd=False,
                                                          tfds_frames="lossless"))
    assert (document.edition, document.benchmark, document.tree) == ("imagenet", "p", "ImageNet-P")
    assert document.config.preset == "fast" and document.config.simd is False
    assert document.video.encoder.x264_params == "asm=0"
    assert document.video.encoder.cpu_capabilities == "none!"
    assert document.video.tfds_frames.source == "lossless"
    assert document.video.rate_control == {"shot_noise": "-tune grain", "tilt": "-crf 20"}
    assert (document.video.pixel_format, document.video.threads) == ("yuv444p", 1)
    assert document.tfds.name == "imagenet_p"
    assert document.tfds.configs == ("shot_noise", "shot_noise_2", "shot_noise_3", "tilt")
