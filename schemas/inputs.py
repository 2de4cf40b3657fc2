"""The input data sets the editions read, as a release's dataset card names them: name, citation, licence.

Each edition lists, per source family it reads (:attr:`schemas.edition.Edition.sources`), the
:class:`Input` it is (:attr:`schemas.edition.Card.inputs`); these are the shared values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Input", "IMAGENET_CITATION", "CIFAR_CITATION", "TINY_IMAGENET_CITATION", "IMAGENET_TERMS",
           "IMAGENET_TERMS_URL", "IMAGENET_TERMS_NAME", "CIFAR_URL", "IMAGENET_VAL", "TINY_IMAGENET_VAL", "CIFAR10_TEST",
           "CIFAR100_TEST"]


@dataclass(frozen=True)
class Input:
    """One input data set and its terms.

    Attributes
    ----------
    name : str
        What it is, in the card's words (``'ImageNet (ILSVRC 2012) validation set'``).
    citation : str
        Its BibTeX entry.
    license : str
        Hugging Face ``license`` id (``'other'``: the card names and links the terms,
        :attr:`license_name` and :attr:`license_url`).
    terms : str
        The card's paragraph on the terms its derived images carry.
    license_url : str
        Where its licence or terms are: Croissant's ``license``, and the card's ``license_link``.
    license_name : str, optional
        The card's ``license_name``; required with the licence ``'other'`` (Hugging Face asks for one).

    Raises
    ------
    ValueError
        When the licence has no URL, or is ``'other'`` without a name: neither the card nor
        Croissant could say what it is.
    """

    name: str
    citation: str
    license: str
    terms: str
    license_url: str
    license_name: Optional[str] = None

    def __post_init__(self):
        if not self.license_url:
            raise ValueError(f"input {self.name!r}: licence {self.license!r} without a license_url")
        if self.license == "other" and not self.license_name:
            raise ValueError(f"input {self.name!r}: licence 'other' without a license_name for the card")


IMAGENET_CITATION = """@article{russakovsky2015imagenet,
  title={{ImageNet} Large Scale Visual Recognition Challenge},
  author={Olga Russakovsky and Jia Deng and Hao Su and Jonathan Krause and Sanjeev Satheesh and Sean Ma and Zhiheng Huang and Andrej Karpathy and Aditya Khosla and Michael Bernstein and Alexander C. Berg and Li Fei-Fei},
  journal={International Journal of Computer Vision},
  volume={115},
  number={3},
  pages={211--252},
  year={2015}
}"""
CIFAR_CITATION = """@techreport{krizhevsky2009learning,
  title={Learning Multiple Layers of Features from Tiny Images},
  author={Alex Krizhevsky},
  institution={University of Toronto},
  year={2009}
}"""
TINY_IMAGENET_CITATION = """@misc{le2015tiny,
  title={Tiny {ImageNet} Visual Recognition Challenge},
  author={Ya Le and Xuan Yang},
  howpublished={CS 231N, Stanford University},
  year={2015}
}"""

IMAGENET_TERMS = ("The images are derived from the ImageNet (ILSVRC 2012) validation set. ImageNet's terms of "
                  "access allow non-commercial research and educational use only, and do not permit "
                  "redistribution beyond that; whoever uses or shares these derived images must hold and follow "
                  "those terms (https://image-net.org/download.php).")

IMAGENET_TERMS_URL = "https://image-net.org/download.php"
IMAGENET_TERMS_NAME = "imagenet-terms-of-access"
CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"

IMAGENET_VAL = Input("ImageNet (ILSVRC 2012) validation set", IMAGENET_CITATION, "other", IMAGENET_TERMS,
                     IMAGENET_TERMS_URL, IMAGENET_TERMS_NAME)
TINY_IMAGENET_VAL = Input("Tiny ImageNet validation set", TINY_IMAGENET_CITATION, "other",
                          "Tiny ImageNet is a subset of ImageNet, under ImageNet's terms: " + IMAGENET_TERMS,
                          IMAGENET_TERMS_URL, IMAGENET_TERMS_NAME)
CIFAR10_TEST = Input("CIFAR-10 test set", CIFAR_CITATION, "unknown",
                     "CIFAR-10 is published by its authors without an explicit licence; cite Krizhevsky (2009).",
                     CIFAR_URL)
CIFAR100_TEST = Input("CIFAR-100 test set", CIFAR_CITATION, "unknown",
                      "CIFAR-100 is published by its authors without an explicit licence; cite Krizhevsky (2009).",
                      CIFAR_URL)
