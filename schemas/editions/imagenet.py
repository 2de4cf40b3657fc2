"""The ``imagenet`` edition (224 x 224), the default: ImageNet-C as ``make_imagenet_c.py`` makes it.

Its severity tables are :data:`schemas.imagenet_c.CORRUPTIONS`; the TFDS dataset is
``imagenet2012_corrupted`` (:data:`schemas.tfds.IMAGENET2012_CORRUPTED`).
"""
from schemas.edition import CLEAN_TEMPLATE, JPEG, CEdition, Edition, Layout, Preprocessing, TfdsNames
from schemas.imagenet_p_editions import P_EDITIONS
from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE
from schemas.release import C_TREE

RESIZE_SHORT_SIDE = 256

EDITION = Edition(
    name="imagenet",
    title="ImageNet-C",
    image_size=IMAGE_SIZE,
    preprocessing=Preprocessing(
        steps=(("resize_short_side", RESIZE_SHORT_SIDE), ("center_crop", IMAGE_SIZE)),
        description="RGB, torchvision Resize(256) (PIL bilinear), CenterCrop(224)"),
    sources=("imagenet",),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"imagenet": Layout(
            tree=C_TREE, path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=1000,
            clean_template=CLEAN_TEMPLATE,
            tfds=TfdsNames("imagenet2012_corrupted", "3.1.0", "validation"))},
        examples_per_shard=2048,
        reference="ImageNet-C/create_c/make_imagenet_c.py"),
    p=P_EDITIONS["imagenet"],  # the ImageNet-P facts (schemas/imagenet_p_editions.py)
    model_input={"size": IMAGE_SIZE, "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
)
