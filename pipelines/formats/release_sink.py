"""The format protocol of a release: one class per kind of file a release holds, as Beam's
``apache_beam.io.fileio.FileSink`` is one class per file format of ``WriteToFiles``.

A format is a :class:`ReleaseSink` subclass. The class declares everything the factory does with
the format, so that no other module names it:

- what it writes, in one or more of three steps: :meth:`ReleaseSink.write_output` (per output, on
  the worker: the output's own file, the tree), :meth:`ReleaseSink.write_group` (per TFDS config,
  once its manifest ``manifest/<config>.jsonl`` is written: the TFDS records, the WebDataset
  shards) and :meth:`ReleaseSink.expand` (a branch of the graph of its own over the committed
  parts of every config, once all are committed: the stacked ``.npy`` arrays, whose rows span
  configs and which :attr:`ReleaseSink.keeps_rows` has kept in the parts);
- :attr:`ReleaseSink.folders`: the top-level names of a release it owns, which ``--force`` removes
  (:func:`pipelines.release.output_folder.remove_release`) and a resumed build writes again;
- :meth:`ReleaseSink.check`: what ``imagenet-cp verify`` checks of its files, beyond their listed
  SHA-256;
- :meth:`ReleaseSink.card_lines`: the card's lines on loading it (``README.md``, ``## Loading``);
- :attr:`ReleaseSink.help`: its words in the ``--formats`` help;
- :meth:`ReleaseSink.check_build`: the builds it refuses (its per-edition rules).

The formats are registered in :data:`pipelines.formats.release_formats.FORMATS`. This module and
that one import nothing heavy at module level (the CLI reads the help before Beam is imported):
a format imports what it writes and checks with inside its methods.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

from schemas.release import DEFAULT_FORMATS, Release
from schemas.tfds import TfdsDataset

if TYPE_CHECKING:
    from apache_beam import PCollection
    from schemas.records import FileInfo, OutputRecord, SourceEntry

    from pipelines.formats.checksum_table import ChecksumTable

__all__ = ["ReleaseFiles", "GroupOutputs", "BuildKind", "CardContext", "ReleaseSink"]


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
        The output formats the release holds
        (:func:`pipelines.formats.release_formats.check_format_names`).
    """

    output_dir: str
    dataset: TfdsDataset
    shard_count: int
    formats: tuple = DEFAULT_FORMATS

    @cached_property
    def class_names(self) -> tuple:
        """Class names of the dataset's ``label`` feature (:func:`pipelines.formats.class_folders.label_names`)."""
        from pipelines.formats.class_folders import label_names

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


@dataclass(frozen=True)
class BuildKind:
    """What a format's rules (:meth:`ReleaseSink.check_build`) look at of the release a build makes.

    Attributes
    ----------
    benchmark : str
        ``c`` or ``p``.
    edition : str
        The edition's name (``imagenet``, ``cifar``, ...).
    stacked : bool
        Whether the edition's tree is rows of stacked ``.npy`` arrays, not files.
    """

    benchmark: str
    edition: str
    stacked: bool


@dataclass(frozen=True)
class CardContext:
    """What the card knows of a release when it says how to load a format (:meth:`ReleaseSink.card_lines`).

    Attributes
    ----------
    release : Release
        Its ``release.json``.
    first : str
        The first config (the one the card's examples load).
    hf_configs : tuple of dict
        The Hub's ``configs:`` entries (:func:`pipelines.release.hf_index.hf_configs`; empty without
        a Hugging Face index).
    """

    release: Release
    first: str
    hf_configs: tuple = ()


class ReleaseSink:
    """A format of a release: the files it writes, the folders it owns, how verify checks them and
    what the card and the ``--formats`` help say of it (module doc). Every step does nothing by
    default.

    Attributes
    ----------
    name : str
        The format's name: its ``--formats`` name (its key in
        :data:`pipelines.formats.release_formats.FORMATS`) and the suffix of its checksum parts,
        ``.parts/sha256/<config>.<name>.txt``.
    folders : tuple of str
        The top-level names of a release it owns (folders or files).
    help : str
        Its words in the ``--formats`` help, ``name (help)``.
    published : bool
        Written by ``imagenet-cp publish`` for every release it fits (the Hugging Face index, the
        Croissant file), not a ``--formats`` choice: it has no write step.
    shares_config_part : bool
        Its per-config files go into the config's own checksum part ``.parts/sha256/<config>.txt``,
        sorted by path with the outputs' files (the tree's and the TFDS records' files), instead of
        a part of their own.
    reads_examples : bool
        The sink reads back each output's serialized TFDS example, which the writer therefore
        makes and keeps in the committed parts (the TFRecord shards, the WebDataset shards); when no
        sink of a build reads them, no example is made or kept.
    keeps_rows : bool
        The writer keeps the bytes of each stacked row (``record.stacked``, no file of its own) in the
        committed parts, for :meth:`expand` to read back
        (:meth:`pipelines.formats.parts.PartWriter.add_stacked_output`).
    checksum_part : str
        Name of the checksum part of the files :meth:`expand` writes, ``.parts/sha256/<checksum_part>.txt``
        (its place in ``SHA256SUMS``: parts are concatenated in name order).
    """

    name: ClassVar[str] = ""
    folders: ClassVar[tuple] = ()
    help: ClassVar[str] = ""
    published: ClassVar[bool] = False
    shares_config_part: ClassVar[bool] = False
    reads_examples: ClassVar[bool] = False
    keeps_rows: ClassVar[bool] = False
    checksum_part: str = ""

    @property
    def writes_outputs(self) -> bool:
        """Whether the sink writes per output, on the worker (:meth:`write_output`)."""
        return type(self).write_output is not ReleaseSink.write_output

    @property
    def writes_groups(self) -> bool:
        """Whether the sink writes per config (:meth:`write_group`)."""
        return type(self).write_group is not ReleaseSink.write_group

    @property
    def has_branch(self) -> bool:
        """Whether the sink has a branch of its own (:meth:`expand`) over the committed parts."""
        return type(self).expand is not ReleaseSink.expand

    def for_input(self, entries: Sequence["SourceEntry"]) -> "ReleaseSink":
        """This sink for a build of ``entries`` (the listed input images, in input order), once the
        driver has listed them; the sink itself by default."""
        return self

    def edition_sinks(self, sinks: Sequence["ReleaseSink"]) -> tuple:
        """Of the edition's own sinks (e.g. the stacked ``.npy`` arrays), those this format brings
        into a build: none by default."""
        return ()

    def write_output(self, release: ReleaseFiles, record: "OutputRecord") -> Optional["FileInfo"]:
        """Write the output's own file, at ``record.path``; return its FileInfo, None when the sink
        writes none for this output (None by default). At most one sink of a build writes it."""
        return None

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list["FileInfo"]:
        """Write the sink's files of TFDS config ``group``, once its manifest is written; return them
        (nothing by default)."""
        return []

    def expand(self, parts: "PCollection", release: ReleaseFiles) -> Optional["PCollection"]:
        """Add a branch that writes the sink's files from the committed parts, once every part is
        committed (those of an interrupted run of the build among them, so that a resumed build
        keeps them): ``parts`` holds ``(config, [(table, part, offset, length)])``, the runs of each
        config (:func:`pipelines.formats.parts.merge_runs` reads them; the release-wide lists come
        under ``_release``, with ``None`` among the names). Return the PCollection of the files'
        :class:`FileInfo` s (None by default: no branch)."""
        return None

    def check_build(self, formats: Sequence[str], build: BuildKind) -> None:
        """Refuse a build of ``formats`` (this one among them) that cannot hold this format, with a
        ``ValueError`` naming why; nothing by default."""

    def check(self, root: str, release: Release, listed: "ChecksumTable") -> list[str]:
        """Problems of the format's files in the release at ``root`` beyond their SHA-256 (``listed``:
        the table of its ``SHA256SUMS``; a listed file that is missing is reported already); run
        whether or not the release holds the format (a stray file is a problem too). None by default."""
        return []

    def card_lines(self, card: CardContext) -> list[str]:
        """The card's lines on loading the format (markdown, each paragraph ending in an empty line);
        called for every format, held or not (none by default)."""
        return []
