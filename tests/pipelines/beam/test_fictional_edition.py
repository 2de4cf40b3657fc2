"""A new edition is one new module: a fictional 128-pixel edition, written here as the module
``imagenet128`` and registered by it, builds ImageNet-C and ImageNet-P on the bundled sample through the
CLI, verifies and packages, and its dataset cards say what the module declares (title, citation, input
terms), with nothing else changed."""
import importlib.util
import json
import tarfile

import numpy as np
import pytest
from PIL import Image

from schemas import editions
from pipelines.release.verify import verify_release
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

MODULE = '''
"""The fictional ``imagenet128`` edition: ImageNet-C at 128 x 128, the 224 tables, Pillow JPEG q85."""
from schemas.edition import (CLEAN_TEMPLATE, IMAGENET_LABELS, JPEG, CEdition, Card, Edition, Layout, ModelInput,
                            Preprocessing, TfdsNames)
from schemas.editions import register_edition
from schemas.imagenet_c import CORRUPTIONS
from schemas.editions.imagenet64 import P_SCHEDULES
from schemas.imagenet_p_editions import MP4, Arrangement, PEdition, PTfdsNames, p_table
from schemas.inputs import IMAGENET_VAL
from schemas.wnids import imagenet_wnids

SIZE = 128

CITATION = """@misc{imagenet128,
  title={ImageNet at 128 pixels, a fictional edition},
  year={2026}
}"""

EDITION = register_edition(Edition(
    name="imagenet128",
    title="ImageNet 128-C (fictional)",
    image_size=SIZE,
    preprocessing=Preprocessing(steps=(("resize_short_side", 146), ("center_crop", SIZE)),
                                description="RGB, Resize(146) (PIL bilinear), CenterCrop(128)"),
    sources=("imagenet",),
    card=Card("128x128, fictional", inputs={"imagenet": IMAGENET_VAL}, citation=CITATION),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"imagenet": Layout(
            tree="ImageNet-128-C", path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=1000,
            label_space=IMAGENET_LABELS,
            clean_template=CLEAN_TEMPLATE,
            tfds=TfdsNames("imagenet128_corrupted", "1.0.0", "validation",
                           description="ImageNet 128-C (fictional), Pillow JPEG q85."))},
        examples_per_shard=4096),
    p=PEdition(
        name="imagenet128", frame_size=SIZE, input="full", arrangement=Arrangement(base=(("resize", SIZE, "bilinear"),)),
        perturbations=p_table(**P_SCHEDULES), output=MP4, trees=("ImageNet-128-P",), num_classes=(1000,),
        reference="fictional", preprocessing="RGB at full size; PIL bilinear 128x128 before every perturbation",
        tfds={"imagenet": PTfdsNames("imagenet128_p", (None, None), imagenet_wnids(), "validation",
                                     "ImageNet 128-P (fictional)")}),
    model_input=ModelInput(SIZE, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
))
'''


@pytest.fixture
def imagenet128(tmp_path):
    path = tmp_path / "imagenet128.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("imagenet128", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.EDITION
    del editions._CATALOGUE["imagenet128"]  # the catalogue as the other tests know it


def test_a_fictional_edition_from_one_module_builds_verifies_and_packages(imagenet128, tmp_path):
    assert editions.EDITIONS["imagenet128"] is imagenet128
    assert "imagenet128 (128;" in editions.edition_help("c")
    output = tmp_path / "release"
    assert cli(["build-c", "--edition", "imagenet128", "--output", str(output), "--workers", "2",
                "--corruptions", "contrast,fog", "--severities", "1"]) == 0
    document = json.loads((output / "release.json").read_text())
    assert (document["edition"], document["benchmark"], document["tree"]) == ("imagenet128", "c", "ImageNet-128-C")
    assert document["image_size"] == 128 and document["tfds"]["name"] == "imagenet128_corrupted"
    images = sorted((output / "ImageNet-128-C" / "fog" / "1").rglob("*.JPEG"))
    assert images and all(Image.open(p).size == (128, 128) for p in images)
    assert np.asarray(Image.open(images[0])).shape == (128, 128, 3)
    assert (output / "tfds" / "imagenet128_corrupted" / "contrast_1" / "1.0.0" / "dataset_info.json").is_file()
    card = (output / "README.md").read_text()
    assert "# ImageNet-128-C\n" in card and "@misc{imagenet128," in card  # an official-style tree names it
    assert "ImageNet's terms of access allow non-commercial research" in card
    assert "tags:" in card and "- edition-imagenet128" in card
    assert verify_release(str(output)).ok
    assert cli(["verify", str(output)]) == 0
    assert cli(["package", str(output)]) == 0
    packages = sorted(p.name for p in (output / "packages").iterdir())
    assert packages == ["SHA256SUMS", "clean.tar", "digital.tar", "weather.tar"]
    with tarfile.open(output / "packages" / "weather.tar") as archive:
        names = archive.getnames()
    assert names[0] == "fog" and all(n.startswith("fog") for n in names) and len(names) > len(images)


def test_the_fictional_editions_imagenet_p_builds_verifies_and_has_its_card(imagenet128, tmp_path):
    import cv2

    assert "imagenet128 (128;" in editions.edition_help("p")
    output = tmp_path / "release-p"
    assert cli(["build-p", "--edition", "imagenet128", "--output", str(output), "--workers", "2",
                "--perturbations", "rotate", "--preset", "ultrafast"]) == 0
    document = json.loads((output / "release.json").read_text())
    assert (document["edition"], document["benchmark"], document["tree"]) == ("imagenet128", "p", "ImageNet-128-P")
    assert document["tfds"]["name"] == "imagenet128_p"
    videos = sorted((output / "ImageNet-128-P" / "rotate").rglob("*.mp4"))
    assert videos
    capture = cv2.VideoCapture(str(videos[0]))
    ok, frame = capture.read()
    capture.release()
    assert ok and frame.shape == (128, 128, 3)
    card = (output / "README.md").read_text()
    assert "# ImageNet-128-P\n" in card and "@misc{imagenet128," in card
    assert "- edition-imagenet128" in card and "- benchmark-p" in card
    assert cli(["verify", str(output)]) == 0
