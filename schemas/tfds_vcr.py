"""TFDS declaration of a VCR release: dataset ``vcr``, one config per corruption plus ``clean``."""
from __future__ import annotations

from types import MappingProxyType

from schemas.imagenet_c import IMAGE_SIZE
from schemas.tfds import ClassLabel, Image, Scalar, Text, TfdsDataset
from schemas.vcr import CLEAN, VCR_CORRUPTIONS
from schemas.wnids import imagenet_wnids

__all__ = ["vcr_dataset", "VCR_CITATION", "VCR_DATASET", "VCR_NATIVE_DATASET"]

def vcr_dataset(image_shape=(IMAGE_SIZE, IMAGE_SIZE, 3)) -> TfdsDataset:
    """The TFDS dataset of a VCR release whose images have ``image_shape`` (None: any size)."""
    crop = image_shape[0] is not None
    what = "224x224 crops (Resize(256) + CenterCrop(224))" if crop else "images at their native size"
    configs = {c: f"VCR corruption {c}: continuous parameters, one example per draw" for c in VCR_CORRUPTIONS}
    configs[CLEAN] = f"the clean {what} the examples were measured against"
    return TfdsDataset(
        name="vcr",
        version="1.0.0",
        features=MappingProxyType({
            "image": Image(shape=tuple(image_shape), encoding_format="png"),
            "label": ClassLabel(names=imagenet_wnids()),
            "file_name": Text(),
            "delta_v": Scalar("float32"),
        }),
        config_descriptions=MappingProxyType(configs),
        description=(f"VCR test images built by imagenet-cp: ImageNet validation images as {what}, "
                     "corrupted over VCR's continuous parameter ranges with a per-example seed, saved as PNG; "
                     "delta_v = 1 - VIF (VCR's steerable-pyramid VIF) of these pixels against the clean image "
                     "(config 'clean', delta_v 0)."),
        citation=VCR_CITATION,
        homepage="https://arxiv.org/abs/2402.19401",
        supervised_keys=("image", "label"),
        release_notes=MappingProxyType({"1.0.0": "imagenet-cp: reproducible VCR test sets."}),
    )


VCR_CITATION = ("@article{shen2024vcr,\n"
                "  title={Assessing Visually-Continuous Corruption Robustness of Neural Networks Relative to "
                "Human Performance},\n"
                "  author={Huakun Shen and Boyue Caroline Hu and Krzysztof Czarnecki and Lina Marsso and "
                "Marsha Chechik},\n"
                "  journal={arXiv preprint arXiv:2402.19401},\n"
                "  year={2024},\n}")

VCR_DATASET = vcr_dataset()
"""The TFDS dataset of a VCR release (224 crops): one config per corruption plus ``clean``."""

VCR_NATIVE_DATASET = vcr_dataset((None, None, 3))
"""The same for a release measured at native resolution (images of any size)."""
