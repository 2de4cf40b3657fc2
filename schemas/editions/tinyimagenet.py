"""The ``tinyimagenet`` edition (64 x 64, 200 classes): Tiny-ImageNet-C as ``make_tinyimagenet_c.py`` makes it.

Its corruption code is that of ``make_imagenet_64_c.py`` (the two reference files differ only in their inputs), so
the tables are :data:`schemas.editions.imagenet64.CORRUPTIONS`; the edition differs in its input
(Tiny ImageNet's validation images, already 64x64 crops of their object) and its release tree.
"""
from schemas.edition import CLEAN_TEMPLATE, JPEG, CEdition, Edition, Layout, Preprocessing, TfdsNames
from schemas.imagenet_p_editions import P_EDITIONS

from .imagenet64 import CORRUPTIONS, RESIZE_64, SIZE

EDITION = Edition(
    name="tinyimagenet",
    title="Tiny-ImageNet-C",
    image_size=SIZE,
    preprocessing=Preprocessing(
        steps=(("center_square",), RESIZE_64),
        description="RGB, centred square crop (identity on Tiny ImageNet's 64x64 files), PIL bilinear resize "
                    "to 64x64"),
    sources=("tinyimagenet",),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"tinyimagenet": Layout(
            tree="Tiny-ImageNet-C", path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=200,
            clean_template=CLEAN_TEMPLATE,
            # Zenodo's Tiny-ImageNet-C.tar (the 15) and its mirror's Tiny-ImageNet-C-extra.tar (the 4 extras)
            packages={"Tiny-ImageNet-C": ("noise", "blur", "weather", "digital"), "Tiny-ImageNet-C-extra": ("extra",)},
            package_prefix=True,
            tfds=TfdsNames("tiny_imagenet_corrupted", "1.0.0", "validation",
                           description="Tiny-ImageNet-C (make_tinyimagenet_c.py), Pillow JPEG q85."))},
        examples_per_shard=8192,
        reference="ImageNet-C/create_c/make_tinyimagenet_c.py"),
    p=P_EDITIONS["tinyimagenet"],  # the ImageNet-P facts (schemas/imagenet_p_editions.py)
    model_input={"size": SIZE, "mean": (0.4802, 0.4481, 0.3975), "std": (0.2302, 0.2265, 0.2262)},
)
