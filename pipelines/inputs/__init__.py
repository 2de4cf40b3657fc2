"""The inputs room: every source family a build reads, listed before the pipeline runs (no Beam here).

- :mod:`pipelines.inputs.listing`: ImageNet val (folder, tar, prepared TFDS ``imagenet2012``),
  the :class:`~pipelines.inputs.listing.SourceIndex` every family produces, reading an entry's
  bytes and the entry list files handed to the workers;
- :mod:`pipelines.inputs.families`: Tiny ImageNet, the CIFAR pickles, the bundled samples, and
  :func:`~pipelines.inputs.families.open_input`, the one function that reads an edition's input
  once and says its family, class names and listing.

The workers' side (reading the bytes in a Beam graph) is :class:`pipelines.beam.sources.ReadImageNet`.
"""

__all__ = []
