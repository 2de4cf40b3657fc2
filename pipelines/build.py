"""The driver of a release build: list the input, run ReadImageNet -> <edition transform> ->
WriteRelease on Beam, then seal the release.

The edition transform (``CorruptImages`` for ImageNet-C) turns ``SourceImage`` s into
``records``, ``sources``, ``failures`` and ``environments``; everything else here is shared.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, TextIO

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from schemas.release import FAILURES, RELEASE_JSON, SAMPLE_DIR, SCRATCH_DIRS
from schemas.editions import get_edition
from schemas.tfds import TfdsDataset

from . import storage
from .imagenet_c import ImageNetCConfig
from .progress import COUNTERS, NAMESPACE, ProgressLine
from .release import WriteRelease, seal_release
from .runner import is_local, make_pipeline
from .sample import write_sample
from .sources import ReadImageNet, index_source, require_entries, select_entries, write_entry_lists

DEFAULT_EXAMPLES_PER_SHARD = 2048
"""Examples per TFRecord shard on average (about 50 MB of ImageNet-C JPEGs)."""


@dataclass(frozen=True)
class SourceSelection:
    """Which inputs a build reads.

    Attributes
    ----------
    input : str, optional
        Folder, tar or prepared TFDS ``imagenet2012``; the bundled sample when None.
    image_ids : str, optional
        A file of ``<wnid>/<file>`` or ``<file>`` lines (e.g. RobustBench's 5,000 ids).
    limit : int, optional
        Keep only the first ``limit`` images in key order.
    """

    input: Optional[str] = None
    image_ids: Optional[str] = None
    limit: Optional[int] = None


@dataclass(frozen=True)
class BuildResult:
    """What a build produced: the ``release.json`` document and the Beam counters."""

    release: Mapping[str, Any]
    counters: Mapping[str, int]

    @property
    def failures(self) -> int:
        return self.release["counts"]["failures"]

    def summary(self, output_dir: str) -> str:
        counts = self.release["counts"]
        text = (f"{self.release['edition']} release in {output_dir}: {counts['images']} images, "
                f"{counts['outputs']} outputs in {len(counts['outputs_per_config'])} configs, "
                f"{counts['failures']} failures")
        return text + (f" (listed with reasons in {FAILURES})" if counts["failures"] else "")


def _prepare_output(output_dir: str, config: Mapping[str, Any]) -> None:
    """Refuse a directory that holds a release of another config; clear leftover scratch folders."""
    release_json = storage.join(output_dir, RELEASE_JSON)
    if storage.exists(release_json):
        existing = json.loads(storage.read_bytes(release_json)).get("config")
        if existing != config:
            raise ValueError(f"{output_dir} holds a release of another config ({existing}); "
                             "use another --output or remove it first")
    for scratch in SCRATCH_DIRS:
        storage.delete_tree(storage.join(output_dir, scratch))


def _counters(result) -> dict[str, int]:
    totals = dict.fromkeys(COUNTERS, 0)
    for counter in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + value
    return totals


def run_build(output_dir: str, selection: SourceSelection, document: Mapping[str, Any],
              dataset: TfdsDataset, outputs_per_image: int,
              make_transform: Callable[[Optional[str]], beam.PTransform], workers: Optional[int] = None,
              beam_args: Sequence[str] = (), examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD,
              progress_interval: float = 10.0, stream: TextIO = sys.stderr,
              list_input: Optional[Callable[[Optional[str], str], Any]] = None,
              add_sinks: Optional[Callable[[Any, Any, str], None]] = None) -> BuildResult:
    """Build a release of any edition.

    Parameters
    ----------
    output_dir : str
        The release directory (local, or any Beam file system for remote runners).
    selection : SourceSelection
        The input and its subset.
    document : mapping
        Edition fields of ``release.json`` (``edition``, ``config``, ``tfds``, ...).
    dataset : TfdsDataset
        The TFDS dataset of the records' groups.
    outputs_per_image : int
        Outputs each image fans out to (for the progress line).
    make_transform : callable
        ``make_transform(progress_dir)`` returns the edition's PTransform: SourceImages ->
        records, sources, failures, environments.
    workers : int, optional
        Local worker processes (default: all cores).
    beam_args : sequence of str
        Beam pipeline options (``--runner=DataflowRunner ...``), passed through.
    examples_per_shard : int
        Average examples per TFRecord shard; the shard count is derived from the image count.
    progress_interval : float
        Seconds between progress lines (local runs).
    stream : text stream
        Where progress lines go.
    list_input : callable, optional
        ``list_input(input or None, output_dir)`` returns the input's ``SourceIndex`` (None: the
        bundled sample); default: ImageNet val through :func:`pipelines.sources.index_source`.
    add_sinks : callable, optional
        ``add_sinks(outputs, index, output_dir)`` adds the edition's own sinks to the graph (e.g. the stacked
        ``.npy`` arrays) next to ``WriteRelease``.
    """
    if examples_per_shard < 1:
        raise ValueError(f"examples_per_shard must be >= 1, got {examples_per_shard}")
    ids = None
    config = dict(document["config"], examples_per_shard=examples_per_shard, limit=selection.limit,
                  image_ids_sha256=None)
    if selection.image_ids is not None:
        raw = storage.read_bytes(selection.image_ids)
        config["image_ids_sha256"] = hashlib.sha256(raw).hexdigest()
        ids = raw.decode("utf-8").splitlines()
    _prepare_output(output_dir, config)

    path, kind = selection.input, None
    if path is None and not storage.is_local(output_dir):
        raise ValueError("the bundled sample is written next to a local release: give --input for "
                         f"a release in {output_dir}")
    if list_input is not None:
        index = list_input(path, output_dir)
    else:
        if path is None:
            path, kind = write_sample(storage.join(output_dir, f"{SAMPLE_DIR}/val")), "sample"
        index = index_source(path, kind)
    index = require_entries(select_entries(index, ids, selection.limit), path or "the bundled sample")
    shard_count = max(1, math.ceil(len(index.entries) / examples_per_shard))
    document = dict(document, config=config, input={"kind": index.kind})

    local = is_local(beam_args) and storage.is_local(output_dir)
    progress_dir = output_dir if local else None
    pipeline = make_pipeline(workers, beam_args)
    images = pipeline | "ReadImageNet" >> ReadImageNet(write_entry_lists(output_dir, index.entries), progress_dir)
    outputs = images.images | make_transform(progress_dir)
    listed = pipeline | "ListingFailures" >> beam.Create(index.failures)
    failures = (listed, images.failures, outputs.failures) | "AllFailures" >> beam.Flatten()
    _ = ({"records": outputs.records, "sources": outputs.sources,
          "failures": failures | "FailureRecords" >> beam.Map(lambda f: f.to_json()),
          "environments": outputs.environments}
         | "WriteRelease" >> WriteRelease(output_dir, dataset, shard_count, progress_dir))
    if add_sinks is not None:
        add_sinks(outputs, index, output_dir)

    progress = None
    if local:
        progress = ProgressLine(output_dir, len(index.entries) * outputs_per_image, len(index.entries),
                                progress_interval, stream)
        progress.start()
    try:
        result = pipeline.run()
        result.wait_until_finish()
    finally:
        if progress:
            progress.stop()
    return BuildResult(seal_release(output_dir, document), _counters(result))


def build_imagenet_c(output_dir: str, selection: SourceSelection = SourceSelection(),
                     config: ImageNetCConfig = ImageNetCConfig(), **options) -> BuildResult:
    """Build an ImageNet-C release of ``config.edition`` (see :func:`run_build` for ``options``).

    The edition chooses the input (ImageNet val, the Tiny-ImageNet folder or a CIFAR pickle), its
    bundled sample, the layout, the TFDS dataset and the default examples per shard; see
    :func:`pipelines.edition_c.edition_build_options`.
    """
    from .edition_c import edition_build_options

    options.setdefault("examples_per_shard", get_edition(config.edition).c.examples_per_shard)
    return run_build(output_dir, selection, **edition_build_options(config, selection.input), **options)
