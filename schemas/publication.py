"""What a published release says about itself: titles, citations, licence terms, deviations, labels.

Data tables for the dataset card (``README.md``) and ``croissant.json`` of a release
(:mod:`pipelines.release.card`, :mod:`pipelines.release.croissant`). A release is described by
its *edition* (the catalogue name: ``imagenet``, ``inception``, ``tinyimagenet``, ``imagenet64``,
``cifar``) and its *benchmark* (``c``, ``p``, ``vcr``, ``a``, ``o``), read from ``release.json``
by :func:`edition_and_benchmark` (:func:`schemas.editions.release_identity`). What a card says of an
edition (its title, citation and the terms of its inputs) is the edition's own
(:class:`schemas.edition.Card`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence, Union

from schemas.adversarial import BIBTEX as NATURAL_ADVERSARIAL_CITATION
from schemas.class_names import class_name
from schemas.editions import release_identity
from schemas.release import Release
from schemas.tfds import BENCHMARK_CITATION, BENCHMARK_HOMEPAGE
from schemas.tfds_vcr import VCR_CITATION

__all__ = ["edition_and_benchmark", "Benchmark", "BENCHMARKS", "OFFICIAL_RELEASE_TERMS", "CIFAR10_LABELS",
           "CIFAR100_LABELS", "LABEL_NAMES", "wnid_label_names", "CARD", "CROISSANT", "HF_INDEX", "HF_DIR",
           "PUBLISHED_NAMES", "SIZE_CATEGORIES", "size_category"]


def edition_and_benchmark(release: Union[Release, Mapping]) -> tuple[str, str]:
    """``(edition, benchmark)`` of a release, e.g. ``('cifar', 'c')``, from its ``release.json``
    (old releases included: :func:`schemas.editions.release_identity`)."""
    return tuple(release_identity(release))


@dataclass(frozen=True)
class Benchmark:
    """What the card says of one benchmark."""

    title: str
    what: str
    condition: str
    """Manifest field of the condition (corruption or perturbation)."""
    level: str
    """Manifest field of its level (severity, difficulty or draw); '' for none."""
    task: str
    """Hugging Face task category."""
    citations: tuple
    deviations: tuple
    """``(encoding, text)``: a deviation of releases of that ``release.json`` encoding ('' for all)."""
    tag: str = "corruptions"
    """The card's tag for what the benchmark does to images."""
    resized: bool = True
    """Its images have the edition's size (an A/O file keeps its candidate's size)."""


BENCHMARKS: Mapping[str, Benchmark] = MappingProxyType({
    "c": Benchmark(
        "ImageNet-C", "the {images} under 15 common corruptions (and 4 extra ones), each at up to 5 "
        "severities, as Hendrycks & Dietterich's reference code makes them", "corruption", "severity",
        "image-classification", (BENCHMARK_CITATION,),
        (("", "The `clean` config (each image exactly as the corruptions received it, same encoding) is ours; the "
              "official release has none."),
         ("jpeg", "JPEG bytes depend on the libjpeg in release.json; the pixels before encoding are pinned by each "
                  "manifest row's `array_sha256`."),
         ("", "`rng: fast` (if recorded) draws other samples from the same distributions as the reference code's "
              "legacy RandomState; `rng: reference` is seed-comparable with it."))),
    "p": Benchmark(
        "ImageNet-P", "the {images} as sequences of 31 (41 for translate) gradually perturbed frames, "
        "as Hendrycks & Dietterich's reference code makes them, encoded as H.264 MP4 like the reference",
        "perturbation", "difficulty", "video-classification", (BENCHMARK_CITATION,),
        (("", "The MP4 bytes depend on the libx264/ffmpeg recorded in release.json; the frames before encoding are "
              "pinned by each manifest row's `frames_sha256`."),
         ("", "The TFDS `imagenet_p` dataset is ours (TFDS has none).")), "perturbations"),
    "vcr": Benchmark(
        "VCR (visually-continuous corruption robustness)", "the {images} under continuous corruptions, "
        "each with its measured visual change delta_v = 1 - VIF, with the clean 224 crops", "corruption", "draw",
        "image-classification", (VCR_CITATION, BENCHMARK_CITATION),
        (("", "VIF is our implementation (release.json `vif_variant`); `operators` and `dv_resolution` in "
              "release.json say where the corruptions and the measurement follow VCR's code."),)),
    "a": Benchmark("ImageNet-A", "natural adversarial examples of 200 ImageNet classes", "", "",
                   "image-classification", (NATURAL_ADVERSARIAL_CITATION,), (), "natural-adversarial-examples",
                   False),
    "o": Benchmark("ImageNet-O", "out-of-distribution examples that ImageNet models classify confidently", "", "",
                   "image-classification", (NATURAL_ADVERSARIAL_CITATION,), (), "out-of-distribution", False),
})



OFFICIAL_RELEASE_TERMS = ("The official ImageNet-C and ImageNet-P (Zenodo) are distributed under CC BY 4.0; the "
                          "code that makes them (hendrycks/robustness) under Apache-2.0. " + BENCHMARK_HOMEPAGE)

CIFAR10_LABELS = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR100_LABELS = (
    "apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle", "bowl", "boy",
    "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle", "chair", "chimpanzee", "clock",
    "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur", "dolphin", "elephant", "flatfish",
    "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard", "lamp", "lawn_mower", "leopard", "lion",
    "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain", "mouse", "mushroom", "oak_tree", "orange",
    "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree", "plain", "plate", "poppy", "porcupine",
    "possum", "rabbit", "raccoon", "ray", "road", "rocket", "rose", "sea", "seal", "shark", "shrew", "skunk",
    "skyscraper", "snail", "snake", "spider", "squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank",
    "telephone", "television", "tiger", "tractor", "train", "trout", "tulip", "turtle", "wardrobe", "whale",
    "willow_tree", "wolf", "woman", "worm")

#: Source family -> its label names, in label order, where they are not wnids.
LABEL_NAMES: Mapping[str, tuple] = MappingProxyType({"cifar10": CIFAR10_LABELS, "cifar100": CIFAR100_LABELS})


def wnid_label_names(wnids: Sequence[str]) -> tuple:
    """Unique short class names of ``wnids`` in their order: a name two classes share (``crane``,
    ``maillot``) gets its wnid, ``'crane (n02012849)'``."""
    names = [class_name(w) for w in wnids]
    shared = Counter(names)
    return tuple(f"{n} ({w})" if shared[n] > 1 else n for n, w in zip(names, wnids))


CARD = "README.md"
"""The dataset card at the top of a published release."""
CROISSANT = "croissant.json"
"""Its MLCommons Croissant metadata."""
HF_INDEX = "metadata.parquet"
"""The Hugging Face index of a tree of images (``imagefolder``'s metadata file name)."""
HF_DIR = "hf"
"""Folder of the per-config Hugging Face parquet files of a release of stacked arrays."""
PUBLISHED_NAMES = (CARD, CROISSANT, HF_INDEX, HF_DIR)
"""Every top-level name ``imagenet-cp publish`` adds to a release (a rebuild removes them with the release)."""

#: Upper bounds of Hugging Face's ``size_categories``.
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))


def size_category(examples: int) -> str:
    """Hugging Face's size category of a dataset of ``examples`` examples."""
    return next((name for bound, name in SIZE_CATEGORIES if examples < bound), "n>1T")
