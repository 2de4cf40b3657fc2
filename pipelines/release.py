"""WriteRelease: the sinks of a build, and the driver's last step that seals a release.

:class:`WriteRelease` takes the output records, source records, failures and worker environments
of any edition and writes, under the release directory:

- each record's file in the folder tree (``record.path``);
- TFDS TFRecord shards, one set per group (TFDS config): the shard of a record is a hash of its
  key, records are sorted by key inside a shard, so the bytes do not depend on workers or order.
  The serialized examples do not go through the shuffle: each worker spills them to
  ``DIR/.spill/`` (:mod:`pipelines.spill`) and the shard writers read them back by reference;
- ``dataset_info.json``, ``features.json`` and label files of every config;
- ``manifest/<group>.jsonl``, ``sources.jsonl`` and ``failures.jsonl``, sorted;
- per-group checksum parts and the worker environments, in ``.parts/`` for the driver.

:func:`seal_release` (driver, after the pipeline) writes ``release.json`` and ``SHA256SUMS`` and
removes the scratch folders.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import json
import platform
from typing import Any, Iterable, Mapping, Optional, Tuple

import apache_beam as beam

from schemas.records import FileInfo, OutputRecord
from schemas.release import (CHECKSUMS, FAILURES, PARTS_DIR, RELEASE_FORMAT, RELEASE_JSON, SCRATCH_DIRS,
                             SOURCES, checksum_line, dumps, json_line, manifest_path)
from schemas.tfds import TfdsDataset

from . import storage
from .progress import ProgressCounter
from .spill import SpillRef, SpillWriter, read_spilled
from .tfrecord import encode_example, frame_record

CHECKSUM_PARTS = f"{PARTS_DIR}/sha256"
ENVIRONMENTS = f"{PARTS_DIR}/environments.json"
RELEASE_WIDE_GROUP = "_release"
"""Checksum-part name of the files that belong to no group (sources, failures)."""


def library_versions() -> dict[str, str]:
    """Versions of everything that can change an output's bytes (and of the build tools)."""
    import apache_beam
    import cv2
    import numba
    import numpy
    import PIL
    import scipy
    import skimage
    from PIL import features

    try:
        own = importlib.metadata.version("imagenet-cp")
    except importlib.metadata.PackageNotFoundError:
        own = "not installed"
    return {"python": platform.python_version(), "imagenet-cp": own, "numpy": numpy.__version__,
            "pillow": PIL.__version__, "libjpeg": str(features.version("jpg")),
            "libjpeg-turbo": str(features.version("libjpeg_turbo")), "scipy": scipy.__version__,
            "scikit-image": skimage.__version__, "opencv": cv2.__version__, "numba": numba.__version__,
            "apache-beam": apache_beam.__version__}


class OutputsFn(beam.DoFn):
    """Base of the DoFns that make an edition's output records.

    Holds the worker's :class:`ProgressCounter` and reports the worker's environment (the versions
    from :meth:`environment`, as JSON, tagged ``environments``) once per bundle, so that
    ``release.json`` can show every environment a release was built in.
    """

    def __init__(self, progress_dir: Optional[str]):
        self._progress_dir = progress_dir

    def environment(self) -> dict[str, str]:
        """Versions of everything that can change this worker's output bytes."""
        return library_versions()

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)
        self._environment = json.dumps(self.environment(), sort_keys=True)

    def start_bundle(self):
        self._reported = False

    def report_environment(self):
        """The ``environments`` output, once per bundle (an empty list after the first call)."""
        if self._reported:
            return []
        self._reported = True
        return [beam.pvalue.TaggedOutput("environments", self._environment)]

    def fail(self, failure):
        """Count ``failure`` and return it as the tagged ``failures`` output."""
        self._progress.add(failures=1)
        return beam.pvalue.TaggedOutput("failures", failure)

    def teardown(self):
        self._progress.flush()


def shard_index(key: str, count: int) -> int:
    """Shard (0..count-1) of an output key: SHA-256 of the key, so stable everywhere."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % count


class WriteOutputFiles(beam.DoFn):
    """OutputRecord -> its file in the tree, and its serialized example appended to this bundle's
    spill file. Emits ``((group, shard), (key, spill path, offset, length))`` for the shard writer,
    and tagged ``manifest`` rows ``(group, row)`` and ``files`` infos."""

    def __init__(self, output_dir: str, dataset: TfdsDataset, shard_count: int, progress_dir: Optional[str]):
        self._output_dir, self._dataset, self._shard_count = output_dir, dataset, shard_count
        self._progress_dir = progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)

    def start_bundle(self):
        self._spill = SpillWriter(self._output_dir)

    def process(self, record: OutputRecord):
        if record.stacked:  # a row of a stacked .npy, written by pipelines.npy_release
            info = FileInfo(record.path, hashlib.sha256(record.data).hexdigest(), len(record.data), record.group)
        else:
            info = storage.write_atomic(self._output_dir, record.path, record.data, group=record.group)
        index = shard_index(record.key, self._shard_count)
        shard = f"{self._dataset.config_dir(record.group)}/{self._dataset.shard_name(index, self._shard_count)}"
        row = {**record.metadata, "key": record.key, "path": record.path, "sha256": info.sha256,
               "bytes": info.size, "shard": shard}
        self._progress.add(outputs_written=1)
        yield beam.pvalue.TaggedOutput("manifest", (record.group, row))
        if not record.stacked:
            yield beam.pvalue.TaggedOutput("files", info)
        yield (record.group, index), (record.key, *self._spill.append(encode_example(record.example)))

    def finish_bundle(self):
        self._spill.close()

    def teardown(self):
        self._progress.flush()


class WriteShard(beam.DoFn):
    """``((group, index), [(key, spill path, offset, length)])`` -> one TFRecord shard of the spilled
    examples, sorted by key. Emits ``(group, (index, examples, example bytes))`` and a tagged
    ``files`` info."""

    def __init__(self, output_dir: str, dataset: TfdsDataset, shard_count: int):
        self._output_dir, self._dataset, self._shard_count = output_dir, dataset, shard_count

    def process(self, element):
        (group, index), refs = element
        refs = sorted(refs)  # keys are unique
        examples = read_spilled(SpillRef(*ref[1:]) for ref in refs)
        path = f"{self._dataset.config_dir(group)}/{self._dataset.shard_name(index, self._shard_count)}"
        data = (frame_record(example) for example in examples)
        yield beam.pvalue.TaggedOutput("files", storage.write_atomic(self._output_dir, path, data, group=group))
        yield group, (index, len(examples), sum(len(example) for example in examples))


class WriteTfdsMetadata(beam.DoFn):
    """``(group, [(index, examples, bytes)])`` -> ``dataset_info.json``, ``features.json`` and the
    label files of one config; shards that received no example are written empty."""

    def __init__(self, output_dir: str, dataset: TfdsDataset, shard_count: int):
        self._output_dir, self._dataset, self._shard_count = output_dir, dataset, shard_count

    def process(self, element):
        group, shards = element
        lengths = [0] * self._shard_count
        num_bytes = 0
        for index, examples, size in shards:
            lengths[index] = examples
            num_bytes += size
        folder = self._dataset.config_dir(group)
        files = {self._dataset.shard_name(i, self._shard_count): "" for i, n in enumerate(lengths) if not n}
        files["dataset_info.json"] = self._dataset.dataset_info_json(group, lengths, num_bytes)
        files["features.json"] = self._dataset.features_json()
        files.update(self._dataset.metadata_files())
        for name, text in sorted(files.items()):
            yield storage.write_atomic(self._output_dir, f"{folder}/{name}", text.encode("utf-8"), group=group)


class WriteManifestPart(beam.DoFn):
    """``(group, [row])`` -> ``manifest/<group>.jsonl``, one JSON line per output sorted by key."""

    def __init__(self, output_dir: str):
        self._output_dir = output_dir

    def process(self, element):
        group, rows = element
        text = "".join(json_line(row) for row in sorted(rows, key=lambda r: r["key"]))
        yield storage.write_atomic(self._output_dir, manifest_path(group), text.encode("utf-8"), group=group)


def write_json_lines(output_dir: str, relative: str, records: Iterable[Mapping[str, Any]]) -> FileInfo:
    """Write records as canonical JSON lines, sorted by ``key`` then text, to ``relative``."""
    text = "".join(line for _, line in sorted((r["key"], json_line(r)) for r in records))
    return storage.write_atomic(output_dir, relative, text.encode("utf-8"), group=RELEASE_WIDE_GROUP)


def write_checksum_part(output_dir: str, element) -> None:
    """``(group, [FileInfo])`` -> ``.parts/sha256/<group>.txt`` (``sha256sum`` lines sorted by path)."""
    group, infos = element
    text = "".join(checksum_line(i.sha256, i.path) for i in sorted(infos, key=lambda i: i.path))
    storage.write_atomic(output_dir, f"{CHECKSUM_PARTS}/{group}.txt", text.encode("utf-8"))


class WriteRelease(beam.PTransform):
    """``{'records', 'sources', 'failures', 'environments'}`` -> every file of a release but
    ``release.json`` and ``SHA256SUMS`` (see :func:`seal_release`).

    Parameters
    ----------
    output_dir : str
        The release directory.
    dataset : TfdsDataset
        The TFDS dataset whose configs are the records' groups.
    shard_count : int
        TFRecord shards per config.
    progress_dir : str, optional
        Where workers leave progress counts (see :class:`ProgressCounter`).
    """

    def __init__(self, output_dir: str, dataset: TfdsDataset, shard_count: int, progress_dir: Optional[str] = None):
        super().__init__()
        if shard_count < 1:
            raise ValueError(f"shard_count must be >= 1, got {shard_count}")
        self._output_dir, self._dataset, self._shard_count = output_dir, dataset, shard_count
        self._progress_dir = progress_dir

    def expand(self, inputs):
        out, args = self._output_dir, (self._output_dir, self._dataset, self._shard_count)
        written = inputs["records"] | "WriteOutputFiles" >> beam.ParDo(WriteOutputFiles(*args, self._progress_dir)).with_output_types(
            Tuple[Tuple[str, int], Tuple[str, str, int, int]]).with_outputs("manifest", "files", main="example_refs")
        shards = (written.example_refs
                  | "GroupShards" >> beam.GroupByKey()
                  | "WriteShards" >> beam.ParDo(WriteShard(*args)).with_output_types(
                      Tuple[str, Tuple[int, int, int]]).with_outputs("files", main="shards"))
        metadata_files = (shards.shards
                          | "GroupShardsByConfig" >> beam.GroupByKey()
                          | "WriteTfdsMetadata" >> beam.ParDo(WriteTfdsMetadata(*args)))
        manifest_files = (written.manifest
                          | "GroupManifest" >> beam.GroupByKey()
                          | "WriteManifest" >> beam.ParDo(WriteManifestPart(out)))
        jsonl_files = [
            inputs[name] | f"Collect{title}" >> beam.combiners.ToList()
            | f"Write{title}" >> beam.Map(lambda rows, path=path: write_json_lines(out, path, rows))
            for name, title, path in (("sources", "Sources", SOURCES), ("failures", "Failures", FAILURES))]
        (inputs["environments"]
         | "DistinctEnvironments" >> beam.Distinct()
         | "CollectEnvironments" >> beam.combiners.ToList()
         | "WriteEnvironments" >> beam.Map(lambda envs: storage.write_atomic(
             out, ENVIRONMENTS, json.dumps(sorted(envs)).encode("utf-8"))))
        return ((written.files, shards.files, metadata_files, manifest_files, *jsonl_files)
                | "AllFiles" >> beam.Flatten()
                | "KeyByGroup" >> beam.Map(lambda info: (info.group or RELEASE_WIDE_GROUP, info))
                | "GroupChecksums" >> beam.GroupByKey()
                | "WriteChecksumParts" >> beam.Map(lambda element: write_checksum_part(out, element)))


def _count_and_digest(output_dir: str, relative_paths: Iterable[str]) -> tuple[dict, str]:
    """Lines per file and one SHA-256 over the files' bytes concatenated in the given order."""
    digest, counts = hashlib.sha256(), {}
    for relative in relative_paths:
        data = storage.read_bytes(storage.join(output_dir, relative))
        digest.update(data)
        counts[relative] = data.count(b"\n")
    return counts, digest.hexdigest()


def seal_release(output_dir: str, document: Mapping[str, Any]) -> dict:
    """Write ``release.json`` and ``SHA256SUMS`` after the pipeline, then remove scratch folders.

    Parameters
    ----------
    output_dir : str
        The release directory the pipeline wrote.
    document : mapping
        Edition-specific fields of ``release.json`` (``edition``, ``config``, ``tfds``, ...); the
        input checksum, counts, library versions and manifest digest are added here.

    Returns
    -------
    dict
        The ``release.json`` document.
    """
    manifest_parts = storage.list_files(output_dir, "manifest")
    per_part, manifest_sha256 = _count_and_digest(output_dir, manifest_parts)
    lists, _ = _count_and_digest(output_dir, [SOURCES, FAILURES])
    sources_sha256 = hashlib.sha256(storage.read_bytes(storage.join(output_dir, SOURCES))).hexdigest()
    environments = [json.loads(e) for e in json.loads(storage.read_bytes(storage.join(output_dir, ENVIRONMENTS)))]
    environments = environments or [library_versions()]  # no image reached a worker
    release = {
        **document,
        "format": RELEASE_FORMAT,
        "input": {**document.get("input", {}), "sha256": sources_sha256, "images": lists[SOURCES]},
        "counts": {"images": lists[SOURCES], "outputs": sum(per_part.values()), "failures": lists[FAILURES],
                   "outputs_per_config": {p.rsplit("/", 1)[1][:-len(".jsonl")]: n for p, n in per_part.items()}},
        "manifest": {"parts": manifest_parts, "records": sum(per_part.values()), "sha256": manifest_sha256},
        "library_versions": environments[0] if len(environments) == 1 else environments,
    }
    text = dumps(release).encode("utf-8")
    release_info = storage.write_atomic(output_dir, RELEASE_JSON, text)
    parts = (storage.read_bytes(storage.join(output_dir, p)) for p in storage.list_files(output_dir, CHECKSUM_PARTS))
    storage.write_atomic(output_dir, CHECKSUMS, itertools.chain(
        parts, [checksum_line(release_info.sha256, RELEASE_JSON).encode("utf-8")]))
    for scratch in SCRATCH_DIRS:
        storage.delete_tree(storage.join(output_dir, scratch))
    return release
