"""The types of an edition's ImageNet-P facts, and the schedule helpers its table is written with.

Each edition's facts are one :class:`PEdition`, defined in its module ``schemas/editions/<name>.py``
and hung on its :class:`schemas.edition.Edition` as ``edition.p``: its frame size, what the sequence functions receive, where
its views come from (:class:`Arrangement`: a list of steps before the perturbation, a list of steps
where the 224 edition crops, a list after), every perturbation's schedule (the same
:class:`schemas.imagenet_p.Perturbation` rows as the 224 table, with this edition's values and frame
counts) and its release layout. The values are those of ``hendrycks/robustness`` @ 8190fe3,
``ImageNet-P/create_p/make_imagenet_p_inception.py``, ``make_tinyimagenet_p.py``,
``make_imagenet_64_p.py`` and ``make_cifar_p.py`` (``docs/reference/algorithms.md``, "Editions of ImageNet-P").

Steps are tuples ``(operation, *arguments)`` with the operation names of the ImageNet-C editions'
preprocessing recipes: ``('resize_short_side', s)`` (torchvision ``Resize(s)``, PIL bilinear),
``('center_crop', s)`` (torchvision ``CenterCrop(s)``), ``('center_crop_fraction', f)`` (the inception
driver's central ``int(f*H) x int(f*W)`` crop, offsets rounded half to even) and
``('resize', s, 'bilinear')`` (PIL resize to ``s x s``, aspect not kept).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

from schemas.imagenet_p import (CRF20_RATE_CONTROL, GRAIN_RATE_CONTROL, PERTURBATIONS as PERTURBATIONS_224,
                                Perturbation, Ramp)

__all__ = ["MP4", "NPY", "Arrangement", "PTfdsNames", "PEdition", "p_row", "p_noise", "DRIP_224", "DRIP_SMALL",
           "ROTATE", "TILT", "SCALE", "SHEAR", "ZOOM", "BRIGHTNESS", "p_table"]

MP4 = "mp4"
"""Output: one H.264 MP4 per image and dataset (``<tree>/<dataset>/<wnid>/<stem>.mp4``)."""
NPY = "npy"
"""Output: one uint8 ``.npy`` per dataset, shape (N, T, H, W, 3), test-set order (CIFAR-10-P)."""


@dataclass(frozen=True)
class Arrangement:
    """Where a sequence's views come from, as three step lists (see the module docstring).

    Attributes
    ----------
    base : tuple
        Steps applied once to the input: the image the whole-image operations (affine, tilt) see.
    view : tuple
        Steps applied where the 224 edition applies ``CenterCrop(224)``: after a whole-image
        operation, or before a pixel operation (noise, blur, weather, brightness).
    after : tuple
        Steps applied to every finished frame (the 64 editions' motion_blur: ``Resize(64)``).
    """

    base: tuple = ()
    view: tuple = ()
    after: tuple = ()


@dataclass(frozen=True)
class PTfdsNames:
    """How the ImageNet-P release of one source family of an edition appears in TFDS.

    Attributes
    ----------
    name : str
        TFDS dataset name.
    frame_shape : tuple
        ``(height, width)`` of every frame, ``None`` where it varies (the 64 editions'
        motion_blur frames keep the image's aspect).
    labels : tuple of str
        Class names of the ``label`` feature (an input's own class names replace them).
    split : str
        The one split written.
    title : str
        What the dataset is, for its description.
    description : str, optional
        The whole description, where it is not the one made from ``title``.
    release_note : str
        ``release_notes`` of version 1.0.0.
    """

    name: str
    frame_shape: tuple
    labels: tuple
    split: str
    title: str
    description: Optional[str] = None
    release_note: str = "imagenet-cp: faithful to the reference schedules of this edition."


@dataclass(frozen=True)
class PEdition:
    """The ImageNet-P facts of one edition.

    Attributes
    ----------
    name : str
        Edition name, shared with the ImageNet-C editions (``'inception'``, ``'tinyimagenet'``,
        ``'imagenet64'``, ``'cifar'``).
    frame_size : int
        Side of the (square) frames, pixels; the 64 editions' motion_blur frames keep the aspect.
    input : str
        What the sequence functions receive: ``'resized256'`` (224: the RGB image after
        ``Resize(256)``, uncropped), ``'full'`` (the RGB image at full resolution) or
        ``'cifar32'`` (a 32x32x3 test image).
    arrangement : Arrangement
        Views of every perturbation not in ``arrangements``.
    arrangements : Mapping[str, Arrangement]
        Per-perturbation exceptions.
    perturbations : Mapping[str, Perturbation]
        The 14 perturbations with this edition's parameters and frame counts, in the 224 table's order.
    output : str
        :data:`MP4` or :data:`NPY`.
    trees : tuple of str
        Top folder of the official layout, one per source family of :attr:`tfds`, in its order
        (CIFAR: ``CIFAR-10-P``, ``CIFAR-100-P``).
    reference : str
        The reference driver.
    preprocessing : str
        One line for documents and ``release.json``.
    num_classes : tuple of int
        Classes of the labels of each tree, in the order of :attr:`trees` (the logits per frame a model
        evaluated on it must give; CIFAR: 10, 100).
    tfds : Mapping[str, PTfdsNames]
        Source family -> its TFDS dataset names (the first is the default; CIFAR: ``cifar10_p``,
        ``cifar100_p``).
    class_filter : str, optional
        A filter the reference driver applied that a build does not (documented only).
    """

    name: str
    frame_size: int
    input: str
    arrangement: Arrangement
    perturbations: Mapping[str, Perturbation]
    output: str
    trees: tuple
    reference: str
    preprocessing: str
    num_classes: tuple
    tfds: Mapping[str, PTfdsNames] = field(default_factory=lambda: MappingProxyType({}))
    arrangements: Mapping[str, Arrangement] = field(default_factory=lambda: MappingProxyType({}))
    class_filter: Optional[str] = None

    def __post_init__(self):
        if not isinstance(self.perturbations, Mapping):
            object.__setattr__(self, "perturbations", MappingProxyType({p.name: p for p in self.perturbations}))
        object.__setattr__(self, "arrangements", MappingProxyType(dict(self.arrangements)))
        object.__setattr__(self, "tfds", MappingProxyType(dict(self.tfds)))
        assert tuple(self.perturbations) == tuple(PERTURBATIONS_224), self.name
        assert set(self.arrangements) <= set(self.perturbations), self.name
        if len(self.num_classes) != len(self.trees):
            raise ValueError(f"edition {self.name}: num_classes {self.num_classes} needs one count per tree {self.trees}")
        # the rate control of each row is the 224 table's: -tune grain for the noise types, CRF 20 otherwise
        assert all(p.rate_control in (GRAIN_RATE_CONTROL, CRF20_RATE_CONTROL) for p in self.perturbations.values())

    def tree_of(self, family: Optional[str] = None) -> str:
        """The tree of source ``family``: :attr:`trees` are in the order of the families of
        :attr:`tfds` (CIFAR: ``cifar10`` -> ``CIFAR-10-P``, ``cifar100`` -> ``CIFAR-100-P``); the
        first tree for a family without its own."""
        families = list(self.tfds)
        index = families.index(family) if family in families else 0
        return self.trees[index] if index < len(self.trees) else self.trees[0]

    def classes_of(self, tree: str) -> int:
        """The number of classes of the labels of ``tree``, one of :attr:`trees`.

        Raises
        ------
        ValueError
            If ``tree`` is not a tree of this edition.
        """
        if tree not in self.trees:
            raise ValueError(f"{tree!r} is not an ImageNet-P tree of the {self.name} edition; its trees: "
                             f"{', '.join(self.trees)}")
        return self.num_classes[self.trees.index(tree)]

    def tfds_names(self, family: Optional[str] = None) -> PTfdsNames:
        """The TFDS names of source ``family`` (default, or a family without its own: the first)."""
        if not self.tfds:
            raise ValueError(f"edition {self.name} declares no ImageNet-P TFDS dataset")
        return self.tfds.get(family) or next(iter(self.tfds.values()))

    def arrangement_of(self, perturbation: str) -> Arrangement:
        """The views of ``perturbation`` in this edition."""
        return self.arrangements.get(perturbation, self.arrangement)

    def to_json(self) -> dict:
        """The facts ``release.json`` records."""
        return {"name": self.name, "frame_size": self.frame_size, "input": self.input, "output": self.output,
                "preprocessing": self.preprocessing, "reference": self.reference, "trees": list(self.trees),
                "frames": {name: p.frames for name, p in self.perturbations.items()}}


def p_row(name: str, frames: int, *difficulty_params) -> Perturbation:
    """A perturbation row: the 224 row's category, set and rate control, this edition's values."""
    base = PERTURBATIONS_224[name]
    return Perturbation(name, base.category, base.subset, frames, base.rate_control, tuple(
        MappingProxyType(dict(params)) for params in difficulty_params))


def p_noise(name: str, key: str, values) -> Perturbation:
    return p_row(name, 31, *({key: value} for value in values))


DRIP_224 = (0.05, 0.1, 0.15, 0.7)
DRIP_SMALL = (0.2, 0.8)  # np.convolve(..., [0.2, 0.8], 'same'): L'[r] = 0.2 L[r] + 0.8 L[r-1]

# Geometric schedules shared with 224 (degrees / factors), as the reference edition files list them.
ROTATE = dict(angles=Ramp(-15, 1), resample="bilinear")
TILT = dict(angles=Ramp(-15, 1))
SCALE = dict(scales=Ramp(40, 2.5, 100.), resample="bilinear")
SHEAR = dict(shears=Ramp(-15, 1), resample="bilinear")
ZOOM = dict(scales=Ramp(1, 0.004))
BRIGHTNESS = dict(deltas=Ramp(-15 * 2, 2, 100.))


def p_table(*, gaussian, shot, speckle, motion_blur, motion_frames=31, snow, translate, translate_frames,
           gaussian_blur, spatter, brightness=BRIGHTNESS, tilt=TILT, scale=SCALE) -> tuple:
    return (
        p_noise("gaussian_noise", "sigma", gaussian),  # values reported; draws from the example's RandomState
        p_noise("shot_noise", "photons", shot),
        p_row("motion_blur", motion_frames, motion_blur),
        p_row("zoom_blur", 31, ZOOM),
        p_row("snow", 31, snow),
        p_row("brightness", 31, brightness),
        p_row("translate", translate_frames, dict(shifts=translate, resample="nearest")),
        p_row("rotate", 31, ROTATE),
        p_row("tilt", 31, tilt),
        p_row("scale", 31, scale),
        p_noise("speckle_noise", "sigma", speckle),
        p_row("gaussian_blur", 31, gaussian_blur),
        p_row("spatter", 31, spatter),
        p_row("shear", 31, SHEAR),
    )


