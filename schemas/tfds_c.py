"""The TFDS dataset of an edition's ImageNet-C release, generated from its :class:`schemas.edition.Layout`.

``imagenet`` is TFDS's own ``imagenet2012_corrupted`` (:data:`schemas.tfds.IMAGENET2012_CORRUPTED`);
``cifar`` is TFDS's ``cifar10_corrupted`` 1.0.0 (PNG images, ``ClassLabel(num_classes=10)``, split
``test``, configs ``<name>_<severity>`` with ``frosted_glass_blur`` and ``elastic``), so that an
unchanged ``tfds.load`` reads it; the others get datasets of their own with the same features.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Optional, Sequence

from schemas.edition import Edition
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.release import CLEAN
from schemas.tfds import (BENCHMARK_CITATION, BENCHMARK_HOMEPAGE, IMAGENET2012_CORRUPTED, ClassLabel, Image, Text,
                          TfdsDataset)
from schemas.wnids import imagenet_wnids

__all__ = ["c_dataset"]


def c_dataset(edition: Edition, family: Optional[str] = None,
              class_names: Optional[Sequence[str]] = None) -> TfdsDataset:
    """The TFDS dataset of ``edition``'s release from source ``family``.

    Parameters
    ----------
    edition : Edition
        The edition (its ``c`` facts).
    family : str, optional
        Source family (default: the edition's first).
    class_names : sequence of str, optional
        Class names in label order (Tiny ImageNet's wnids); default: the 1000 ImageNet wnids for
        ImageNet sources, no names (``num_classes`` only) for CIFAR.
    """
    layout = edition.c.layout(family)
    names = layout.tfds
    if names.dataset == IMAGENET2012_CORRUPTED.name:
        return IMAGENET2012_CORRUPTED
    side = edition.image_size
    if names.file_name_feature:  # ImageNet-style: labelled by wnid
        label = ClassLabel(names=tuple(class_names) if class_names else imagenet_wnids())
    else:
        label = ClassLabel(num_classes=layout.num_classes)
    features = {"image": Image(shape=(side, side, 3), encoding_format=names.image_format), "label": label}
    if names.file_name_feature:
        features["file_name"] = Text()
    return TfdsDataset(
        name=names.dataset,
        version=names.version,
        features=MappingProxyType(features),
        config_descriptions=MappingProxyType({
            **{names.config(c, s): f"corruption type = {names.config_names.get(c, c)}, severity = {s}"
               for c in CORRUPTIONS for s in SEVERITIES},
            **({CLEAN: IMAGENET2012_CORRUPTED.config_descriptions[CLEAN]} if layout.clean_template else {})}),
        split=names.split,
        description=names.description or f"{edition.title} built by imagenet-cp.",
        citation=BENCHMARK_CITATION,
        homepage=BENCHMARK_HOMEPAGE,
        supervised_keys=("image", "label"),
        release_notes=MappingProxyType({names.version: "imagenet-cp: faithful to the reference recipe, "
                                                       "per-example seeds."}),
    )
