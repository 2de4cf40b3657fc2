"""The Hugging Face index of a release: the files ``datasets.load_dataset(RELEASE, "<config>")`` reads.

- A release with a folder tree of images (the JPEG and PNG editions, VCR) gets one
  ``metadata.parquet`` at its top: a row per image (``file_name``: its path in the release,
  ``label``, ``config``, ``key`` and the condition: corruption and severity, or VCR's corruption,
  draw and ``delta_v``). The card's configs point ``imagefolder`` at it with a filter on ``config``,
  so the images are read from the tree itself, nothing is copied.
- A release of stacked arrays (CIFAR's ``.npy``) gets ``hf/<config>.parquet`` per config, each image
  the PNG of its TFDS record (the same bytes TFDS reads).

``label`` is a ClassLabel of the input's classes in label order (:func:`label_names`): the 1000
ImageNet names (or Tiny ImageNet's 200) from the TFDS ``label.labels.txt``, CIFAR's 10 or 100. The
parquet files carry their Hugging Face features in the schema, are written with fixed options and
depend only on the release and the pyarrow version. ImageNet-P (MP4 videos) has no index.
"""
from __future__ import annotations

import io
import json
import posixpath
from dataclasses import dataclass
from itertools import islice, takewhile, zip_longest
from typing import Callable, Iterable, Iterator, Mapping, Optional

from schemas.publication import (BENCHMARKS, HF_DIR, HF_INDEX, LABEL_NAMES, edition_and_benchmark,
                                 wnid_label_names)
from schemas.records import ManifestRecord
from schemas.release import TFDS_FORMAT, TREE_FORMAT, Release
from schemas.wnids import imagenet_wnids

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable
from pipelines.release.verify_records import rows_by_shard, shard_examples

__all__ = ["LEVEL_TYPES", "BATCH_ROWS", "SLICE_ROWS", "ConfigFacts", "config_facts", "indexed", "label_names",
           "condition_columns", "COLUMN_TYPES", "write_index", "hf_configs", "listed_index_files", "check_index"]


LEVEL_TYPES = {"severity": "int32", "difficulty": "int32", "draw": "int32"}
"""Manifest level field -> its column kind."""


BATCH_ROWS = 10_000
"""Rows per parquet row group (held in memory as Arrow arrays while writing)."""
SLICE_ROWS = 1_000
"""Rows held as Python values at a time while a row group is made (a divisor of :data:`BATCH_ROWS`)."""


@dataclass(frozen=True)
class ConfigFacts:
    """What the card, ``croissant.json`` and the index need of one config: one pass over its manifest."""

    examples: int
    globs: tuple
    """Glob patterns of its image files, ``<folder>/*/*`` per folder of class folders (trees)."""
    first_path: str
    shard: Optional[str]

    @property
    def stacked(self) -> bool:
        """True for rows of stacked arrays (``CIFAR-10-C/fog.npy``), not files."""
        return self.first_path.endswith(".npy")


def config_facts(rows: Iterable[ManifestRecord]) -> ConfigFacts:
    """The :class:`ConfigFacts` of a config's manifest rows."""
    examples, folders, first, shard = 0, set(), "", None
    for row in rows:
        examples += 1
        first = first or row.path
        shard = shard or row.shard
        folders.add(posixpath.dirname(posixpath.dirname(row.path)))
    return ConfigFacts(examples, tuple(sorted(f"{f}/*/*" for f in folders)), first, shard)


def indexed(release: Release, facts: Mapping[str, ConfigFacts]) -> bool:
    """Whether a release has an index: not ImageNet-P, and the files its rows need are there (the
    tree, whose files ``metadata.parquet`` names; for stacked arrays the TFDS records, whose images
    ``hf/<config>.parquet`` holds)."""
    if edition_and_benchmark(release)[1] == "p":
        return False
    return (TFDS_FORMAT if any(f.stacked for f in facts.values()) else TREE_FORMAT) in release.formats


def label_names(root: str, release: Release, facts: Mapping[str, ConfigFacts]) -> tuple:
    """The label names of a release in label order."""
    family = release.source_family
    if family in LABEL_NAMES:
        return LABEL_NAMES[family]
    if release.class_names:  # a release without TFDS records
        return wnid_label_names(release.class_names)
    shard = next((f.shard for f in facts.values() if f.shard), None)
    labels = shard and storage.join(root, posixpath.join(posixpath.dirname(shard), "label.labels.txt"))
    if labels and storage.exists(labels):
        return wnid_label_names(storage.read_bytes(labels).decode("utf-8").split())
    return wnid_label_names(imagenet_wnids())


def condition_columns(release: Release) -> tuple:
    """``(name, datasets type)`` of the condition columns of the index, besides ``config`` and ``key``."""
    benchmark = BENCHMARKS[edition_and_benchmark(release)[1]]
    columns = ((benchmark.condition, "string"),) if benchmark.condition else ()
    if benchmark.level:
        columns += ((benchmark.level, LEVEL_TYPES[benchmark.level]),)
    return columns + ((("delta_v", "float64"),) if edition_and_benchmark(release)[1] == "vcr" else ())


#: Column kind -> (Hugging Face feature, pyarrow type name) of the index files.
COLUMN_TYPES = {"string": ({"dtype": "string", "_type": "Value"}, "string"),
                "int32": ({"dtype": "int32", "_type": "Value"}, "int32"),
                "float64": ({"dtype": "float64", "_type": "Value"}, "float64")}


def _schema(names: tuple, columns: tuple, media: str):
    """The pyarrow schema of an index file, with its Hugging Face features in the schema metadata
    (what ``datasets`` writes and reads back: ``label`` a ClassLabel, ``image`` an Image)."""
    import pyarrow as pa

    kinds = (("label", "label"), ("config", "string"), ("key", "string")) + tuple(columns)
    media_field = (pa.field("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])) if media == "image"
                   else pa.field("file_name", pa.string()))
    media_feature = {"_type": "Image"} if media == "image" else COLUMN_TYPES["string"][0]
    fields = [media_field] + [pa.field(name, pa.int64() if kind == "label" else getattr(pa, COLUMN_TYPES[kind][1])())
                              for name, kind in kinds]
    features = {media_field.name: media_feature, "label": {"names": list(names), "_type": "ClassLabel"},
                **{name: COLUMN_TYPES[kind][0] for name, kind in kinds[1:]}}
    return pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})


class _Sink(io.RawIOBase):
    """A file object writing into ``stream`` (pyarrow closes it when done; ``stream`` stays open)."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return self._stream.write(data)

    def tell(self) -> int:
        return self._stream.tell()


def _write_parquet(root: str, relative: str, records: Iterable[dict], schema,
                   open_output: Optional[Callable] = None) -> str:
    """Write ``root/relative``, a parquet file of ``records``, :data:`BATCH_ROWS` at a time with fixed
    options, streamed into place (one batch in memory); return its SHA-256. ``open_output(relative)``,
    when given, opens the stream instead (a context manager with ``write``, ``tell`` and ``sha256``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = iter(records)

    def row_group() -> list:  # BATCH_ROWS rows as Arrow batches, SLICE_ROWS Python rows at a time
        slices = (list(islice(records, SLICE_ROWS)) for _ in range(BATCH_ROWS // SLICE_ROWS))
        return [pa.RecordBatch.from_pylist(rows, schema=schema) for rows in takewhile(bool, slices)]

    with (open_output or (lambda name: storage.open_atomic(root, name)))(relative) as stream:
        with pq.ParquetWriter(pa.PythonFile(_Sink(stream), mode="w"), schema, compression="zstd",
                              compression_level=3) as writer:
            while batches := row_group():
                writer.write_table(pa.Table.from_batches(batches, schema=schema))
    return stream.sha256


def _record(config: str, row: ManifestRecord, columns: tuple) -> dict:
    return {"label": row.label, "config": config, "key": row.key, **{name: row.value(name) for name, _ in columns}}


def write_index(root: str, release: Release, facts: Mapping[str, ConfigFacts],
                rows_of: Callable[[str], Iterator[ManifestRecord]], open_output: Optional[Callable] = None
                ) -> dict[str, str]:
    """Write the index files of a release (module doc); ``{relative path: sha256}`` of each.

    Parameters
    ----------
    facts : mapping
        Config name -> its :class:`ConfigFacts`, in the manifests' order.
    rows_of : callable
        Config name -> its manifest rows in key order (read again for each file written).
    open_output : callable, optional
        Relative path -> the stream to write it to (default: the file, written atomically); verify
        gives a stream that only hashes (:class:`pipelines.release.verify_publication.Digest`).
    """
    if not indexed(release, facts):
        return {}
    names, columns = label_names(root, release, facts), condition_columns(release)
    if not any(f.stacked for f in facts.values()):
        records = ({"file_name": row.path, **_record(config, row, columns)} for config in facts
                   for row in rows_of(config))
        return {HF_INDEX: _write_parquet(root, HF_INDEX, records, _schema(names, columns, "file_name"), open_output)}
    written, schema = {}, _schema(names, columns, "image")
    for config in facts:
        records = []
        for shard, shard_rows in sorted(rows_by_shard(rows_of(config)).items()):
            for row, example in zip(shard_rows, shard_examples(root, shard)):
                records.append({"image": {"bytes": example["image"][0], "path": None},
                                **_record(config, row, columns)})
        records.sort(key=lambda r: r["key"])
        relative = f"{HF_DIR}/{config}.parquet"
        written[relative] = _write_parquet(root, relative, records, schema, open_output)
    return written


def hf_configs(release: Release, facts: Mapping[str, ConfigFacts]) -> list[dict]:
    """The card's ``configs:`` entries, one per config (none without an index, :func:`indexed`)."""
    if not indexed(release, facts):
        return []
    split = release.tfds.split if release.tfds and release.tfds.split else "test"
    entries = []
    for config, info in facts.items():
        if info.stacked:
            entries.append({"config_name": config, "data_files": [{"split": split,
                                                                   "path": f"{HF_DIR}/{config}.parquet"}]})
        else:
            entries.append({"config_name": config,
                            "data_files": [{"split": split, "path": [HF_INDEX, *info.globs]}],
                            "filters": [["config", "==", config]]})
    return entries


def listed_index_files(listed: ChecksumTable) -> list[str]:
    """The index files the table of a release's ``SHA256SUMS`` lists (``metadata.parquet``,
    ``hf/*.parquet``), in order."""
    files = [p for p in listed.under(f"{HF_DIR}/") if p.endswith(".parquet")]
    return sorted(files + ([HF_INDEX] if HF_INDEX in listed else []))


def check_index(root: str, release: Release, listed: ChecksumTable) -> list[str]:
    """What ``datasets`` reads of the index, against the manifests: ``metadata.parquet``'s rows
    (``file_name``, ``label``, ``config``, ``key``, in the manifests' order) and each
    ``hf/<config>.parquet`` (``key``, ``label`` and the pixels of ``image`` against
    ``array_sha256``). ``listed``: the table of the release's ``SHA256SUMS``. Returns the problems;
    none when the release has no index."""
    from pipelines.formats.manifests import read_manifest_part
    from pipelines.release.verify_records import image_digest, part_config, pixels_sha256

    files = listed_index_files(listed)
    if not files or not all(storage.exists(storage.join(root, p)) for p in files):
        return []  # missing files are reported by the checksum pass
    problems = []
    parts = {part_config(part): part for part in release.manifest_parts}
    for relative in files:
        images: list[str] = []
        if relative == HF_INDEX:
            expected = ((r.path, r.label, c, r.key) for c, part in parts.items() for r in read_manifest_part(root, part))
            got = ((r.get("file_name"), r.get("label"), r.get("config"), r.get("key"))
                   for r in _parquet_records(root, relative))
        else:
            config = relative[len(HF_DIR) + 1:-len(".parquet")]
            rows = list(read_manifest_part(root, parts[config])) if config in parts else []  # one config at a time
            expected = ((r.label, config, r.key) for r in rows)
            digest_of = {r.key: r.value(image_digest(release)[1]) for r in rows}

            def checked(records, digest_of=digest_of, relative=relative, images=images):
                for record in records:  # each image against its manifest digest, as the rows go by
                    image = (record.get("image") or {}).get("bytes")
                    if image is None or pixels_sha256(image) != digest_of.get(record.get("key")):
                        images.append(f"{relative}: the image of {record.get('key')} differs from the manifest's "
                                      "array_sha256")
                    yield record.get("label"), record.get("config"), record.get("key")

            got = checked(_parquet_records(root, relative))
        try:
            difference = _first_difference(got, expected)
        except Exception as err:  # pyarrow's errors are of many kinds: the file is not what datasets reads
            problems.append(f"{relative}: not a readable parquet file ({type(err).__name__})")
            continue
        if difference is not None:
            first, found, wanted = difference
            problems.append(f"{relative}: row {first + 1} of {found} differs from the manifests ({wanted} rows)")
        problems += images
    return problems


def _parquet_records(root: str, relative: str) -> Iterator[dict]:
    """The rows of a parquet file of the release as dicts, :data:`SLICE_ROWS` at a time, one row
    group read after the other (Arrow's read-ahead threads and pre-buffering held several: memory
    grew with the number of row groups)."""
    import pyarrow.parquet as pq

    path = storage.join(root, relative)
    source = path if storage.is_local(path) else io.BytesIO(storage.read_bytes(path))
    for batch in pq.ParquetFile(source, pre_buffer=False).iter_batches(batch_size=SLICE_ROWS, use_threads=False):
        yield from batch.to_pylist()


_ABSENT = object()


def _first_difference(got: Iterable, expected: Iterable) -> Optional[tuple[int, int, int]]:
    """``(index of the first row that differs, rows in got, rows in expected)``, or None when the two
    streams are equal; a stream that ends first differs at its end."""
    first, found, wanted = None, 0, 0
    for index, (a, b) in enumerate(zip_longest(got, expected, fillvalue=_ABSENT)):
        found, wanted = found + (a is not _ABSENT), wanted + (b is not _ABSENT)
        if first is None and a != b:
            first = index
    return None if first is None else (first, found, wanted)
