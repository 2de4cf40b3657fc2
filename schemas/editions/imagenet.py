"""The ``imagenet`` edition (224 x 224), the default: ImageNet-C as ``make_imagenet_c.py`` makes it.

Its severity tables are :data:`schemas.imagenet_c.CORRUPTIONS`; the TFDS dataset is
``imagenet2012_corrupted`` (:data:`schemas.tfds.IMAGENET2012_CORRUPTED`).
"""
from schemas.baselines import ALEXNET_IMAGENET_C
from schemas.edition import (CLEAN_TEMPLATE, IMAGENET_LABELS, JPEG, CEdition, Card, Edition, Layout, ModelInput,
                            Preprocessing, Scoring, TfdsNames)
from schemas.inputs import IMAGENET_VAL
from schemas.imagenet_p import PERTURBATIONS
from schemas.imagenet_p_editions import MP4, Arrangement, PEdition, PTfdsNames
from schemas.wnids import imagenet_wnids
from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE
from schemas.release import C_TREE, P_TREE

__all__ = ["RESIZE_SHORT_SIDE", "P", "EDITION"]

RESIZE_SHORT_SIDE = 256

P = PEdition(
    name="imagenet", frame_size=IMAGE_SIZE, input="resized256",
    arrangement=Arrangement(view=(("center_crop", IMAGE_SIZE),)),
    perturbations=PERTURBATIONS,
    output=MP4, trees=(P_TREE,), num_classes=(1000,),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_p.py",
    preprocessing="Resize(256) then RGB; CenterCrop(224) after whole-image moves, before pixel operations",
    tfds={"imagenet": PTfdsNames(
        "imagenet_p", (IMAGE_SIZE, IMAGE_SIZE), imagenet_wnids(), "validation", "ImageNet-P",
        description=("ImageNet-P built by imagenet-cp: each ImageNet validation image, Resize(256), perturbed "
                     "into a sequence of 224x224 frames as hendrycks/robustness's make_imagenet_p.py does, with "
                     "a per-example seed. `video` holds, as PNGs, the frames decoded from the ImageNet-P/ tree's "
                     "H.264 MP4s (or the frames before the encode, for a release built with --tfds-frames "
                     "lossless; release.json says which); `file_name` is the source image's file name."),
        release_note=("imagenet-cp: faithful to the reference schedules, per-example seeds, frames decoded from "
                      "the release's MP4s."))})
"""The ImageNet-P facts (``make_imagenet_p.py``); TFDS has no ImageNet-P, a release declares ``imagenet_p``."""

EDITION = Edition(
    name="imagenet",
    title="ImageNet-C",
    image_size=IMAGE_SIZE,
    preprocessing=Preprocessing(
        steps=(("resize_short_side", RESIZE_SHORT_SIDE), ("center_crop", IMAGE_SIZE)),
        description="RGB, torchvision Resize(256) (PIL bilinear), CenterCrop(224)"),
    sources=("imagenet",),
    card=Card("224x224", inputs={"imagenet": IMAGENET_VAL}),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"imagenet": Layout(
            tree=C_TREE, path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=1000,
            label_space=IMAGENET_LABELS,
            clean_template=CLEAN_TEMPLATE,
            tfds=TfdsNames("imagenet2012_corrupted", "3.1.0", "validation"))},
        examples_per_shard=2048,
        reference="ImageNet-C/create_c/make_imagenet_c.py"),
    p=P,
    model_input=ModelInput(IMAGE_SIZE, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), crop_any_size=True),
    scoring=Scoring(paper_metrics=True, baseline=ALEXNET_IMAGENET_C, in_distribution=True),
)
