"""The ``inception`` edition (299 x 299): ImageNet-C as ``make_imagenet_c_inception.py`` makes it.

Values from ``hendrycks/robustness`` @ 8190fe3, ``ImageNet-C/create_c/make_imagenet_c_inception.py``
(see ``docs/reference/algorithms.md``, "Editions of ImageNet-C"). Differences from 224 beyond the constants: fog's
plasma map is 512 (top-left 299 crop), elastic scales by 360, the zoom lists are the 224 ones.
"""
from schemas.edition import (CLEAN_TEMPLATE, IMAGENET_LABELS, JPEG, CEdition, Card, Edition, Layout, ModelInput,
                            Preprocessing, TfdsNames)
from schemas.inputs import IMAGENET_VAL
from schemas.imagenet_p import Ramp
from schemas.imagenet_p_editions import DRIP_224, MP4, Arrangement, PEdition, PTfdsNames, p_table
from schemas.wnids import imagenet_wnids
from schemas.imagenet_c import Corruption, severity_rows as rows, zoom_factors

__all__ = ["SIZE", "CORRUPTIONS", "P", "CITATION", "EDITION"]

SIZE = 299
_ELASTIC_BASE = 360  # the 299 file's elastic scale (224's is 244)
_E = _ELASTIC_BASE

CORRUPTIONS = (
    Corruption("gaussian_noise", "noise", rows(sigma=[0.09, 0.13, 0.19, 0.27, 0.40])),
    Corruption("shot_noise", "noise", rows(scale=[50, 20, 10, 5, 3])),
    Corruption("impulse_noise", "noise", rows(amount=[0.04, 0.07, 0.10, 0.18, 0.28])),
    Corruption("defocus_blur", "blur", rows(radius=[4, 5, 7, 10, 12], alias_blur=[0.1, 0.5, 0.5, 0.5, 0.5])),
    Corruption("glass_blur", "blur", rows(
        sigma=[0.8, 1, 1.1, 1.2, 1.6], max_delta=[1, 3, 2, 4, 5], iterations=[3, 1, 4, 2, 2])),
    Corruption("motion_blur", "blur", rows(radius=[12, 17, 17, 17, 22], sigma=[4, 6, 9, 13, 16])),
    Corruption("zoom_blur", "blur", rows(factors=[
        zoom_factors(1, 1.11, 0.01), zoom_factors(1, 1.16, 0.01), zoom_factors(1, 1.21, 0.02),
        zoom_factors(1, 1.26, 0.02), zoom_factors(1, 1.31, 0.03)])),
    Corruption("snow", "weather", rows(
        loc=[0.1, 0.2, 0.55, 0.55, 0.55], scale=[0.3, 0.3, 0.3, 0.3, 0.3], zoom=[3, 2, 4, 4.5, 2.5],
        threshold=[0.5, 0.5, 0.9, 0.85, 0.85], blur_radius=[10, 12, 12, 12, 12], blur_sigma=[4, 4, 8, 8, 12],
        blend=[0.8, 0.7, 0.7, 0.65, 0.55])),
    Corruption("frost", "weather", rows(
        image_weight=[1, 0.8, 0.7, 0.65, 0.6], frost_weight=[0.4, 0.6, 0.7, 0.7, 0.75], texture_scale=[None] * 5)),
    Corruption("fog", "weather", rows(
        strength=[1.5, 2, 2.5, 2.5, 3], wibble_decay=[2, 2, 1.8, 1.6, 1.5], mapsize=[512] * 5)),
    Corruption("brightness", "weather", rows(delta=[0.1, 0.2, 0.3, 0.4, 0.5])),
    Corruption("contrast", "digital", rows(factor=[0.4, 0.3, 0.2, 0.1, 0.05])),
    Corruption("elastic_transform", "digital", rows(
        alpha=[_E * 2, _E * 2, _E * 0.05, _E * 0.07, _E * 0.12],
        sigma=[_E * 0.7, _E * 0.08, _E * 0.01, _E * 0.01, _E * 0.01],
        affine_jitter=[_E * 0.1, _E * 0.2, _E * 0.02, _E * 0.02, _E * 0.02])),
    Corruption("pixelate", "digital", rows(factor=[0.5, 0.4, 0.3, 0.25, 0.2])),
    Corruption("jpeg_compression", "digital", rows(quality=[23, 16, 13, 8, 5])),
    Corruption("speckle_noise", "extra", rows(sigma=[0.16, 0.21, 0.36, 0.46, 0.61])),
    Corruption("gaussian_blur", "extra", rows(sigma=[1.5, 2.5, 3.5, 4.5, 6.5])),
    Corruption("spatter", "extra", rows(
        loc=[0.65, 0.65, 0.65, 0.65, 0.67], scale=[0.3, 0.3, 0.3, 0.3, 0.4], blur_sigma=[4, 3.5, 3, 1.2, 1.2],
        threshold=[0.69, 0.68, 0.68, 0.65, 0.65], intensity=[0.9, 0.9, 0.8, 1.8, 1.8],
        mud=[False, False, False, True, True])),
    Corruption("saturate", "extra", rows(multiplier=[0.3, 0.1, 2, 5, 20], offset=[0, 0, 0, 0.1, 0.2])),
)

_RCC_299 = (("center_crop_fraction", 0.875), ("resize", SIZE, "bilinear"))

P = PEdition(
    name="inception", frame_size=SIZE, input="full",
    # translate / rotate / tilt / shear move the full image, then the 299 view; pixel operations see the view
    arrangement=Arrangement(view=_RCC_299),
    # zoom_blur and scale act on the 299 view itself (their CenterCrop(299) is a no-op)
    arrangements={"zoom_blur": Arrangement(base=_RCC_299), "scale": Arrangement(base=_RCC_299)},
    perturbations=p_table(
        gaussian=(0.035, 0.055, 0.085), shot=(250, 100, 50), speckle=(0.06, 0.11, 0.16),
        motion_blur=dict(radius=13, sigma=3, angles=Ramp(-30 * 4, 4)),
        snow=dict(loc=0.05, scale=0.3, zoom=3, threshold=0.5, blur_radius=14, blur_sigma=4,
                  angles=Ramp(-150, 4), blend=0.85),
        translate=Ramp(-20, 1), translate_frames=41,
        gaussian_blur=dict(sigmas=Ramp(0.35, 0.035), truncate=6.0),
        spatter=dict(loc=0.65, scale=0.3, blur_sigma=4, threshold=0.69, intensity=0.6, drip_kernel=DRIP_224)),
    output=MP4, trees=("ImageNet-P-299",), num_classes=(1000,),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_p_inception.py",
    preprocessing="RGB at full size; 299 view = central int(0.875 H) x int(0.875 W) crop, PIL bilinear 299x299 "
                  "(aspect not kept); translate/rotate/tilt/shear act on the full image before the view, "
                  "zoom_blur and scale on the view",
    tfds={"imagenet": PTfdsNames("imagenet_p_299", (SIZE, SIZE), imagenet_wnids(), "validation",
                                 "ImageNet-P at 299x299 (make_imagenet_p_inception.py)")})
"""The ImageNet-P facts (``make_imagenet_p_inception.py``)."""

CITATION = """@inproceedings{szegedy2016rethinking,
  title={Rethinking the Inception Architecture for Computer Vision},
  author={Christian Szegedy and Vincent Vanhoucke and Sergey Ioffe and Jon Shlens and Zbigniew Wojna},
  booktitle={IEEE Conference on Computer Vision and Pattern Recognition},
  year={2016}
}"""
"""BibTeX of the edition's own paper, cited on its releases' cards."""

EDITION = Edition(
    name="inception",
    title="ImageNet-C 299 (Inception-sized)",
    image_size=SIZE,
    preprocessing=Preprocessing(
        steps=(("center_crop_fraction", 0.875), ("resize", SIZE, "bilinear")),
        description="RGB, centre crop of 0.875 of each side, PIL bilinear resize to 299x299 (aspect not kept)"),
    sources=("imagenet",),
    card=Card("299x299, Inception input", inputs={"imagenet": IMAGENET_VAL}, citation=CITATION),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=JPEG,
        layouts={"imagenet": Layout(
            tree="ImageNet-C-299", path_template="{corruption}/{severity}/{wnid}/{file_name}", num_classes=1000,
            label_space=IMAGENET_LABELS,
            clean_template=CLEAN_TEMPLATE,
            tfds=TfdsNames("imagenet2012_corrupted_299", "1.0.0", "validation",
                           description="ImageNet-C at 299x299 (make_imagenet_c_inception.py), Pillow JPEG q85."))},
        examples_per_shard=1024,
        reference="ImageNet-C/create_c/make_imagenet_c_inception.py"),
    p=P,
    model_input=ModelInput(SIZE, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
)
