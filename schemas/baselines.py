"""The evaluation protocol as data: model-input normalisation and the baselines metrics divide by.

ImageNet-C errors are AlexNet's, per corruption and severity, as the ``hendrycks/robustness``
README carried them from commit ``76d9393`` (2019-10-10) until ``5aa129e`` (2020-05-05) and as
the maintainer posted them in that repository's issue tracker (``docs/reference/algorithms.md``,
"ImageNet-C metrics"). AlexNet's ImageNet-P flip probabilities and top-5 distances were never published: the
user supplies them
(or an AlexNet run of ``imagenet-cp evaluate``), so none are shipped here.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

__all__ = ["MODEL_INPUT_MEAN", "MODEL_INPUT_STD", "ErrorBaseline", "ALEXNET_IMAGENET_C", "DIFFICULTIES",
           "ReferenceResult", "REFERENCE_RESULTS"]


#: Per-channel (R, G, B) mean and standard deviation of ``Normalize`` after ``ToTensor`` (values
#: in [0, 1]) in the reference evaluators, ``ImageNet-C/test.py`` and ``ImageNet-P/test.py``.
MODEL_INPUT_MEAN = (0.485, 0.456, 0.406)
MODEL_INPUT_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class ErrorBaseline:
    """Top-1 errors of a reference classifier on ImageNet-C (fractions in [0, 1]).

    Attributes
    ----------
    name : str
        The classifier, e.g. ``"AlexNet"``.
    clean : float or None
        Error on the clean 224 centre crops of the ImageNet validation set; None when unknown
        (Relative CE is then undefined).
    corruptions : Mapping[str, tuple of 5 float]
        Corruption name -> errors at severities 1..5.
    """

    name: str
    clean: float | None
    corruptions: Mapping[str, tuple]


ALEXNET_IMAGENET_C = ErrorBaseline(
    name="AlexNet",
    # torchvision's pretrained AlexNet: 56.522 % top-1 accuracy (current torchvision docs;
    # older docs: 43.45 % error). Not in the reference repository.
    clean=0.43478,
    corruptions=MappingProxyType({
        "gaussian_noise": (0.69528, 0.82542, 0.93554, 0.98138, 0.99452),
        "shot_noise": (0.71224, 0.85108, 0.93574, 0.98182, 0.99146),
        "impulse_noise": (0.78374, 0.89808, 0.94870, 0.98720, 0.99548),
        "defocus_blur": (0.65624, 0.73202, 0.85036, 0.91364, 0.94714),
        "glass_blur": (0.64308, 0.75054, 0.88806, 0.91622, 0.93344),
        "motion_blur": (0.58430, 0.70048, 0.82108, 0.89750, 0.92638),
        "zoom_blur": (0.70008, 0.76992, 0.80784, 0.84198, 0.87198),
        "snow": (0.71726, 0.88392, 0.86468, 0.91870, 0.94952),
        "frost": (0.61390, 0.79734, 0.88790, 0.89942, 0.93430),
        "fog": (0.67474, 0.76050, 0.84378, 0.87260, 0.94500),
        "brightness": (0.45140, 0.48502, 0.54048, 0.62166, 0.72440),
        "contrast": (0.64548, 0.76150, 0.88874, 0.97760, 0.99270),
        "elastic_transform": (0.52596, 0.70116, 0.55686, 0.64076, 0.80554),
        "pixelate": (0.52218, 0.54620, 0.73728, 0.87092, 0.91262),
        "jpeg_compression": (0.51002, 0.54718, 0.57294, 0.65458, 0.74778),
        "speckle_noise": (0.66192, 0.74440, 0.90246, 0.94548, 0.97268),
        "gaussian_blur": (0.54732, 0.70444, 0.82574, 0.89864, 0.95940),
        "spatter": (0.47196, 0.62194, 0.75052, 0.84132, 0.90182),
        "saturate": (0.59342, 0.65514, 0.51174, 0.70834, 0.82260),
    }),
)
"""AlexNet's ImageNet-C errors: the normaliser of CE, mCE and Relative CE."""

#: ImageNet-P difficulties: the frame stride of the non-noise types at evaluation (``ImageNet-P/test.py``);
#: noise types have one data set per difficulty instead (``<name>``, ``<name>_2``, ...).
DIFFICULTIES = (1, 2, 3)


@dataclass(frozen=True)
class ReferenceResult:
    """A published ImageNet-C result a report shows beside the model's (percent).

    Attributes
    ----------
    model : str
        The classifier.
    mCE, relative_mCE : float
        Its mCE and Relative mCE (%, AlexNet = 100).
    clean_error : float
        Its top-1 error on the clean images (%).
    source : str
        Where the numbers come from.
    """

    model: str
    mCE: float
    relative_mCE: float
    clean_error: float
    source: str


#: The paper's reference rows (Hendrycks & Dietterich, ICLR 2019): AlexNet, the normaliser, and the
#: ResNet-50 baseline of the ``hendrycks/robustness`` leaderboard (its README).
REFERENCE_RESULTS = (
    ReferenceResult("AlexNet", 100.0, 100.0, 100 * ALEXNET_IMAGENET_C.clean,
                    "the normaliser; clean error: torchvision's pretrained AlexNet"),
    ReferenceResult("ResNet-50", 76.7, 105.0, 23.85, "paper; clean error: the README leaderboard"),
)
