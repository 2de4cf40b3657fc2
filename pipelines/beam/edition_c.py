"""What an ImageNet-C build of any edition hands to :func:`pipelines.beam.build.run_build`.

The edition (``config.edition``) and its opened input (:func:`pipelines.inputs.families.open_input`:
ImageNet val, the Tiny-ImageNet folder, a CIFAR pickle; the bundled sample of that kind without
``--input``) decide the source family and hence the layout (``CIFAR-10-C`` or ``CIFAR-100-C``), the
TFDS dataset, ``release.json``'s edition fields, and whether the stacked ``.npy`` sink runs. The
graph is the same for all.
"""
from __future__ import annotations

from schemas.edition import NPY

from pipelines.beam.imagenet_c import CorruptImages, ImageNetCConfig, imagenet_c_dataset, imagenet_c_document
from pipelines.beam.npy_release import StackedArrays
from pipelines.inputs.families import Input

__all__ = ["edition_build_options"]


def edition_build_options(config: ImageNetCConfig, source: Input) -> dict:
    """Keyword arguments of :func:`pipelines.beam.build.run_build` for an ImageNet-C build of ``config``
    from its opened input ``source``."""
    edition = config.edition
    family, class_names = source.family, source.class_names
    layout = edition.c.layout(family)
    arrays = StackedArrays((edition.image_size, edition.image_size, 3), tuple(config.severities),
                           f"{layout.tree}/{layout.labels_file}")

    return {
        "document": imagenet_c_document(config, family, class_names),
        "dataset": imagenet_c_dataset(config, family, class_names),
        "outputs_per_image": len(config.conditions_of(family)),
        "make_transform": lambda progress_dir: CorruptImages(config, progress_dir, family),
        "source": source,
        "sinks": (arrays,) if edition.c.encoding == NPY else (),  # a sink makes a resumed build redo all
    }
