"""The Edition type: everything one edition of the benchmark is, declared as data.

An edition (``imagenet`` 224, ``inception`` 299, ``tinyimagenet`` 64, ``imagenet64`` 64, ``cifar`` 32)
is one :class:`Edition` value: its name, image side, preprocessing recipe and the facts of each
benchmark built on it. The ImageNet-C facts are a :class:`CEdition` component (``edition.c``):
severity tables with every size-bound constant in their rows, output encoding, release tree and
file naming, TFDS dataset and config names, package categories and build defaults. The ImageNet-P
facts are a :class:`schemas.imagenet_p_editions.PEdition` (``edition.p``): schedules, views, trees
and TFDS names; an edition without P has ``p = None``.

This module holds the types only; the values live in one table module per edition
(``schemas/editions/<name>.py``) and the catalogue :data:`schemas.editions.EDITIONS`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

from schemas.baselines import ErrorBaseline
from schemas.imagenet_c import Corruption
from schemas.imagenet_p_editions import PEdition
from schemas.inputs import Input
from schemas.release import CLEAN

__all__ = ["DEFAULT_EDITION", "SOURCE_FAMILIES", "JPEG", "NPY", "ENCODINGS", "CLEAN_TEMPLATE", "Preprocessing",
           "TfdsNames", "IMAGENET_LABELS", "RELEASE_LABELS", "LABEL_SPACES", "Layout", "CEdition", "Card", "ModelInput", "Scoring", "Edition"]

DEFAULT_EDITION = "imagenet"
"""The edition every API and command uses when none is named: ImageNet-C/P at 224."""

SOURCE_FAMILIES: Mapping[str, str] = MappingProxyType({
    "imagenet": "ImageNet val", "tinyimagenet": "the tiny-imagenet-200 folder", "cifar10": "cifar-10-batches-py",
    "cifar100": "cifar-100-python"})
"""Source family an edition can read (:attr:`Edition.sources`) -> the input it is, for help texts;
:data:`pipelines.inputs.families.OPENERS` lists each."""

JPEG = "jpeg"
"""Output encoding: one Pillow JPEG per output (quality 85, Huffman optimisation on)."""
NPY = "npy"
"""Output encoding: raw uint8 arrays, stacked per corruption into one ``.npy`` (CIFAR-10-C layout)."""
ENCODINGS = (JPEG, NPY)

CLEAN_TEMPLATE = f"{CLEAN}/{{wnid}}/{{file_name}}"
"""Where a JPEG layout puts its clean config below the tree: ``clean/<wnid>/<file>``."""


@dataclass(frozen=True)
class Preprocessing:
    """How a source image becomes the N x N RGB array the corruptions receive, as a list of steps.

    Every recipe first converts to RGB (PIL ``convert('RGB')``), then applies ``steps`` in order.
    Each step is a tuple ``(operation, *arguments)``:

    - ``('resize_short_side', s)``: torchvision ``Resize(s)`` with an int: PIL BILINEAR, short
      side ``s`` pixels, long side truncated;
    - ``('center_crop', s)``: torchvision ``CenterCrop(s)``, offsets ``int(round((dim - s) / 2))``;
    - ``('center_crop_fraction', f)``: crop ``(int(f*H), int(f*W))`` at offsets rounded half to
      even (the inception driver's ``resized_center_crop``);
    - ``('center_square', )``: the centred square of side ``min(H, W)``, offsets ``(dim - side) // 2``;
    - ``('resize', s, filter)``: PIL resize to ``s x s`` with ``filter`` ``'bilinear'`` or ``'box'``
      (aspect not kept).

    Attributes
    ----------
    steps : tuple of tuple
        The operations, in order.
    description : str
        One line for documents and ``release.json``.
    """

    steps: tuple
    description: str = ""


@dataclass(frozen=True)
class TfdsNames:
    """How an edition's releases appear in TFDS.

    Attributes
    ----------
    dataset : str
        TFDS dataset name, e.g. ``'imagenet2012_corrupted'`` or ``'cifar10_corrupted'``.
    version : str
        ``'X.Y.Z'``.
    split : str
        The one split written (``'validation'`` for ImageNet-style, ``'test'`` for CIFAR).
    config_names : Mapping[str, str]
        Corruption name -> the name TFDS uses in its configs ``<name>_<severity>`` where it
        differs (``cifar10_corrupted``: ``glass_blur`` -> ``frosted_glass_blur``); absent names
        are used as they are.
    image_format : str
        Encoding of the ``image`` feature inside the TFRecords: ``'jpeg'`` or ``'png'``.
    file_name_feature : bool
        Whether examples carry a ``file_name`` Text feature (``imagenet2012_corrupted`` does,
        ``cifar10_corrupted`` does not).
    description : str
        ``dataset_info.json``'s description.
    """

    dataset: str
    version: str
    split: str
    config_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    image_format: str = "jpeg"
    file_name_feature: bool = True
    description: str = ""

    def config(self, corruption: str, severity: int) -> str:
        """TFDS config name of one corruption and severity, e.g. ``'frosted_glass_blur_1'``."""
        return f"{self.config_names.get(corruption, corruption)}_{severity}"


IMAGENET_LABELS = "imagenet"
"""Label space of a layout whose class folders are ImageNet-1k wnids and whose labels are their
indices among the 1000 (:func:`schemas.wnids.wnid_to_label`): a model's outputs score as they are."""
RELEASE_LABELS = "release"
"""Label space of a layout whose labels are its own classes, in the release's order (its TFDS
``label.labels.txt``, or its ``labels.npy``)."""
LABEL_SPACES = (IMAGENET_LABELS, RELEASE_LABELS)


@dataclass(frozen=True)
class Layout:
    """Where a release of one source family puts its files, and how TFDS sees it.

    Attributes
    ----------
    tree : str
        Top folder of the official tree in the release, e.g. ``'ImageNet-C'`` or ``'CIFAR-10-C'``.
    path_template : str
        Path of one output below ``tree`` (JPEG editions), with fields ``corruption``,
        ``severity``, ``wnid``, ``file_name``; for ``npy`` editions the per-corruption file
        ``'{corruption}.npy'``.
    labels_file : str, optional
        ``npy`` editions: name of the labels array beside the corruption files.
    tfds : TfdsNames
        The TFDS dataset of this layout.
    num_classes : int
        Number of classes of the labels.
    label_space : str
        What the labels are (:data:`LABEL_SPACES`): ImageNet-1k's indices (:data:`IMAGENET_LABELS`)
        or the release's own classes (:data:`RELEASE_LABELS`).
    packages : Mapping[str, tuple], optional
        Tar name (without ``.tar``) -> the corruption categories it holds, in order; None: one
        tar per category of :attr:`CEdition.categories` (the ImageNet-C Zenodo layout).
    package_prefix : bool
        Whether tar members start with the tree folder (``CIFAR-10-C/fog.npy``) or below it
        (``fog/1/<wnid>/<file>``).
    clean_template : str, optional
        Path below ``tree`` of one output of the clean config (the image as the corruptions
        receive it, encoded as the outputs), with fields ``wnid`` and ``file_name``, e.g.
        ``'clean/{wnid}/{file_name}'`` (the ``.npy`` editions: ``'clean.npy'``, one block of N
        rows in input order); its TFDS config is ``clean``
        (:data:`schemas.release.CLEAN`). None: this layout has no clean config.
    """

    tree: str
    path_template: str
    tfds: TfdsNames
    num_classes: int
    label_space: str
    labels_file: Optional[str] = None
    packages: Optional[Mapping[str, tuple]] = None
    package_prefix: bool = False
    clean_template: Optional[str] = None

    def __post_init__(self):
        if self.label_space not in LABEL_SPACES:
            raise ValueError(f"layout {self.tree}: label_space must be one of {', '.join(LABEL_SPACES)}, "
                             f"got {self.label_space!r}")
        if self.label_space == IMAGENET_LABELS and self.num_classes != 1000:
            raise ValueError(f"layout {self.tree}: ImageNet's label space has 1000 classes, not {self.num_classes}")

    def corruption_entry(self, corruption: str) -> str:
        """The top-level entry of ``corruption`` below the tree: its folder or its ``.npy``."""
        return self.path_template.split("/", 1)[0].format(corruption=corruption)


@dataclass(frozen=True)
class CEdition:
    """The ImageNet-C facts of an edition.

    Attributes
    ----------
    corruptions : Mapping[str, schemas.imagenet_c.Corruption]
        Name -> corruption with its 5 severity rows, in release order (15 benchmark, then 4
        extras). Each row holds every keyword argument of the transform, size-bound constants
        included (fog's plasma ``mapsize``, frost's ``texture_scale``, zoom factor lists, kernel
        radii, elastic's pixel-scaled values).
    encoding : str
        :data:`JPEG` or :data:`NPY`.
    jpeg_quality : int
        Pillow quality of the saved JPEGs (``save(quality=q, optimize=True)``, baseline 4:2:0);
        unused by ``npy`` editions.
    layouts : Mapping[str, Layout]
        Source family (``'imagenet'``, ``'tinyimagenet'``, ``'cifar10'``, ``'cifar100'``) -> the
        layout of its release; the first is the default.
    categories : tuple of str
        Package categories in release order (also the names of the category tars).
    examples_per_shard : int
        Default average number of examples per TFRecord shard.
    reference : str
        The reference generator this edition follows.
    """

    corruptions: Mapping[str, Corruption]
    encoding: str
    layouts: Mapping[str, Layout]
    jpeg_quality: int = 85
    categories: tuple = ("noise", "blur", "weather", "digital", "extra")
    examples_per_shard: int = 2048
    reference: str = ""

    def __post_init__(self):
        if not isinstance(self.corruptions, Mapping):  # a table module's tuple of Corruption rows
            object.__setattr__(self, "corruptions", MappingProxyType({c.name: c for c in self.corruptions}))
        object.__setattr__(self, "layouts", MappingProxyType(dict(self.layouts)))
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {self.encoding!r}")
        if not self.layouts:
            raise ValueError("an edition needs at least one layout")

    @property
    def default_family(self) -> str:
        return next(iter(self.layouts))

    def layout(self, family: Optional[str] = None) -> Layout:
        """The layout of source family ``family`` (default: the edition's first)."""
        family = family or self.default_family
        if family not in self.layouts:
            raise ValueError(f"unknown source family {family!r} for this edition; valid: {', '.join(self.layouts)}")
        return self.layouts[family]


@dataclass(frozen=True)
class Card:
    """What the dataset card (``README.md``) and ``croissant.json`` of a release say of its edition.

    Attributes
    ----------
    title_suffix : str
        The edition in the benchmark's title, e.g. ``'299x299, Inception input'`` for
        ``ImageNet-C (299x299, Inception input)`` (a release whose tree has an official name, such as
        ``CIFAR-10-C``, is titled by its tree instead).
    inputs : Mapping[str, schemas.inputs.Input]
        Source family -> the input data set it is, with its citation, licence and terms; one per
        family of :attr:`Edition.sources`.
    citation : str
        BibTeX of the edition's own paper, cited after the benchmark's; '' for none.
    """

    title_suffix: str
    inputs: Mapping[str, Input]
    citation: str = ""

    def __post_init__(self):
        object.__setattr__(self, "inputs", MappingProxyType(dict(self.inputs)))

    def input(self, family: Optional[str] = None) -> Input:
        """The input data set of source ``family`` (None: the edition's first family).

        Raises
        ------
        ValueError
            If this edition reads no such family.
        """
        family = family or next(iter(self.inputs))
        if family not in self.inputs:
            raise ValueError(f"unknown source family {family!r} for this edition; valid: {', '.join(self.inputs)}")
        return self.inputs[family]


@dataclass(frozen=True)
class ModelInput:
    """What evaluation feeds a model of the edition: float32 (3, size, size), ``(x / 255 - mean) / std``.

    Attributes
    ----------
    size : int
        Side of the model input in pixels.
    mean, std : tuple of float
        Per RGB channel.
    crop_any_size : bool
        True: an image of any size becomes the input by torchvision's ``Resize(256)`` +
        ``CenterCrop(224)`` (:func:`pipelines.evaluation.model_input.model_input`, the reference
        evaluators' recipe); False: the edition's images are ``size`` x ``size`` already, and a
        video frame is centre-cropped to that.
    """

    size: int
    mean: tuple
    std: tuple
    crop_any_size: bool = False


@dataclass(frozen=True)
class Scoring:
    """How evaluation scores the edition's ImageNet-C and ImageNet-P releases.

    Attributes
    ----------
    paper_metrics : bool
        True: the papers' sections of ``metrics.json`` (``imagenet_c``: CE, mCE and Relative mCE;
        ``imagenet_p``: mFR and mT5D) and their report; False: the edition's own ``imagenet_c``
        section (errors per corruption, CE where a baseline is given) and report.
    baseline : ErrorBaseline, optional
        The errors CE divides by when ``evaluate`` is given no ``--baseline``.
    in_distribution : bool
        Whether a release's clean config can give ImageNet-O's in-distribution images (ImageNet-O is
        scored against ImageNet validation images as the 224 recipe makes them).
    """

    paper_metrics: bool = False
    baseline: Optional[ErrorBaseline] = None
    in_distribution: bool = False


@dataclass(frozen=True)
class Edition:
    """One edition of the benchmarks: image side, preprocessing and per-benchmark facts.

    Attributes
    ----------
    name : str
        Catalogue name (``'imagenet'``, ``'inception'``, ``'tinyimagenet'``, ``'imagenet64'``, ``'cifar'``).
    image_size : int
        Side N in pixels of the square RGB arrays the corruptions receive.
    preprocessing : Preprocessing
        Source image -> N x N x 3 uint8.
    sources : tuple of str
        Source families a build accepts (see :attr:`CEdition.layouts`).
    title : str
        Human-readable name, e.g. ``'CIFAR-10-C / CIFAR-100-C'``.
    card : Card
        What a release's card says of the edition (required: an edition without one is refused).
    c : CEdition, optional
        The ImageNet-C facts.
    p : PEdition, optional
        The ImageNet-P facts (:class:`schemas.imagenet_p_editions.PEdition`, defined in the edition's
        module); None where the edition has no P.
    model_input : ModelInput
        What evaluation feeds a model.
    scoring : Scoring
        How evaluation scores its releases (by default: the edition's own sections).
    """

    name: str
    image_size: int
    preprocessing: Preprocessing
    sources: tuple
    title: str = ""
    card: Optional[Card] = None
    c: Optional[CEdition] = None
    p: Optional[PEdition] = None
    model_input: Optional[ModelInput] = None
    scoring: Scoring = Scoring()

    def __post_init__(self):
        if not isinstance(self.card, Card):
            raise ValueError(f"edition {self.name!r} declares no card (schemas.edition.Card: title suffix, "
                             "citation, inputs)")
        if missing := [family for family in self.sources if family not in self.card.inputs]:
            raise ValueError(f"edition {self.name!r}: its card names no input for source {', '.join(missing)}")
