"""What an ImageNet-C build of any edition hands to :func:`pipelines.beam.build.run_build`.

The edition (``config.edition``) decides: how the input is listed (ImageNet val, the Tiny-ImageNet
folder, a CIFAR pickle; the bundled sample of that kind without ``--input``), the source family
and hence the layout (``CIFAR-10-C`` or ``CIFAR-100-C``), the TFDS dataset, ``release.json``'s
edition fields, and whether the stacked ``.npy`` sink runs. The graph is the same for all.
"""
from __future__ import annotations

import os
from typing import Optional

from schemas.edition import NPY
from schemas.editions import get_edition

from pipelines.formats.edition_sources import (CIFAR10_CLASSES, ListedInput, tiny_root, cifar_test_file, list_edition_input,
                              read_cifar)
from pipelines.beam.imagenet_c import CorruptImages, ImageNetCConfig, imagenet_c_dataset, imagenet_c_document
from pipelines.beam.npy_release import WriteStackedArrays
from pipelines.install.sample import SAMPLE_PHOTOGRAPHS


def input_family(config: ImageNetCConfig, path: Optional[str]) -> tuple[str, Optional[tuple]]:
    """``(source family, class names)`` of an input, read cheaply before the build (None: the sample).

    Raises
    ------
    ValueError
        If the input is not of the edition's kind.
    """
    edition = get_edition(config.edition)
    if "tinyimagenet" in edition.sources:
        if path is None:
            return "tinyimagenet", tuple(sorted(set(SAMPLE_PHOTOGRAPHS.values())))
        root = tiny_root(path)
        wnids = os.path.join(root, "wnids.txt")
        if os.path.isfile(wnids):
            with open(wnids, encoding="utf-8") as stream:
                return "tinyimagenet", tuple(sorted({w.strip() for w in stream if w.strip()}))
        with open(os.path.join(root, "val", "val_annotations.txt"), encoding="utf-8") as stream:
            return "tinyimagenet", tuple(sorted({line.split("\t")[1] for line in stream if "\t" in line}))
    if "cifar10" in edition.sources:
        if path is None:
            return "cifar10", CIFAR10_CLASSES
        cifar_test_file(path)  # fails early with one line on a wrong input
        _, _, names, family = read_cifar(path)
        return family, names
    return "imagenet", None


def edition_build_options(config: ImageNetCConfig, path: Optional[str]) -> dict:
    """Keyword arguments of :func:`pipelines.beam.build.run_build` for an ImageNet-C build of ``config``."""
    edition = get_edition(config.edition)
    family, class_names = input_family(config, path)
    layout = edition.c.layout(family)

    def list_input(input_path, output_dir):
        listed: ListedInput = list_edition_input(edition.sources, input_path, output_dir)
        if listed.family != family:
            raise ValueError(f"input {input_path!r} is {listed.family}, expected {family}")
        return listed.index

    def add_sinks(outputs, index, output_dir):
        if edition.c.encoding != NPY:
            return
        _ = outputs.records | "WriteStackedArrays" >> WriteStackedArrays(
            output_dir, f"{layout.tree}/{layout.labels_file}",
            [e.key for e in index.entries], [e.label for e in index.entries], config.severities,
            (edition.image_size, edition.image_size, 3))

    options = {
        "document": imagenet_c_document(config, family, class_names),
        "dataset": imagenet_c_dataset(config, family, class_names),
        "outputs_per_image": len(config.conditions_of(family)),
        "make_transform": lambda progress_dir: CorruptImages(config, progress_dir, family),
        "list_input": list_input,
        "add_sinks": add_sinks if edition.c.encoding == NPY else None,  # a sink makes a resumed build redo all
    }
    return options
