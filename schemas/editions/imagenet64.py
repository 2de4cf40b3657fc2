"""The ``imagenet64`` edition (64 x 64): ImageNet-C as ``make_imagenet_64_c.py`` makes it.

Values from ``hendrycks/robustness`` @ 8190fe3, ``ImageNet-C/create_c/make_imagenet_64_c.py``
(``docs/reference/algorithms.md``, "Editions of ImageNet-C"); ``make_tinyimagenet_c.py`` has the same corruption
code, so :mod:`schemas.editions.tinyimagenet` reuses :data:`CORRUPTIONS`. Beyond the constants:
a 64 plasma map, frost textures shrunk by ``cv2.resize(fx=fy=0.3)`` before the crop, elastic
scaled by N = 64 with alpha = sigma = 0 at severity 1, zoom lists of 7..26 factors.
"""
from schemas.edition import (CLEAN_TEMPLATE, IMAGENET_LABELS, JPEG, CEdition, Card, Edition, Layout, ModelInput,
                            Preprocessing, TfdsNames)
from schemas.inputs import IMAGENET_VAL
from schemas.imagenet_p import Ramp
from schemas.imagenet_p_editions import DRIP_SMALL, MP4, Arrangement, PEdition, PTfdsNames, p_table
from schemas.wnids import imagenet_wnids
from schemas.imagenet_c import Corruption, severity_rows as rows, zoom_factors

__all__ = ["SIZE", "CORRUPTIONS", "RESIZE_64", "P_SCHEDULES", "MOTION_BLUR_64", "P", "CITATION", "EDITION"]

SIZE = 64
_N = SIZE

CORRUPTIONS = (
    Corruption("gaussian_noise", "noise", rows(sigma=[0.04, 0.08, 0.12, 0.15, 0.18])),
    Corruption("shot_noise", "noise", rows(scale=[250, 100, 50, 30, 15])),
    Corruption("impulse_noise", "noise", rows(amount=[0.01, 0.02, 0.05, 0.08, 0.14])),
    Corruption("defocus_blur", "blur", rows(
        radius=[0.5, 1, 1.5, 2.5, 3], alias_blur=[0.6, 0.1, 0.1, 0.01, 0.1])),
    Corruption("glass_blur", "blur", rows(
        sigma=[0.1, 0.5, 0.6, 0.7, 0.9], max_delta=[1, 1, 1, 2, 2], iterations=[1, 1, 2, 1, 2])),
    Corruption("motion_blur", "blur", rows(radius=[10, 10, 10, 10, 12], sigma=[1, 1.5, 2, 2.5, 3])),
    Corruption("zoom_blur", "blur", rows(factors=[
        zoom_factors(1, 1.06, 0.01), zoom_factors(1, 1.11, 0.01), zoom_factors(1, 1.16, 0.01),
        zoom_factors(1, 1.21, 0.01), zoom_factors(1, 1.26, 0.01)])),
    Corruption("snow", "weather", rows(
        loc=[0.1, 0.1, 0.15, 0.25, 0.3], scale=[0.2, 0.2, 0.3, 0.3, 0.3], zoom=[1, 1, 1.75, 2.25, 1.25],
        threshold=[0.6, 0.5, 0.55, 0.6, 0.65], blur_radius=[8, 10, 10, 12, 14], blur_sigma=[3, 4, 4, 6, 12],
        blend=[0.8, 0.8, 0.7, 0.65, 0.6])),
    Corruption("frost", "weather", rows(
        image_weight=[1, 0.9, 0.8, 0.75, 0.7], frost_weight=[0.3, 0.4, 0.45, 0.5, 0.55], texture_scale=[0.3] * 5)),
    Corruption("fog", "weather", rows(
        strength=[0.4, 0.7, 1, 1.5, 2], wibble_decay=[3, 3, 2.5, 2, 1.75], mapsize=[SIZE] * 5)),
    Corruption("brightness", "weather", rows(delta=[0.1, 0.2, 0.3, 0.4, 0.5])),
    Corruption("contrast", "digital", rows(factor=[0.4, 0.3, 0.2, 0.1, 0.05])),
    Corruption("elastic_transform", "digital", rows(
        alpha=[_N * 0, _N * 0.05, _N * 0.1, _N * 0.1, _N * 0.16],
        sigma=[_N * 0, _N * 0.3, _N * 0.08, _N * 0.03, _N * 0.03],
        affine_jitter=[_N * 0.08, _N * 0.06, _N * 0.06, _N * 0.03, _N * 0.02])),
    Corruption("pixelate", "digital", rows(factor=[0.9, 0.8, 0.7, 0.6, 0.5])),
    Corruption("jpeg_compression", "digital", rows(quality=[65, 58, 50, 40, 25])),
    Corruption("speckle_noise", "extra", rows(sigma=[0.15, 0.2, 0.25, 0.3, 0.35])),
    Corruption("gaussian_blur", "extra", rows(sigma=[0.5, 0.75, 1, 1.25, 1.5])),
    Corruption("spatter", "extra", rows(
        loc=[0.62, 0.65, 0.65, 0.65, 0.65], scale=[0.1, 0.1, 0.3, 0.1, 0.1], blur_sigma=[0.7, 0.8, 1, 0.7, 0.5],
        threshold=[0.7, 0.7, 0.69, 0.68, 0.67], intensity=[0.6, 0.6, 0.6, 0.6, 0.6],
        mud=[False, False, False, True, True])),
    Corruption("saturate", "extra", rows(multiplier=[0.3, 0.1, 2, 5, 30], offset=[0, 0, 0, 0.1, 0.2])),
)

#: torchvision ``Resize((64, 64))`` on a PIL image: PIL bilinear, aspect not kept.
RESIZE_64 = ("resize", SIZE, "bilinear")

#: The ImageNet-P schedules of the 64 editions (``make_imagenet_64_p.py``, ``make_tinyimagenet_p.py``).
P_SCHEDULES = dict(
    gaussian=(0.025, 0.05, 0.075), shot=(500, 250, 125), speckle=(0.05, 0.10, 0.15),
    motion_blur=dict(radius=14, sigma=3, angles=Ramp(-30 * 5, 5)),
    snow=dict(loc=0.05, scale=0.28, zoom=2, threshold=0.5, blur_radius=10, blur_sigma=2.5,
              angles=Ramp(-150, 4), blend=0.85),
    translate=Ramp(-15, 1), translate_frames=31,
    gaussian_blur=dict(sigmas=Ramp(0.35, 0.014), truncate=7.0),
    spatter=dict(loc=0.6, scale=0.25, blur_sigma=1.75, threshold=0.7, intensity=0.6, drip_kernel=DRIP_SMALL))

#: The 64 editions blur the full-size image, then Resize(64) without a crop (frames keep the aspect).
MOTION_BLUR_64 = Arrangement(after=(("resize_short_side", SIZE),))

P = PEdition(
    name="imagenet64", frame_size=SIZE, input="full",
    arrangement=Arrangement(base=(RESIZE_64,)),
    arrangements={"motion_blur": MOTION_BLUR_64},
    perturbations=p_table(**P_SCHEDULES),
    output=MP4, trees=("ImageNet-64x64-P",), num_classes=(1000,),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_64_p.py",
    preprocessing="RGB at full size; PIL bilinear 64x64 (aspect not kept) before every perturbation; "
                  "motion_blur blurs the full-size image, then Resize(64) (short side 64, aspect kept)",
    class_filter="the reference driver wrote only the sorted class folders 750..999; a build writes every class",
    tfds={"imagenet": PTfdsNames("imagenet64x64_p", (None, None), imagenet_wnids(), "validation",
                                 "ImageNet 64x64-P (make_imagenet_64_p.py; motion_blur frames 64 x int(64 * long / short))")})
"""The ImageNet-P facts (``make_imagenet_64_p.py``)."""

CITATION = """@article{chrabaszcz2017downsampled,
  title={A Downsampled Variant of {ImageNet} as an Alternative to the {CIFAR} datasets},
  author={Patryk Chrabaszcz and Ilya Loshchilov and Frank Hutter},
  journal={arXiv preprint arXiv:1707.08819},
  year={2017}
}"""
"""BibTeX of the edition's own paper, cited on its releases' cards."""

EDITION = Edition(
    name="imagenet64",
    title="ImageNet 64x64-C",
    image_size=SIZE,
    preprocessing=Preprocessing(steps=(RESIZE_64,),
                                description="RGB, PIL bilinear resize of the whole image to 64x64 (no crop)"),
    sources=("imagenet",),
    card=Card("64x64", inputs={"imagenet": IMAGENET_VAL}, citation=CITATION),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"imagenet": Layout(
            tree="ImageNet-64x64-C", path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=1000,
            label_space=IMAGENET_LABELS,
            clean_template=CLEAN_TEMPLATE,
            tfds=TfdsNames("imagenet64x64_corrupted", "1.0.0", "validation",
                           description="ImageNet 64x64-C (make_imagenet_64_c.py), Pillow JPEG q85."))},
        examples_per_shard=8192,
        reference="ImageNet-C/create_c/make_imagenet_64_c.py"),
    p=P,
    model_input=ModelInput(SIZE, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
)
