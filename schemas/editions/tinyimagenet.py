"""The ``tinyimagenet`` edition (64 x 64, 200 classes): Tiny-ImageNet-C as ``make_tinyimagenet_c.py`` makes it.

Its corruption code is that of ``make_imagenet_64_c.py`` (the two reference files differ only in their inputs), so
the tables are :data:`schemas.editions.imagenet64.CORRUPTIONS`; the edition differs in its input
(Tiny ImageNet's validation images, already 64x64 crops of their object) and its release tree.
"""
from schemas.edition import (CLEAN_TEMPLATE, JPEG, RELEASE_LABELS, CEdition, Card, Edition, Layout, ModelInput,
                            Preprocessing, TfdsNames)
from schemas.inputs import TINY_IMAGENET_VAL
from schemas.imagenet_p_editions import MP4, Arrangement, PEdition, PTfdsNames, p_table

from .imagenet64 import CORRUPTIONS, MOTION_BLUR_64, P_SCHEDULES, RESIZE_64, SIZE

__all__ = ["P", "EDITION"]

P = PEdition(
    name="tinyimagenet", frame_size=SIZE, input="full",
    arrangement=Arrangement(base=(("resize_short_side", SIZE),), view=(("center_crop", SIZE),)),
    arrangements={"motion_blur": MOTION_BLUR_64},
    perturbations=p_table(**P_SCHEDULES),
    output=MP4, trees=("Tiny-ImageNet-P",), num_classes=(200,),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_tinyimagenet_p.py",
    preprocessing="RGB at full size (the reference read bounding-box crops); Resize(64) (short side 64), "
                  "CenterCrop(64) after whole-image moves, before pixel operations; motion_blur blurs the "
                  "full-size image, then Resize(64) (aspect kept, no crop)",
    tfds={"tinyimagenet": PTfdsNames("tiny_imagenet_p", (None, None), (), "validation",
                                     "Tiny-ImageNet-P at 64x64 (make_tinyimagenet_p.py; motion_blur frames 64 x "
                                     "int(64 * long / short); labels: the input's wnids)")})
"""The ImageNet-P facts (``make_tinyimagenet_p.py``)."""

EDITION = Edition(
    name="tinyimagenet",
    title="Tiny-ImageNet-C",
    image_size=SIZE,
    preprocessing=Preprocessing(
        steps=(("center_square",), RESIZE_64),
        description="RGB, centred square crop (identity on Tiny ImageNet's 64x64 files), PIL bilinear resize "
                    "to 64x64"),
    sources=("tinyimagenet",),
    card=Card("Tiny ImageNet, 64x64", inputs={"tinyimagenet": TINY_IMAGENET_VAL}),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"tinyimagenet": Layout(
            tree="Tiny-ImageNet-C", path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=200,
            label_space=RELEASE_LABELS,
            clean_template=CLEAN_TEMPLATE,
            # Zenodo's Tiny-ImageNet-C.tar (the 15) and its mirror's Tiny-ImageNet-C-extra.tar (the 4 extras)
            packages={"Tiny-ImageNet-C": ("noise", "blur", "weather", "digital"), "Tiny-ImageNet-C-extra": ("extra",)},
            package_prefix=True,
            tfds=TfdsNames("tiny_imagenet_corrupted", "1.0.0", "validation",
                           description="Tiny-ImageNet-C (make_tinyimagenet_c.py), Pillow JPEG q85."))},
        examples_per_shard=8192,
        reference="ImageNet-C/create_c/make_tinyimagenet_c.py"),
    p=P,
    model_input=ModelInput(SIZE, (0.4802, 0.4481, 0.3975), (0.2302, 0.2265, 0.2262)),
)
