"""The layout of a release directory and the formats of its manifests.

A release directory ``DIR`` holds::

    DIR/<tree>/...                       the official folder tree (``ImageNet-C/<c>/<s>/<wnid>/<file>``,
                                         and ours ``ImageNet-C/clean/<wnid>/<file>``), every
                                         class folder present (empty ones for absent classes)
    DIR/tfds/<dataset>/<config>/<version>/  TFDS shards + dataset_info.json, features.json, label.labels.txt
    DIR/manifest/<config>.jsonl          one record per output, sorted by key
    DIR/sources.jsonl                    one record per input image used, sorted by key
    DIR/failures.jsonl                   one record per rejected input or output, sorted by key
    DIR/release.json                     config, input checksum, counts, library versions, manifest digest
    DIR/SHA256SUMS                       ``sha256sum -c`` list of every file above
    DIR/webdataset/<config>/<config>-NNNNNN.tar  WebDataset shards of the tree (``--formats webdataset``)
    DIR/packages/                        category tars + their SHA256SUMS (``imagenet-cp package``)

The tree, the TFDS records and the WebDataset shards are the output formats a build chooses
(``--formats``; the tree and the TFDS records unless it names others); the
manifests, lists, ``release.json`` and ``SHA256SUMS`` are in every release. A manifest row names
its output's place in the tree (``path``) and its TFDS shard (``shard``) whether or not that format
was written, so the manifests of one build are the same for every choice.

Every JSON document is written with sorted keys and ``\\n`` line ends, so that equal content gives
equal bytes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import ClassVar, Iterable, Mapping, Optional, Sequence, Union

from schemas.adversarial import A_TREE, O_TREE
from schemas.vcr import CLEAN, VCR_TREE

__all__ = ["RELEASE_FORMAT", "RELEASE_JSON", "CHECKSUMS", "SOURCES", "FAILURES", "MANIFEST_DIR", "TFDS_DIR",
           "PACKAGES_DIR", "WEBDATASET_DIR", "TREE_FORMAT", "TFDS_FORMAT", "DEFAULT_FORMATS", "TMP_DIR", "PARTS_DIR",
           "PROGRESS_DIR", "SAMPLE_DIR", "SPILL_DIR", "SCRATCH_DIRS", "C_TREE", "CLEAN", "P_TREE", "C_BENCHMARK",
           "P_BENCHMARK", "VCR_BENCHMARK", "A_BENCHMARK", "O_BENCHMARK", "BENCHMARKS", "LEGACY_EDITIONS",
           "MANIFEST_FIELDS", "dumps", "json_object", "json_line", "manifest_path", "checksum_line", "parse_checksum_lines",
           "is_safe_name", "ReleaseInput", "ReleaseCounts", "ReleaseManifest", "ReleaseTfds", "PEditionFacts",
           "EncoderSettings", "TfdsFrames", "VideoSettings", "ArrayLayout", "PackageFile", "JsonValue",
           "BuildSettings", "CSettings", "PSettings", "VcrSettings", "FilterSettings", "FilteredSettings",
           "ReleaseSettings", "SETTINGS", "settings_type", "Release"]

RELEASE_FORMAT = "imagenet-cp-release/1"
"""Value of ``release.json``'s ``format`` field; bumped when the layout changes."""

RELEASE_JSON = "release.json"
CHECKSUMS = "SHA256SUMS"
SOURCES = "sources.jsonl"
FAILURES = "failures.jsonl"
MANIFEST_DIR = "manifest"
TFDS_DIR = "tfds"
PACKAGES_DIR = "packages"
WEBDATASET_DIR = "webdataset"
"""WebDataset shards of the tree, ``webdataset/<config>/<config>-000000.tar`` (``--formats webdataset``)."""

TREE_FORMAT = "tree"
"""Output format of the official folder tree (or, for CIFAR and CIFAR-P, the stacked ``.npy`` arrays)."""
TFDS_FORMAT = "tfds"
"""Output format of the TFDS records and metadata files under ``tfds/``."""
DEFAULT_FORMATS = (TFDS_FORMAT, TREE_FORMAT)
"""The output formats of a build that names none. Every release also has its manifests,
``sources.jsonl``, ``failures.jsonl``, ``release.json`` and ``SHA256SUMS``."""


TMP_DIR = ".tmp"
"""Files being written, before their atomic rename into place."""
PARTS_DIR = ".parts"
"""Pipeline results the driver assembles into ``release.json`` and ``SHA256SUMS``."""
PROGRESS_DIR = ".progress"
"""Progress counters of the running workers."""
SAMPLE_DIR = ".sample"
"""The bundled sample, written here when a build has no ``--input``."""
SPILL_DIR = ".spill"
"""Large values (serialized TFRecord examples) workers park here so that shuffles carry references."""
SCRATCH_DIRS = (TMP_DIR, PARTS_DIR, PROGRESS_DIR, SAMPLE_DIR, SPILL_DIR)
"""Build scratch folders inside ``DIR``; a finished build removes them."""

C_TREE = "ImageNet-C"
"""Folder of the ImageNet-C JPEG tree: ``ImageNet-C/<corruption>/<severity>/<wnid>/<file>``, the name
RobustBench's ``load_imagenetc(data_dir=...)`` and the official evaluators read."""
CLEAN = "clean"
"""Folder (``ImageNet-C/clean/<wnid>/<file>``), TFDS config and manifest part of a release's clean
images: each source image exactly as the corruptions receive it (after the edition's
preprocessing), encoded as the edition encodes its outputs; category tar ``clean.tar``."""
P_TREE = "ImageNet-P"
"""Folder of the ImageNet-P video tree: ``ImageNet-P/<name>[_<d>]/<wnid>/<stem>.mp4``."""

C_BENCHMARK, P_BENCHMARK, VCR_BENCHMARK, A_BENCHMARK, O_BENCHMARK = "c", "p", "vcr", "a", "o"
BENCHMARKS = (C_BENCHMARK, P_BENCHMARK, VCR_BENCHMARK, A_BENCHMARK, O_BENCHMARK)
"""Values of ``release.json``'s ``benchmark`` field: ImageNet-C, ImageNet-P, VCR, ImageNet-A, ImageNet-O.
Its ``edition`` field is the catalogue name of the edition (:data:`schemas.editions.EDITIONS`);
:func:`schemas.editions.release_identity` reads both from any release, old ones included."""

LEGACY_EDITIONS: Mapping[str, tuple] = MappingProxyType({
    "imagenet-c": ("imagenet", C_BENCHMARK), "imagenet-p": ("imagenet", P_BENCHMARK),  # the 224 trees' old names
    VCR_TREE: ("imagenet", VCR_BENCHMARK),
    A_TREE: ("imagenet", A_BENCHMARK), O_TREE: ("imagenet", O_BENCHMARK)})
"""``release.json``'s ``edition`` of releases made before the ``benchmark`` field -> (edition, benchmark)."""

MANIFEST_FIELDS = ("key", "path", "sha256", "bytes", "shard")
"""Fields every manifest record has; each edition adds its own (wnid, label, seed, ...)."""


JsonValue = Union[None, bool, int, float, str, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
"""A parsed JSON value: a document, a line's record, or what a key a type does not declare holds."""


def dumps(document: JsonValue) -> str:
    """Canonical JSON text of a document: sorted keys, two-space indent, trailing newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def json_object(text: Union[str, bytes], what: str) -> dict:
    """The JSON object of a text; ``what`` names the text in the error.

    Raises
    ------
    ValueError
        When the text is not JSON or not a JSON object.
    """
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError(f"{what} is not a JSON object")
    return document


def json_line(record: Mapping[str, JsonValue]) -> str:
    """Canonical one-line JSON of a record (sorted keys, compact), with its newline."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def manifest_path(group: str) -> str:
    """Relative path of the manifest part of a TFDS config, e.g. ``manifest/fog_3.jsonl``."""
    return f"{MANIFEST_DIR}/{group}.jsonl"


def checksum_line(sha256: str, path: str) -> str:
    """One ``sha256sum``-compatible line (text mode: two spaces)."""
    return f"{sha256}  {path}\n"


def parse_checksum_lines(lines: Iterable[str]) -> dict[str, str]:
    """Parse ``sha256sum`` output into {relative path: hex digest}.

    Raises
    ------
    ValueError
        On a malformed line (the message quotes it).
    """
    entries = {}
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or not path:
            raise ValueError(f"malformed {CHECKSUMS} line {line!r}: expected '<64 hex digits>  <path>'")
        entries[path] = digest
    return entries


def is_safe_name(name: str) -> bool:
    """True when a file or folder name can appear in the release and in ``SHA256SUMS``.

    Rejects empty names, ``.``/``..``, and names with ``/``, ``\\``, control characters or a
    leading dot (hidden files).
    """
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name and all(
        ch.isprintable() for ch in name)


@dataclass(frozen=True)
class _JsonObject:
    """A JSON object with declared fields. ``from_json`` is tolerant: a declared field that is absent
    (a release made before it was added) is None, and keys it does not declare are kept in ``extra``,
    so that ``to_json`` gives back the document read, key for key. A key whose value is null is
    kept in ``extra`` too (its field is None): null and absent stay apart."""

    extra: Mapping[str, JsonValue] = field(default_factory=dict, compare=False, repr=False)
    _NESTED: ClassVar[Mapping[str, type]] = MappingProxyType({})

    @classmethod
    def _declared(cls) -> tuple:
        return tuple(f.name for f in fields(cls) if f.name != "extra")

    @classmethod
    def from_json(cls, document: Mapping[str, JsonValue]):
        """The object of a parsed JSON document (a null value is kept as it is, in ``extra``)."""
        declared, values, extra = cls._declared(), {}, {}
        for key, value in document.items():
            if key not in declared or value is None:
                extra[key] = value
            elif key in cls._NESTED and isinstance(value, Mapping):
                values[key] = cls._NESTED[key].from_json(value)
            else:
                values[key] = tuple(value) if isinstance(value, list) else value
        return cls(**values, extra=extra)

    def to_json(self) -> dict:
        """The JSON document: the declared fields that are set, and the kept ``extra`` keys, in key
        order (as :func:`dumps` writes it, and as a document read back holds it)."""
        document = dict(self.extra)
        for name in self._declared():
            value = getattr(self, name)
            if value is not None:
                document[name] = (value.to_json() if isinstance(value, _JsonObject)
                                  else list(value) if isinstance(value, tuple) else value)
        return dict(sorted(document.items()))


@dataclass(frozen=True)
class ReleaseInput(_JsonObject):
    """``release.json``'s ``input``: the kind of input (``folder``, ``tar``, ``tfds``, ``sample``,
    ...), the SHA-256 of ``sources.jsonl`` and its line count; a build in progress records the
    listing's SHA-256 instead of ``sha256``."""

    kind: Optional[str] = None
    sha256: Optional[str] = None
    images: Optional[int] = None
    listing_sha256: Optional[str] = None


@dataclass(frozen=True)
class ReleaseCounts(_JsonObject):
    """``release.json``'s ``counts``: images, outputs and failures, and outputs per TFDS config (a
    build); the images per class and the reviewed and accepted candidates (an ImageNet-A / -O set)."""

    images: Optional[int] = None
    outputs: Optional[int] = None
    failures: Optional[int] = None
    outputs_per_config: Optional[Mapping[str, int]] = None
    per_class: Optional[Mapping[str, int]] = None
    reviewed: Optional[int] = None
    accepted: Optional[int] = None


@dataclass(frozen=True)
class ReleaseManifest(_JsonObject):
    """``release.json``'s ``manifest``: the manifest parts in name order, their record count and
    the SHA-256 of their bytes joined in that order."""

    parts: Optional[Sequence[str]] = None
    records: Optional[int] = None
    sha256: Optional[str] = None


@dataclass(frozen=True)
class ReleaseTfds(_JsonObject):
    """``release.json``'s ``tfds``: where TFDS finds the configs (``data_dir`` relative to the
    release), the dataset's name, version and split, and the configs in build order."""

    data_dir: Optional[str] = None
    name: Optional[str] = None
    version: Optional[str] = None
    split: Optional[str] = None
    configs: Optional[Sequence[str]] = None

    @classmethod
    def of(cls, dataset, configs: Iterable[str]) -> "ReleaseTfds":
        """The entry of a :class:`schemas.tfds.TfdsDataset` written under :data:`TFDS_DIR`."""
        return cls(data_dir=TFDS_DIR, name=dataset.name, version=dataset.version, split=dataset.split,
                   configs=tuple(configs))


@dataclass(frozen=True)
class PEditionFacts(_JsonObject):
    """``release.json``'s ``p_edition`` (ImageNet-P): the edition's facts
    (:meth:`schemas.imagenet_p_editions.PEdition.to_json`)."""

    name: Optional[str] = None
    frame_size: Optional[int] = None
    input: Optional[str] = None
    output: Optional[str] = None
    preprocessing: Optional[str] = None
    reference: Optional[str] = None
    trees: Optional[Sequence[str]] = None
    frames: Optional[Mapping[str, int]] = None


@dataclass(frozen=True)
class EncoderSettings(_JsonObject):
    """``release.json``'s ``video.encoder``: the H.264 encoder, its settings and the CPU level x264
    used (:func:`pipelines.formats.video.encoder_settings`)."""

    encoder: Optional[str] = None
    preset: Optional[str] = None
    threads: Optional[int] = None
    x264_params: Optional[str] = None
    simd: Optional[bool] = None
    mode: Optional[str] = None
    ffmpeg_cpuflags: Optional[str] = None
    metadata: Optional[str] = None
    cpu_capabilities: Optional[str] = None


@dataclass(frozen=True)
class TfdsFrames(_JsonObject):
    """``release.json``'s ``video.tfds_frames``: what the TFDS video feature holds (``source``:
    ``decoded`` or ``lossless``, its ``meaning``) and how its PNG frames are written."""

    source: Optional[str] = None
    meaning: Optional[str] = None
    format: Optional[str] = None
    compress_level: Optional[int] = None


@dataclass(frozen=True)
class VideoSettings(_JsonObject):
    """``release.json``'s ``video`` (ImageNet-P MP4 editions): container, codec, pixel format, frame
    rate, encoder threads, rate control per perturbation, the encoder and the TFDS frames."""

    container: Optional[str] = None
    codec: Optional[str] = None
    pixel_format: Optional[str] = None
    frame_rate: Optional[int] = None
    threads: Optional[int] = None
    rate_control: Optional[Mapping[str, str]] = None
    encoder: Optional[EncoderSettings] = None
    tfds_frames: Optional[TfdsFrames] = None

    _NESTED: ClassVar[Mapping[str, type]] = MappingProxyType({"encoder": EncoderSettings, "tfds_frames": TfdsFrames})


@dataclass(frozen=True)
class ArrayLayout(_JsonObject):
    """``release.json``'s ``arrays`` (ImageNet-P ``.npy`` editions): where the arrays are, their dtype
    and shape, and what the TFDS frames hold (text for a person)."""

    path: Optional[str] = None
    dtype: Optional[str] = None
    shape: Optional[str] = None
    tfds_frames: Optional[str] = None


@dataclass(frozen=True)
class PackageFile(_JsonObject):
    """``release.json``'s ``package`` (ImageNet-A / -O): the set's tar, its size and digests."""

    file: Optional[str] = None
    bytes: Optional[int] = None
    sha256: Optional[str] = None
    md5: Optional[str] = None


@dataclass(frozen=True)
class BuildSettings(_JsonObject):
    """The fields of ``release.json``'s ``config`` that every build (C, P, VCR) has: the release
    seed and the run's fields the driver adds (:meth:`with_run`). A field is None in a release made
    before it was added, and where the run recorded null (``limit``, ``image_ids_sha256``)."""

    seed: Optional[int] = None
    edition: Optional[str] = None
    examples_per_shard: Optional[int] = None
    limit: Optional[int] = None
    image_ids_sha256: Optional[str] = None
    formats: Optional[Sequence[str]] = None

    def with_run(self, examples_per_shard: int, limit: Optional[int], image_ids_sha256: Optional[str],
                 formats: Optional[Sequence[str]] = None):
        """The settings with the run's fields: ``limit`` and ``image_ids_sha256`` are written even
        when null, ``formats`` only when given (a build that chose other formats than
        :data:`DEFAULT_FORMATS`)."""
        run = {"examples_per_shard": examples_per_shard, "limit": limit, "image_ids_sha256": image_ids_sha256}
        return type(self).from_json({**self.to_json(), **run, **({} if formats is None else {"formats": list(formats)})})


@dataclass(frozen=True)
class CSettings(BuildSettings):
    """``release.json``'s ``config`` of an ImageNet-C release
    (:meth:`schemas.configs.ImageNetCConfig.to_json`, the edition's JPEG quality, the run's fields)."""

    corruptions: Optional[Sequence[str]] = None
    severities: Optional[Sequence[int]] = None
    rng: Optional[str] = None
    clean: Optional[bool] = None
    jpeg_quality: Optional[int] = None


@dataclass(frozen=True)
class PSettings(BuildSettings):
    """``release.json``'s ``config`` of an ImageNet-P release
    (:meth:`schemas.configs.ImageNetPConfig.to_json` and the run's fields)."""

    perturbations: Optional[Sequence[str]] = None
    difficulties: Optional[Sequence[int]] = None
    preset: Optional[str] = None
    simd: Optional[bool] = None
    tfds_frames: Optional[str] = None


@dataclass(frozen=True)
class VcrSettings(BuildSettings):
    """``release.json``'s ``config`` of a VCR release (:meth:`schemas.configs.VcrConfig.to_json` and
    the run's fields)."""

    corruptions: Optional[Sequence[str]] = None
    levels: Optional[int] = None
    per_bin: Optional[int] = None
    bins: Optional[int] = None
    parameters: Optional[str] = None
    operators: Optional[str] = None
    vif_variant: Optional[str] = None
    dv_resolution: Optional[str] = None
    image_format: Optional[str] = None


@dataclass(frozen=True)
class FilterSettings(_JsonObject):
    """``config.filter`` of an ImageNet-A / -O release: the filter's settings
    (:meth:`schemas.adversarial.FilterConfig.to_json`) and its rules in words."""

    task: Optional[str] = None
    classes: Optional[str] = None
    class_wnids: Optional[Sequence[str]] = None
    threshold: Optional[float] = None
    cap: Optional[int] = None
    primary_model: Optional[int] = None
    msp_cut: Optional[float] = None
    min_size: Optional[int] = None
    rules: Optional[Mapping[str, str]] = None


@dataclass(frozen=True)
class FilteredSettings(_JsonObject):
    """``release.json``'s ``config`` of an ImageNet-A / -O release: the filter, its models (each
    model's metadata, :mod:`pipelines.install.fetch_model`), the SHA-256 of the decisions and of the
    accepted reviews, and what the fields of a file name mean."""

    filter: Optional[FilterSettings] = None
    models: Optional[Sequence[Mapping[str, JsonValue]]] = None
    decisions_sha256: Optional[str] = None
    reviews_sha256: Optional[str] = None
    file_names: Optional[Mapping[str, str]] = None

    _NESTED: ClassVar[Mapping[str, type]] = MappingProxyType({"filter": FilterSettings})


ReleaseSettings = Union[CSettings, PSettings, VcrSettings, FilteredSettings]
"""``release.json``'s ``config``: one type per benchmark."""

SETTINGS: Mapping[str, type] = MappingProxyType({
    C_BENCHMARK: CSettings, P_BENCHMARK: PSettings, VCR_BENCHMARK: VcrSettings,
    A_BENCHMARK: FilteredSettings, O_BENCHMARK: FilteredSettings})
"""Benchmark -> the type of its ``config``."""


def settings_type(benchmark: Optional[str], edition: Optional[str], document: Mapping[str, JsonValue]) -> type:
    """The type of a ``config`` document: its release's benchmark's (``benchmark``, or the old
    ``edition`` name of :data:`LEGACY_EDITIONS`); in an old release that names neither, where only C
    and P were made, :class:`PSettings` for a config with ``perturbations`` and :class:`CSettings`
    otherwise."""
    if benchmark is None and edition in LEGACY_EDITIONS:
        benchmark = LEGACY_EDITIONS[edition][1]
    if benchmark in SETTINGS:
        return SETTINGS[benchmark]
    return PSettings if "perturbations" in document else CSettings


@dataclass(frozen=True)
class Release(_JsonObject):
    """The document ``release.json``, the one place its fields are declared.

    An edition module makes the edition fields (``edition`` ... ``package``); the driver adds the
    ``config`` fields of the run and ``input``; :func:`pipelines.beam.write_release.seal_release`
    adds ``format``, the input checksum, ``counts``, ``manifest`` and ``library_versions`` and writes
    it (:meth:`text`). Every reader goes through :meth:`from_json` (``read_release`` in
    :mod:`pipelines.formats.release_document`), which reads old releases too: fields added
    later are None there, and keys this version does not know are kept in ``extra`` (so a release
    read and written again gives the same bytes).

    Attributes
    ----------
    format : str
        :data:`RELEASE_FORMAT`.
    edition, benchmark : str
        Catalogue name of the edition and one of :data:`BENCHMARKS` (None in releases made before
        the ``benchmark`` field: see :data:`LEGACY_EDITIONS`).
    tree : str
        The release's top folder (``ImageNet-C``, ``CIFAR-100-P``, ...).
    config : CSettings, PSettings, VcrSettings or FilteredSettings
        The benchmark's settings (:data:`SETTINGS`): a build's config with the run's fields
        (``examples_per_shard``, ``limit``, ``image_ids_sha256``, ``formats``), an ImageNet-A / -O
        set's filter.
    source_family : str
        The input's source family (C and P).
    encoding, image_size, labels : str, int, str
        C: the outputs' encoding (``jpeg`` or ``npy``), their side, the labels file of ``.npy`` trees.
    class_names : tuple of str
        The class names in label order, in a release without TFDS records (whose
        ``label.labels.txt`` holds them otherwise).
    p_edition, video, arrays : PEditionFacts, VideoSettings, ArrayLayout
        P: the edition's facts, the encoder settings (MP4) or the array layout (``.npy``).
    package : PackageFile
        A and O: the category tar.
    tfds, input, counts, manifest : ReleaseTfds, ReleaseInput, ReleaseCounts, ReleaseManifest
    library_versions : mapping or list
        The workers' library versions (a list when they differed).
    """

    format: Optional[str] = None
    edition: Optional[str] = None
    benchmark: Optional[str] = None
    tree: Optional[str] = None
    config: Optional[ReleaseSettings] = None
    source_family: Optional[str] = None
    encoding: Optional[str] = None
    image_size: Optional[int] = None
    labels: Optional[str] = None
    class_names: Optional[Sequence[str]] = None
    p_edition: Optional[PEditionFacts] = None
    video: Optional[VideoSettings] = None
    arrays: Optional[ArrayLayout] = None
    package: Optional[PackageFile] = None
    tfds: Optional[ReleaseTfds] = None
    input: Optional[ReleaseInput] = None
    counts: Optional[ReleaseCounts] = None
    manifest: Optional[ReleaseManifest] = None
    library_versions: Optional[Union[Mapping[str, str], Sequence[Mapping[str, str]]]] = None

    _NESTED: ClassVar[Mapping[str, type]] = MappingProxyType({
        "tfds": ReleaseTfds, "input": ReleaseInput, "counts": ReleaseCounts, "manifest": ReleaseManifest,
        "p_edition": PEditionFacts, "video": VideoSettings, "arrays": ArrayLayout, "package": PackageFile})

    @classmethod
    def from_json(cls, document: Mapping[str, JsonValue]) -> "Release":
        """The release of a parsed ``release.json``, its ``config`` read as its benchmark's type
        (:func:`settings_type`)."""
        config = document.get("config")
        if not isinstance(config, Mapping):
            return super().from_json(document)
        release = super().from_json({key: value for key, value in document.items() if key != "config"})
        kind = settings_type(document.get("benchmark"), document.get("edition"), config)
        return replace(release, config=kind.from_json(config))

    @classmethod
    def from_text(cls, text: Union[str, bytes]) -> "Release":
        """The release of a ``release.json`` text.

        Raises
        ------
        ValueError
            When the text is not JSON or not a JSON object.
        """
        return cls.from_json(json_object(text, RELEASE_JSON))

    def text(self) -> str:
        """The ``release.json`` text (:func:`dumps`: sorted keys, two-space indent)."""
        return dumps(self.to_json())

    @property
    def formats(self) -> tuple:
        """The output formats the release holds, in name order: ``config.formats``, recorded when
        the build chose other formats than :data:`DEFAULT_FORMATS` (those otherwise)."""
        formats = self.config.formats if isinstance(self.config, BuildSettings) else None
        return tuple(DEFAULT_FORMATS if formats is None else formats)

    @property
    def manifest_parts(self) -> tuple:
        """``manifest.parts`` (none when the release has no manifest record)."""
        return tuple(self.manifest.parts or ()) if self.manifest else ()
