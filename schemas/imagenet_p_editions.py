"""The ImageNet-P facts of every edition (224, inception 299, tinyimagenet 64, imagenet64 64, cifar 32), as data.

Each edition's facts are one :class:`PEdition`, hung on its :class:`schemas.edition.Edition` as
``edition.p``: its frame size, what the sequence functions receive, where
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
        Top folder of the official layout, one per source dataset (CIFAR: ``CIFAR-10-P``, ``CIFAR-100-P``).
    reference : str
        The reference driver.
    preprocessing : str
        One line for documents and ``release.json``.
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
    arrangements: Mapping[str, Arrangement] = field(default_factory=lambda: MappingProxyType({}))
    class_filter: Optional[str] = None

    def __post_init__(self):
        if not isinstance(self.perturbations, Mapping):
            object.__setattr__(self, "perturbations", MappingProxyType({p.name: p for p in self.perturbations}))
        object.__setattr__(self, "arrangements", MappingProxyType(dict(self.arrangements)))
        assert tuple(self.perturbations) == tuple(PERTURBATIONS_224), self.name
        assert set(self.arrangements) <= set(self.perturbations), self.name

    def arrangement_of(self, perturbation: str) -> Arrangement:
        """The views of ``perturbation`` in this edition."""
        return self.arrangements.get(perturbation, self.arrangement)

    def to_json(self) -> dict:
        """The facts ``release.json`` records."""
        return {"name": self.name, "frame_size": self.frame_size, "input": self.input, "output": self.output,
                "preprocessing": self.preprocessing, "reference": self.reference, "trees": list(self.trees),
                "frames": {name: p.frames for name, p in self.perturbations.items()}}


def _row(name: str, frames: int, *difficulty_params) -> Perturbation:
    """A perturbation row: the 224 row's category, set and rate control, this edition's values."""
    base = PERTURBATIONS_224[name]
    return Perturbation(name, base.category, base.subset, frames, base.rate_control, tuple(
        MappingProxyType(dict(params)) for params in difficulty_params))


def _noise(name: str, key: str, values) -> Perturbation:
    return _row(name, 31, *({key: value} for value in values))


_DRIP_224 = (0.05, 0.1, 0.15, 0.7)
_DRIP_SMALL = (0.2, 0.8)  # np.convolve(..., [0.2, 0.8], 'same'): L'[r] = 0.2 L[r] + 0.8 L[r-1]

# Geometric schedules shared with 224 (degrees / factors), as the reference edition files list them.
_ROTATE = dict(angles=Ramp(-15, 1), resample="bilinear")
_TILT = dict(angles=Ramp(-15, 1))
_SCALE = dict(scales=Ramp(40, 2.5, 100.), resample="bilinear")
_SHEAR = dict(shears=Ramp(-15, 1), resample="bilinear")
_ZOOM = dict(scales=Ramp(1, 0.004))
_BRIGHTNESS = dict(deltas=Ramp(-15 * 2, 2, 100.))


def _table(*, gaussian, shot, speckle, motion_blur, motion_frames=31, snow, translate, translate_frames,
           gaussian_blur, spatter, brightness=_BRIGHTNESS, tilt=_TILT, scale=_SCALE) -> tuple:
    return (
        _noise("gaussian_noise", "sigma", gaussian),  # values reported; draws from the example's RandomState
        _noise("shot_noise", "photons", shot),
        _row("motion_blur", motion_frames, motion_blur),
        _row("zoom_blur", 31, _ZOOM),
        _row("snow", 31, snow),
        _row("brightness", 31, brightness),
        _row("translate", translate_frames, dict(shifts=translate, resample="nearest")),
        _row("rotate", 31, _ROTATE),
        _row("tilt", 31, tilt),
        _row("scale", 31, scale),
        _noise("speckle_noise", "sigma", speckle),
        _row("gaussian_blur", 31, gaussian_blur),
        _row("spatter", 31, spatter),
        _row("shear", 31, _SHEAR),
    )


_RCC_299 = (("center_crop_fraction", 0.875), ("resize", 299, "bilinear"))

INCEPTION = PEdition(
    name="inception", frame_size=299, input="full",
    # translate / rotate / tilt / shear move the full image, then the 299 view; pixel operations see the view
    arrangement=Arrangement(view=_RCC_299),
    # zoom_blur and scale act on the 299 view itself (their CenterCrop(299) is a no-op)
    arrangements={"zoom_blur": Arrangement(base=_RCC_299), "scale": Arrangement(base=_RCC_299)},
    perturbations=_table(
        gaussian=(0.035, 0.055, 0.085), shot=(250, 100, 50), speckle=(0.06, 0.11, 0.16),
        motion_blur=dict(radius=13, sigma=3, angles=Ramp(-30 * 4, 4)),
        snow=dict(loc=0.05, scale=0.3, zoom=3, threshold=0.5, blur_radius=14, blur_sigma=4,
                  angles=Ramp(-150, 4), blend=0.85),
        translate=Ramp(-20, 1), translate_frames=41,
        gaussian_blur=dict(sigmas=Ramp(0.35, 0.035), truncate=6.0),
        spatter=dict(loc=0.65, scale=0.3, blur_sigma=4, threshold=0.69, intensity=0.6, drip_kernel=_DRIP_224)),
    output=MP4, trees=("ImageNet-P-299",),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_p_inception.py",
    preprocessing="RGB at full size; 299 view = central int(0.875 H) x int(0.875 W) crop, PIL bilinear 299x299 "
                  "(aspect not kept); translate/rotate/tilt/shear act on the full image before the view, "
                  "zoom_blur and scale on the view")

_SMALL = dict(
    gaussian=(0.025, 0.05, 0.075), shot=(500, 250, 125), speckle=(0.05, 0.10, 0.15),
    motion_blur=dict(radius=14, sigma=3, angles=Ramp(-30 * 5, 5)),
    snow=dict(loc=0.05, scale=0.28, zoom=2, threshold=0.5, blur_radius=10, blur_sigma=2.5,
              angles=Ramp(-150, 4), blend=0.85),
    translate=Ramp(-15, 1), translate_frames=31,
    gaussian_blur=dict(sigmas=Ramp(0.35, 0.014), truncate=7.0),
    spatter=dict(loc=0.6, scale=0.25, blur_sigma=1.75, threshold=0.7, intensity=0.6, drip_kernel=_DRIP_SMALL))

#: The 64 editions blur the full-size image, then Resize(64) without a crop (frames keep the aspect).
_MOTION_BLUR_64 = Arrangement(after=(("resize_short_side", 64),))

IMAGENET64 = PEdition(
    name="imagenet64", frame_size=64, input="full",
    arrangement=Arrangement(base=(("resize", 64, "bilinear"),)),
    arrangements={"motion_blur": _MOTION_BLUR_64},
    perturbations=_table(**_SMALL),
    output=MP4, trees=("ImageNet-64x64-P",),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_64_p.py",
    preprocessing="RGB at full size; PIL bilinear 64x64 (aspect not kept) before every perturbation; "
                  "motion_blur blurs the full-size image, then Resize(64) (short side 64, aspect kept)",
    class_filter="the reference driver wrote only the sorted class folders 750..999; a build writes every class")

TINYIMAGENET = PEdition(
    name="tinyimagenet", frame_size=64, input="full",
    arrangement=Arrangement(base=(("resize_short_side", 64),), view=(("center_crop", 64),)),
    arrangements={"motion_blur": _MOTION_BLUR_64},
    perturbations=_table(**_SMALL),
    output=MP4, trees=("Tiny-ImageNet-P",),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_tinyimagenet_p.py",
    preprocessing="RGB at full size (the reference read bounding-box crops); Resize(64) (short side 64), "
                  "CenterCrop(64) after whole-image moves, before pixel operations; motion_blur blurs the "
                  "full-size image, then Resize(64) (aspect kept, no crop)")

CIFAR = PEdition(
    name="cifar", frame_size=32, input="cifar32",
    arrangement=Arrangement(),
    perturbations=_table(
        gaussian=(0.02, 0.04, 0.06), shot=(700, 400, 200), speckle=(0.05, 0.07, 0.10),
        motion_blur=dict(radius=6, sigma=1.8, angles=Ramp(-20 * 9, 9)), motion_frames=21,
        snow=dict(loc=0.05, scale=0.3, zoom=2, threshold=0.5, blur_radius=10, blur_sigma=2,
                  angles=Ramp(-150, 4), blend=0.85),
        brightness=dict(deltas=Ramp(-15 * 1.5, 1.5, 100.)),  # (i - 15) * 1.5 / 100
        translate=Ramp(-7, 1), translate_frames=16,  # -7 .. +8 px
        tilt=dict(angles=Ramp(-15 * 0.75, 0.75)),  # 0.75 * (i - 15) degrees
        scale=dict(scales=Ramp(70, 2, 100.), resample="bilinear"),  # (2 i + 70) / 100
        gaussian_blur=dict(sigmas=Ramp(0.3, 0.015), truncate=7.0),
        spatter=dict(loc=0.6, scale=0.265, blur_sigma=1.75, threshold=0.7, intensity=0.6, drip_kernel=_DRIP_SMALL)),
    output=NPY, trees=("CIFAR-10-P", "CIFAR-100-P"),
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_cifar_p.py",
    preprocessing="none: the 32x32x3 uint8 test image as it is")

IMAGENET = PEdition(
    name="imagenet", frame_size=224, input="resized256",
    arrangement=Arrangement(view=(("center_crop", 224),)),
    perturbations=PERTURBATIONS_224,
    output=MP4, trees=("imagenet-p",),  # schemas.release.P_TREE
    reference="hendrycks/robustness@8190fe3 ImageNet-P/create_p/make_imagenet_p.py",
    preprocessing="Resize(256) then RGB; CenterCrop(224) after whole-image moves, before pixel operations")

#: name -> PEdition, every edition with an ImageNet-P (224 first).
P_EDITIONS: Mapping[str, PEdition] = MappingProxyType({
    e.name: e for e in (IMAGENET, INCEPTION, TINYIMAGENET, IMAGENET64, CIFAR)})


#: The rate control of each row is the 224 table's: -tune grain for the noise types, CRF 20 otherwise.
assert all(p.rate_control in (GRAIN_RATE_CONTROL, CRF20_RATE_CONTROL)
           for e in P_EDITIONS.values() for p in e.perturbations.values())
