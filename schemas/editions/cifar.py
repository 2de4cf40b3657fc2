"""The ``cifar`` edition (32 x 32): CIFAR-10-C and CIFAR-100-C as ``make_cifar_c.py`` makes them.

Values from ``hendrycks/robustness`` @ 8190fe3, ``ImageNet-C/create_c/make_cifar_c.py``
(``docs/reference/algorithms.md``, "Editions of ImageNet-C"). Outputs are not JPEG-encoded: the uint8 arrays of
each corruption are stacked into ``<corruption>.npy`` (rows 5 x N, severity 1 first) beside
``labels.npy``. TFDS's ``cifar10_corrupted`` renames two corruptions (``frosted_glass_blur``,
``elastic``) and stores PNGs. The clean config (ours; the official archive has none) is
``<tree>/clean.npy``, one block of N rows in input order (:data:`CLEAN_FILE`).
"""
from types import MappingProxyType

from schemas.edition import (NPY, RELEASE_LABELS, CEdition, Card, Edition, Layout, ModelInput, Preprocessing,
                            TfdsNames)
from schemas.inputs import CIFAR100_TEST, CIFAR10_TEST
from schemas.imagenet_p import Ramp
from schemas.imagenet_p_editions import DRIP_SMALL, NPY as P_NPY, Arrangement, PEdition, PTfdsNames, p_table
from schemas.imagenet_c import Corruption, severity_rows as rows, zoom_factors

__all__ = ["SIZE", "CORRUPTIONS", "CIFAR10_CLASSES", "CLEAN_FILE", "ALL_CATEGORIES", "TFDS_NAMES", "P", "EDITION"]

SIZE = 32
_N = SIZE

CORRUPTIONS = (
    Corruption("gaussian_noise", "noise", rows(sigma=[0.04, 0.06, 0.08, 0.09, 0.10])),
    Corruption("shot_noise", "noise", rows(scale=[500, 250, 100, 75, 50])),
    Corruption("impulse_noise", "noise", rows(amount=[0.01, 0.02, 0.03, 0.05, 0.07])),
    Corruption("defocus_blur", "blur", rows(
        radius=[0.3, 0.4, 0.5, 1, 1.5], alias_blur=[0.4, 0.5, 0.6, 0.2, 0.1])),
    Corruption("glass_blur", "blur", rows(
        sigma=[0.05, 0.25, 0.4, 0.25, 0.4], max_delta=[1, 1, 1, 1, 1], iterations=[1, 1, 1, 2, 2])),
    Corruption("motion_blur", "blur", rows(radius=[6, 6, 6, 8, 9], sigma=[1, 1.5, 2, 2, 2.5])),
    Corruption("zoom_blur", "blur", rows(factors=[
        zoom_factors(1, 1.06, 0.01), zoom_factors(1, 1.11, 0.01), zoom_factors(1, 1.16, 0.01),
        zoom_factors(1, 1.21, 0.01), zoom_factors(1, 1.26, 0.01)])),
    Corruption("snow", "weather", rows(
        loc=[0.1, 0.1, 0.15, 0.25, 0.3], scale=[0.2, 0.2, 0.3, 0.3, 0.3], zoom=[1, 1, 1.75, 2.25, 1.25],
        threshold=[0.6, 0.5, 0.55, 0.6, 0.65], blur_radius=[8, 10, 10, 12, 14], blur_sigma=[3, 4, 4, 6, 12],
        blend=[0.95, 0.9, 0.9, 0.85, 0.8])),
    Corruption("frost", "weather", rows(
        image_weight=[1, 1, 0.9, 0.85, 0.75], frost_weight=[0.2, 0.3, 0.4, 0.4, 0.45], texture_scale=[0.2] * 5)),
    Corruption("fog", "weather", rows(
        strength=[0.2, 0.5, 0.75, 1, 1.5], wibble_decay=[3, 3, 2.5, 2, 1.75], mapsize=[SIZE] * 5)),
    Corruption("brightness", "weather", rows(delta=[0.05, 0.1, 0.15, 0.2, 0.3])),
    Corruption("contrast", "digital", rows(factor=[0.75, 0.5, 0.4, 0.3, 0.15])),
    Corruption("elastic_transform", "digital", rows(
        alpha=[_N * 0, _N * 0.05, _N * 0.08, _N * 0.1, _N * 0.1],
        sigma=[_N * 0, _N * 0.2, _N * 0.06, _N * 0.04, _N * 0.03],
        affine_jitter=[_N * 0.08, _N * 0.07, _N * 0.06, _N * 0.05, _N * 0.03])),
    Corruption("pixelate", "digital", rows(factor=[0.95, 0.9, 0.85, 0.75, 0.65])),
    Corruption("jpeg_compression", "digital", rows(quality=[80, 65, 58, 50, 40])),
    Corruption("speckle_noise", "extra", rows(sigma=[0.06, 0.1, 0.12, 0.16, 0.2])),
    Corruption("gaussian_blur", "extra", rows(sigma=[0.4, 0.6, 0.7, 0.8, 1])),
    Corruption("spatter", "extra", rows(
        loc=[0.62, 0.65, 0.65, 0.65, 0.65], scale=[0.1, 0.1, 0.3, 0.1, 0.1], blur_sigma=[0.7, 0.8, 1, 0.7, 0.5],
        threshold=[0.7, 0.7, 0.69, 0.69, 0.68], intensity=[0.5, 0.5, 0.5, 0.6, 0.6],
        mud=[False, False, False, True, True])),
    Corruption("saturate", "extra", rows(multiplier=[0.3, 0.1, 1.5, 2, 2.5], offset=[0, 0, 0, 0.1, 0.2])),
)

#: CIFAR-10 class names in label order (``batches.meta``'s ``label_names``).
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

#: The clean config's array below the tree: (N, 32, 32, 3) uint8, input order.
CLEAN_FILE = "clean.npy"

#: One tar of the whole tree, as Zenodo's ``CIFAR-10-C.tar`` / ``CIFAR-100-C.tar``.
ALL_CATEGORIES = ("noise", "blur", "weather", "digital", "extra")

#: TFDS ``cifar10_corrupted``'s names where they differ from the function names.
TFDS_NAMES = MappingProxyType({"glass_blur": "frosted_glass_blur", "elastic_transform": "elastic"})

_P_TITLE = "CIFAR-10-P at 32x32 (make_cifar_p.py)"  # the CIFAR-100 dataset's too (its labels are the input's)

P = PEdition(
    name="cifar", frame_size=SIZE, input="cifar32",
    arrangement=Arrangement(),
    perturbations=p_table(
        gaussian=(0.02, 0.04, 0.06), shot=(700, 400, 200), speckle=(0.05, 0.07, 0.10),
        motion_blur=dict(radius=6, sigma=1.8, angles=Ramp(-20 * 9, 9)), motion_frames=21,
        snow=dict(loc=0.05, scale=0.3, zoom=2, threshold=0.5, blur_radius=10, blur_sigma=2,
                  angles=Ramp(-150, 4), blend=0.85),
        brightness=dict(deltas=Ramp(-15 * 1.5, 1.5, 100.)),  # (i - 15) * 1.5 / 100
        translate=Ramp(-7, 1), translate_frames=16,  # -7 .. +8 px
        tilt=dict(angles=Ramp(-15 * 0.75, 0.75)),  # 0.75 * (i - 15) degrees
        scale=dict(scales=Ramp(70, 2, 100.), resample="bilinear"),  # (2 i + 70) / 100
        gaussian_blur=dict(sigmas=Ramp(0.3, 0.015), truncate=7.0),
        spatter=dict(loc=0.6, scale=0.265, blur_sigma=1.75, threshold=0.7, intensity=0.6, drip_kernel=DRIP_SMALL)),
    output=P_NPY, trees=("CIFAR-10-P", "CIFAR-100-P"), num_classes=(10, 100),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_cifar_p.py",
    preprocessing="none: the 32x32x3 uint8 test image as it is",
    tfds={"cifar10": PTfdsNames("cifar10_p", (SIZE, SIZE), CIFAR10_CLASSES, "test", _P_TITLE),
          "cifar100": PTfdsNames("cifar100_p", (SIZE, SIZE), CIFAR10_CLASSES, "test", _P_TITLE)})
"""The ImageNet-P facts (``make_cifar_p.py``): one ``<dataset>.npy`` per dataset."""

EDITION = Edition(
    name="cifar",
    title="CIFAR-10-C / CIFAR-100-C",
    image_size=SIZE,
    preprocessing=Preprocessing(
        steps=(("center_square",), ("resize", SIZE, "box")),
        description="RGB, centred square crop and PIL BOX resize to 32x32 (identity on CIFAR's 32x32 images)"),
    sources=("cifar10", "cifar100"),
    card=Card("CIFAR, 32x32", inputs={"cifar10": CIFAR10_TEST, "cifar100": CIFAR100_TEST}),
    c=CEdition(
        corruptions=CORRUPTIONS,
        encoding=NPY,
        layouts={
            "cifar10": Layout(
                tree="CIFAR-10-C", path_template="{corruption}.npy", labels_file="labels.npy", num_classes=10,
                label_space=RELEASE_LABELS,
                clean_template=CLEAN_FILE,
                packages={"CIFAR-10-C": ALL_CATEGORIES}, package_prefix=True,
                tfds=TfdsNames("cifar10_corrupted", "1.0.0", "test", config_names=TFDS_NAMES, image_format="png",
                               file_name_feature=False,
                               description="CIFAR-10-C (make_cifar_c.py): the CIFAR-10 test set corrupted.")),
            "cifar100": Layout(
                tree="CIFAR-100-C", path_template="{corruption}.npy", labels_file="labels.npy", num_classes=100,
                label_space=RELEASE_LABELS,
                clean_template=CLEAN_FILE,
                packages={"CIFAR-100-C": ALL_CATEGORIES}, package_prefix=True,
                tfds=TfdsNames("cifar100_corrupted", "1.0.0", "test", config_names=TFDS_NAMES, image_format="png",
                               file_name_feature=False,
                               description="CIFAR-100-C (make_cifar_c.py on the CIFAR-100 test set, fine labels).")),
        },
        examples_per_shard=10000,
        reference="ImageNet-C/create_c/make_cifar_c.py"),
    p=P,
    model_input=ModelInput(SIZE, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),
)
