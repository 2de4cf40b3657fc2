"""The sinks of a release: one class per kind of file a release holds, as Beam's
``apache_beam.io.fileio.FileSink`` is one class per file format of ``WriteToFiles``.

:class:`pipelines.beam.write_release.WriteRelease` always has two sinks, the tree of output files
(:class:`~pipelines.beam.write_release.TreeFiles`) and the TFDS records
(:class:`~pipelines.beam.write_release.TfdsRecords`); the build adds the sinks of the formats
``--formats`` names (:data:`FORMAT_SINKS`) and those of its edition (the stacked ``.npy`` arrays,
:class:`pipelines.beam.npy_release.StackedArrays`). A sink writes its files in one or both of two
steps, the methods of :class:`ReleaseSink`:

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
from typing import TYPE_CHECKING, ClassVar, Iterable, Optional, Sequence

from schemas.records import FileInfo
from schemas.tfds import TfdsDataset

from pipelines.formats.class_folders import label_names
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
    """

    output_dir: str
    dataset: TfdsDataset
    shard_count: int

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
    made from its manifest and tree files (or, for stacked arrays, its TFRecord shards; see
    :func:`pipelines.formats.webdataset.write_config_webdataset`)."""

    name = WEBDATASET

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list[FileInfo]:
        return write_config_webdataset(release.output_dir, group)


FORMAT_SINKS: dict[str, type] = {WebDatasetShards.name: WebDatasetShards}
"""``--formats`` name -> the sink class of that output format (made with no arguments)."""


def release_sinks(formats: Iterable[str], edition_sinks: Sequence[ReleaseSink],
                  entries: Sequence["SourceEntry"]) -> tuple:
    """The sinks a build adds to the writer's own: one per format named (in name order), then the
    edition's, each for the listed input ``entries`` (:meth:`ReleaseSink.for_input`).

    Raises
    ------
    ValueError
        For a format no sink writes.
    """
    formats = sorted(set(formats))
    check_format_names(formats)
    return tuple(sink.for_input(entries) for sink in [FORMAT_SINKS[name]() for name in formats] + list(edition_sinks))


def check_format_names(formats: Iterable[str]) -> None:
    """Refuse a format no sink writes (:data:`FORMAT_SINKS`)."""
    unknown = sorted(set(formats) - set(FORMAT_SINKS))
    if unknown:
        raise ValueError(f"unknown output format {unknown[0]!r}; valid: {', '.join(FORMAT_SINKS)}")


__all__ = ["FORMAT_SINKS", "GroupOutputs", "ReleaseFiles", "ReleaseSink", "WebDatasetShards", "check_format_names",
           "release_sinks"]
