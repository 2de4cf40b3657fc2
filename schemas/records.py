"""Records that flow through a release build, from an input file to a manifest line.

The flow: a :class:`SourceEntry` (where an input lives, listed by the driver) becomes a
:class:`SourceImage` (its bytes, read by a worker), which fans out into :class:`OutputRecord` s
(one per released file). Anything that cannot go on becomes a :class:`Failure`. Writers report
each file they write as a :class:`FileInfo`, and each output as a :class:`ManifestRecord` (one
line of its manifest part). The records are edition-agnostic: ImageNet-C stores JPEGs,
ImageNet-P videos, through the same types.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence, Union

__all__ = ["JsonValue", "FeatureValue", "Locator", "SourceEntry", "SourceImage", "OutputRecord", "Failure",
           "escape_name", "SourceRecord", "FileInfo", "ManifestRecord"]

JsonValue = Union[None, bool, int, float, str, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
"""A value JSON can hold (a manifest field)."""

FeatureValue = Union[bytes, str, int, float, Sequence[bytes]]
"""One value of a TFDS example before it is encoded as its declared feature connector says
(:mod:`schemas.tfds`): an encoded image (bytes), a label (int), a file name (str), a number
(float), or encoded video frames (a sequence of bytes)."""


@dataclass(frozen=True)
class Locator:
    """Where the bytes of one input live.

    Attributes
    ----------
    path : str
        A local path or a Beam file-system URL (``gs://...``).
    offset, length : int, optional
        A byte range inside ``path`` (a tar member); the whole file when ``length`` is None.
    container : str
        ``'file'`` (the bytes are the image), ``'tar'`` (the range is a tar member's data) or
        ``'tfrecord'`` (the range is one serialized ``tf.train.Example`` of a TFDS shard).
    """

    path: str
    offset: int = 0
    length: Optional[int] = None
    container: str = "file"


@dataclass(frozen=True)
class SourceEntry:
    """One input image as listed by the driver, before its bytes are read.

    Attributes
    ----------
    key : str
        Image key ``<wnid>/<file name>``, unique within a release.
    wnid : str
        ImageNet class id, e.g. ``'n01440764'``.
    label : int
        Index of ``wnid`` in the sorted list of the 1000 wnids (0..999).
    locator : Locator
        Where its bytes are.
    source : str
        Where it is inside the input, independent of where the input lies: its relative path
        (folder), member name (tar) or ``<shard file>#<record index>`` (TFDS).
    """

    key: str
    wnid: str
    label: int
    locator: Locator
    source: str

    @property
    def file_name(self) -> str:
        """The original file name (the last part of the key)."""
        return self.key.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class SourceImage:
    """One input image with its encoded bytes, as read by a worker.

    Attributes
    ----------
    entry : SourceEntry
        Its key, class and place.
    data : bytes
        The encoded image exactly as stored in the input.
    """

    entry: SourceEntry
    data: bytes


@dataclass(frozen=True)
class OutputRecord:
    """One released file: where it goes, its bytes, its TFDS example and its manifest metadata.

    Attributes
    ----------
    key : str
        Output key, unique within a release (``<corruption>/<severity>/<wnid>/<file>`` for C).
    group : str
        TFDS config name this output belongs to (``<corruption>_<severity>`` for C); also the
        name of its manifest part.
    path : str
        Path of the file relative to the release directory (``ImageNet-C/<key>`` for C).
    data : bytes
        The file's bytes (JPEG for C, mp4 for P).
    example : Mapping[str, FeatureValue] or None
        Values of its ``tf.train.Example`` by feature name; the writer stores those of the
        dataset's declared features (:func:`pipelines.formats.tfrecord.encode_example`). None when
        no format of the release reads examples
        (:func:`pipelines.formats.release_formats.examples_read`), so none was made.
    metadata : Mapping[str, JsonValue]
        The edition's fields of its manifest record (:attr:`ManifestRecord.fields`: image_key,
        wnid, label, seed, ...).
    stacked : bool
        True when ``data`` is one row of a stacked array file (``path``, e.g.
        ``CIFAR-10-C/fog.npy``) that the edition's own sink writes; no file is written per record.
    """

    key: str
    group: str
    path: str
    data: bytes
    example: Optional[Mapping[str, FeatureValue]] = field(default_factory=dict)
    metadata: Mapping[str, JsonValue] = field(default_factory=dict)
    stacked: bool = False


@dataclass(frozen=True)
class Failure:
    """An input (or one of its outputs) that did not make it into the release, and why.

    Attributes
    ----------
    key : str
        Image key, output key, or the input's relative path when no key could be formed.
    source : str
        Where the input is inside the input root (``SourceEntry.source``), or ``''`` when the
        input does not exist.
    stage : str
        ``'list'``, ``'read'``, ``'decode'``, ``'corrupt'`` (C), or ``'perturb'`` / ``'encode'``
        (P): the step that rejected it.
    reason : str
        A human-readable explanation.
    """

    key: str
    source: str
    stage: str
    reason: str

    def to_json(self) -> dict:
        """The record as written to ``failures.jsonl`` (names that are not UTF-8 escaped, see
        :func:`escape_name`)."""
        return {"key": escape_name(self.key), "source": escape_name(self.source), "stage": self.stage,
                "reason": escape_name(self.reason)}

    @classmethod
    def from_json(cls, row: Mapping[str, JsonValue]) -> "Failure":
        """The record of a parsed ``failures.jsonl`` line (its names as written, escaped).

        Raises
        ------
        KeyError
            When the line lacks one of the four fields.
        """
        return cls(key=row["key"], source=row["source"], stage=row["stage"], reason=row["reason"])


def escape_name(name: str) -> str:
    """A file name as printable UTF-8 text: bytes that are not UTF-8 (which Python keeps as
    surrogates, e.g. ``caf\udce9``) become ``\\xNN`` escapes (``caf\\xe9``), the same on every run.

    Names that are valid UTF-8 are returned unchanged.
    """
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no file system byte made
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class SourceRecord:
    """One line of ``sources.jsonl``: an input image a release was made from.

    Attributes
    ----------
    key : str
        Image key (:attr:`SourceEntry.key`).
    source : str
        Where it is inside the input (:attr:`SourceEntry.source`).
    size : int
        Size of its encoded bytes (the JSON field ``bytes``).
    fields : Mapping[str, JsonValue]
        The rest, as the benchmark records it (``wnid``, ``label``, ``sha256``, ``format``, ``mode``,
        ``width``, ``height``, ``note``, ...).
    """

    key: str
    source: str
    size: int
    fields: Mapping[str, JsonValue] = field(default_factory=dict)

    COMMON = ("key", "source", "bytes")
    """The JSON names of the fields every source record has (the rest are :attr:`fields`)."""

    @classmethod
    def from_json(cls, row: Mapping[str, JsonValue]) -> "SourceRecord":
        """The record of a parsed ``sources.jsonl`` line.

        Raises
        ------
        KeyError
            When the line lacks ``key``, ``source`` or ``bytes``.
        """
        return cls(key=row["key"], source=row["source"], size=row["bytes"],
                   fields={k: v for k, v in row.items() if k not in cls.COMMON})

    def to_json(self) -> dict:
        """The line's JSON object (the common fields win over a field of the same name)."""
        return {**self.fields, "key": self.key, "source": self.source, "bytes": self.size}


@dataclass(frozen=True)
class FileInfo:
    """A file a writer wrote: its path relative to the release directory, SHA-256 and size.

    Attributes
    ----------
    path : str
        Relative path with ``/`` separators.
    sha256 : str
        Lower-case hex digest of its bytes.
    size : int
        Size in bytes.
    group : str
        Ordering group in ``SHA256SUMS`` (a TFDS config name, or ``''`` for release-wide files).
    """

    path: str
    sha256: str
    size: int
    group: str = ""


@dataclass(frozen=True)
class ManifestRecord:
    """One line of a manifest part (``manifest/<config>.jsonl``): the fields every release has,
    and the edition's own.

    Attributes
    ----------
    key : str
        Output key, unique within the release.
    path : str
        The file (or the stacked array) relative to the release directory.
    sha256 : str
        SHA-256 of the file's bytes (of the row's bytes for a stacked array).
    size : int
        Its size in bytes (the JSON field ``bytes``).
    shard : str, optional
        The TFDS shard holding its example (None where the release has none).
    fields : Mapping[str, JsonValue]
        The edition's fields (``image_key``, ``wnid``, ``label``, ``corruption``, ``severity``,
        ``seed``, ``array_sha256``, ``frames``, ``delta_v``, ...).
    """

    key: str
    path: str
    sha256: str
    size: int
    shard: Optional[str] = None
    fields: Mapping[str, JsonValue] = field(default_factory=dict)

    COMMON = ("key", "path", "sha256", "bytes", "shard")
    """The JSON names of the fields every manifest record has (the rest are :attr:`fields`)."""

    @classmethod
    def from_json(cls, row: Mapping[str, JsonValue]) -> "ManifestRecord":
        """The record of a parsed manifest line.

        Raises
        ------
        KeyError
            When the line lacks ``key``, ``path``, ``sha256`` or ``bytes``.
        """
        return cls(key=row["key"], path=row["path"], sha256=row["sha256"], size=row["bytes"],
                   shard=row.get("shard"), fields={k: v for k, v in row.items() if k not in cls.COMMON})

    def to_json(self) -> dict:
        """The manifest line's JSON object (the common fields win over an edition field of the same name)."""
        return {**self.fields, "key": self.key, "path": self.path, "sha256": self.sha256, "bytes": self.size,
                "shard": self.shard}

    @property
    def label(self) -> Optional[int]:
        """The class index (None where the edition records none)."""
        return self.fields.get("label")

    def value(self, name: str) -> JsonValue:
        """The value of a field named in a table (a condition column, a digest field): a common
        field by its JSON name (``sha256``, ``bytes``, ...) or an edition field; None when absent."""
        return self.to_json()[name] if name in self.COMMON else self.fields.get(name)
