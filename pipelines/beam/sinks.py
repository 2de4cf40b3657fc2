"""The sinks of a release: one class per kind of file a release holds, as Beam's
``apache_beam.io.fileio.FileSink`` is one class per file format of ``WriteToFiles``.

:class:`pipelines.beam.write_release.WriteRelease` has two sinks of its own, the tree of output files
(:class:`~pipelines.beam.write_release.TreeFiles`) and the TFDS records
(:class:`~pipelines.beam.write_release.TfdsRecords`), which write when the release's formats
(:attr:`ReleaseFiles.formats`, the build's ``--formats``) name them; the build adds the sinks of the
other formats named (:data:`FORMAT_SINKS`) and, when it writes the tree, those of its edition (the
stacked ``.npy`` arrays that are the tree of CIFAR, :class:`pipelines.beam.npy_release.StackedArrays`).
A sink writes its files in one or both of two steps, the methods of :class:`ReleaseSink`:

- :meth:`ReleaseSink.write_group`: per TFDS config, on the worker that merges the config's
  committed parts, once its manifest ``manifest/<config>.jsonl`` is written (the WebDataset shards);
- :meth:`ReleaseSink.expand`: a branch of the graph of its own over every output record (the
  stacked arrays, which need every row of an array together).

Every file a sink writes goes into ``SHA256SUMS`` through a checksum part of its own. Adding an output
format is one class, and one line in :data:`FORMAT_SINKS`: the writer is not edited.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Iterable, Iterator, Optional, Sequence

from schemas.records import FileInfo
from schemas.release import DEFAULT_FORMATS, TFDS_FORMAT, TREE_FORMAT
from schemas.tfds import TfdsDataset

from pipelines.formats.class_folders import label_names
from pipelines.formats.spill import SpillReader
from pipelines.formats.webdataset import WEBDATASET, write_config_webdataset

if TYPE_CHECKING:
    from apache_beam import PCollection
    from schemas.records import SourceEntry


@dataclass(frozen=True)
class ReleaseFiles:
    """Where a sink writes and what it writes for.

    Attributes
    ----------
    output_dir : str
        The release directory.
    dataset : TfdsDataset
        The TFDS dataset whose configs are the records' groups.
    shard_count : int
        TFRecord shards per config.
    formats : tuple of str
        The output formats the release holds (:func:`check_format_names`).
    """

    output_dir: str
    dataset: TfdsDataset
    shard_count: int
    formats: tuple = DEFAULT_FORMATS

    @cached_property
    def class_names(self) -> tuple:
        """Class names of the dataset's ``label`` feature (:func:`pipelines.formats.class_folders.label_names`)."""
        return label_names(self.dataset)


@dataclass
class GroupOutputs:
    """What the merge of a config's committed parts found, for the sinks of that config.

    Attributes
    ----------
    folders : set of str
        The folders holding the config's tree files.
    shard_refs : list of list
        Per TFRecord shard, ``(part, offset, length)`` of its spilled examples, in key order.
    """

    folders: set = field(default_factory=set)
    shard_refs: list = field(default_factory=list)


class ReleaseSink:
    """Base of the sinks of a release; a sink overrides one or both of its steps.

    Attributes
    ----------
    name : str
        The sink's name: for a format sink, its ``--formats`` name (its key in :data:`FORMAT_SINKS`)
        and the suffix of its checksum parts, ``.parts/sha256/<config>.<name>.txt``.
    checksum_part : str
        Name of the checksum part of the files :meth:`expand` writes, ``.parts/sha256/<checksum_part>.txt``
        (its place in ``SHA256SUMS``: parts are concatenated in name order).
    """

    name: ClassVar[str] = ""
    checksum_part: str = ""

    @property
    def sees_every_output(self) -> bool:
        """Whether the sink has a branch of its own (:meth:`expand`): it must see every output, so a
        resumed build builds every image again (the committed parts still dedupe the rest)."""
        return type(self).expand is not ReleaseSink.expand

    def for_input(self, entries: Sequence["SourceEntry"]) -> "ReleaseSink":
        """This sink for a build of ``entries`` (the listed input images, in input order), once the
        driver has listed them; the sink itself by default."""
        return self

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list[FileInfo]:
        """Write the sink's files of TFDS config ``group``, once its manifest is written; return them
        (nothing by default)."""
        return []

    def expand(self, records: "PCollection", release: ReleaseFiles) -> Optional["PCollection"]:
        """Add a branch over every :class:`schemas.records.OutputRecord` that writes the sink's files;
        return the PCollection of their :class:`FileInfo` s (None by default: no branch)."""
        return None


class WebDatasetShards(ReleaseSink):
    """``--formats webdataset``: each config's WebDataset shards ``webdataset/<config>/<config>-NNNNNN.tar``,
    made from its manifest and the images of its spilled TFDS examples (the tree's files for videos;
    see :func:`pipelines.formats.webdataset.write_config_webdataset`), whichever other formats the
    release holds."""

    name = WEBDATASET

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list[FileInfo]:
        dataset, count = release.dataset, release.shard_count
        refs = {f"{dataset.config_dir(group)}/{dataset.shard_name(index, count)}": outputs.shard_refs[index]
                for index in range(count)}

        def examples(shard: str) -> Iterator[bytes]:
            reader = SpillReader(release.output_dir)
            try:
                for ref in refs[shard]:
                    yield reader.read(*ref)
            finally:
                reader.close()
        return write_config_webdataset(release.output_dir, group, examples=examples)


FORMAT_SINKS: dict[str, type] = {WebDatasetShards.name: WebDatasetShards}
"""``--formats`` name -> the sink class of that output format (made with no arguments), for the
formats beside the writer's own (:data:`WRITER_FORMATS`)."""

WRITER_FORMATS = (TFDS_FORMAT, TREE_FORMAT)
"""The formats the writer's own sinks write (the TFDS records, the tree)."""


def release_sinks(formats: Iterable[str], edition_sinks: Sequence[ReleaseSink],
                  entries: Sequence["SourceEntry"]) -> tuple:
    """The sinks a build adds to the writer's own: one per format of :data:`FORMAT_SINKS` named
    (in name order), then, when ``formats`` name the tree, the edition's; each for the listed input
    ``entries`` (:meth:`ReleaseSink.for_input`).

    Raises
    ------
    ValueError
        For no format, or a format no sink writes.
    """
    formats = check_format_names(formats)
    sinks = [FORMAT_SINKS[name]() for name in formats if name in FORMAT_SINKS]
    sinks += list(edition_sinks) if TREE_FORMAT in formats else []
    return tuple(sink.for_input(entries) for sink in sinks)


def check_format_names(formats: Iterable[str]) -> tuple:
    """``formats`` in name order, once each; refuse none, and a format no sink writes
    (:data:`WRITER_FORMATS`, :data:`FORMAT_SINKS`)."""
    formats = tuple(sorted(set(formats)))
    valid = sorted({*WRITER_FORMATS, *FORMAT_SINKS})
    unknown = [name for name in formats if name not in valid]
    if unknown:
        raise ValueError(f"unknown output format {unknown[0]!r}; valid: {', '.join(valid)}")
    if not formats:
        raise ValueError(f"no output format chosen: name one or more of {', '.join(valid)}")
    return formats


__all__ = ["FORMAT_SINKS", "WRITER_FORMATS", "GroupOutputs", "ReleaseFiles", "ReleaseSink", "WebDatasetShards", "check_format_names",
           "release_sinks"]
