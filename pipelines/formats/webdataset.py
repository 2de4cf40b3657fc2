"""WebDataset shards of a release's tree: ``webdataset/<config>/<config>-000000.tar``, ...

The format PyTorch users read at scale (``webdataset``, timm, OpenCLIP): each shard is a plain tar
of samples, a sample being the members that share a key. Here each output of a config is one
sample, in manifest (key) order:

- ``<key>.jpg`` (ImageNet-C editions) or ``<key>.mp4`` (ImageNet-P editions): the tree file's
  bytes, unchanged; for CIFAR-10-C / CIFAR-100-C, whose outputs are rows of stacked ``.npy``
  arrays, ``<key>.png``: the row as the lossless PNG of its TFDS example (read back from the
  config's TFRecord shards);
- ``<key>.cls``: the label (the index of the class in ``label.labels.txt``; ImageNet's for the
  ImageNet editions, CIFAR's for CIFAR), as decimal text, as ``webdataset`` decodes ``.cls``.

The key is ``<class folder>_<file name without extension>``, e.g.
``n01440764_ILSVRC2012_val_00000293`` (CIFAR: ``<class name>_<image key>``, e.g. ``cat_00000``):
WebDataset splits a member name at the first dot of its base name, so the key has none (a dot in
a file stem becomes ``_``). A shard holds at most
:data:`MAX_SHARD_BYTES` bytes (a sample larger than that alone). The bytes are reproducible:
GNU tar headers with mtime 0, owner 0/0 without names, mode 0644, the end-of-archive blocks and
the padding to tar's 10,240-byte records, so equal outputs give equal shards. The shards go into
``SHA256SUMS`` through the checksum part of their config; ``verify`` checks every shard's samples
against the manifest (:func:`check_shards`).
"""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Optional, Sequence

from schemas.records import FileInfo
from schemas.release import CHECKSUMS, WEBDATASET_DIR, manifest_path

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable

if TYPE_CHECKING:
    from pipelines.formats.release_sink import ReleaseFiles

__all__ = ["WEBDATASET", "MAX_SHARD_BYTES", "EXTENSIONS", "sample_key", "member_extension", "label_bytes",
           "sample_bytes", "sample_size", "plan_shards", "shard_path", "manifest_samples", "write_shards",
           "read_shard", "check_shards", "manifest_sha256s", "is_folder_tree", "write_config_webdataset",
           "STACKED_EXTENSION", "stacked_key", "check_release_shards", "write_spilled_webdataset"]

WEBDATASET = WEBDATASET_DIR
"""Name of the format (``--formats webdataset``) and of the folder of its shards in a release."""
MAX_SHARD_BYTES = 1_000_000_000
"""Largest shard (1 GB), unless one sample alone is larger."""
EXTENSIONS: Mapping[str, str] = {".jpeg": "jpg", ".jpg": "jpg", ".png": "png", ".mp4": "mp4"}
"""Tree file extension (lower case) -> the sample member's extension WebDataset decodes."""
_BLOCK = 512
_END = 2 * _BLOCK
_RECORD = tarfile.RECORDSIZE


def sample_key(path: str) -> str:
    """The WebDataset key of a tree file: ``<class folder>_<stem>`` with no dot, e.g.
    ``ImageNet-C/fog/3/n01440764/ILSVRC2012_val_00000293.JPEG`` -> ``n01440764_ILSVRC2012_val_00000293``."""
    folder, name = path.rsplit("/", 2)[-2:]
    stem = name.rsplit(".", 1)[0]
    return f"{folder}_{stem}".replace(".", "_")


def member_extension(path: str) -> str:
    """The member extension of a tree file: ``jpg``, ``png`` or ``mp4``.

    Raises
    ------
    ValueError
        For a file type WebDataset users have no decoder for here.
    """
    dot = path.rfind(".")
    extension = EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None
    if extension is None:
        raise ValueError(f"{path}: no WebDataset member type for this file (known: {', '.join(EXTENSIONS)})")
    return extension


def _padded(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = size, 0o644, 0, 0, 0, "", ""
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def label_bytes(label: int) -> bytes:
    """The ``.cls`` member of a label: its decimal text."""
    return str(int(label)).encode("ascii")


def sample_bytes(key: str, extension: str, data: bytes, label: int) -> bytes:
    """The tar members of one sample: ``<key>.<extension>`` then ``<key>.cls``."""
    out = io.BytesIO()
    for name, value in ((f"{key}.{extension}", data), (f"{key}.cls", label_bytes(label))):
        out.write(_header(name, len(value)))
        out.write(value)
        out.write(b"\0" * (_padded(len(value)) - len(value)))
    return out.getvalue()


def sample_size(key: str, extension: str, size: int, label: int) -> int:
    """Bytes :func:`sample_bytes` takes for a file of ``size`` bytes (without reading it)."""
    headers = len(_header(f"{key}.{extension}", size)) + len(_header(f"{key}.cls", 0))
    return headers + _padded(size) + _padded(len(label_bytes(label)))


def plan_shards(sizes: Sequence[int], max_bytes: int = MAX_SHARD_BYTES) -> list[tuple[int, int]]:
    """Split samples of ``sizes`` bytes, in order, into ``[start, end)`` runs whose shards (with
    the end blocks and record padding) stay within ``max_bytes``; a sample larger than that alone."""
    runs, start, total = [], 0, 0
    for index, size in enumerate(sizes):
        if index > start and total + size + _END + _RECORD > max_bytes:
            runs.append((start, index))
            start, total = index, 0
        total += size
    if len(sizes) > start:
        runs.append((start, len(sizes)))
    return runs


def _closing(length: int) -> bytes:
    """The end-of-archive blocks and the zero padding to a whole tar record."""
    total = length + _END
    return b"\0" * (_END + (-total) % _RECORD)


def shard_path(config: str, index: int) -> str:
    """Relative path of shard ``index`` of ``config``: ``webdataset/<config>/<config>-000000.tar``."""
    return f"{WEBDATASET}/{config}/{config}-{index:06d}.tar"


def manifest_samples(lines: Iterable[str]) -> list[tuple[str, str, int, int]]:
    """``(key, path, bytes, label)`` of each manifest line of a folder tree's config, in order."""
    samples = []
    for line in lines:
        row = json.loads(line)
        samples.append((sample_key(row["path"]), row["path"], int(row["bytes"]), int(row["label"])))
    return samples


def write_shards(output_dir: str, config: str, samples: Sequence[tuple[str, str, int, int]],
                 read: Optional[Callable[[str], bytes]] = None, max_bytes: int = MAX_SHARD_BYTES,
                 group: str = "", extension: Optional[str] = None) -> list[FileInfo]:
    """Write the shards of one config from its samples ``(key, path, bytes, label)`` (manifest
    order; ``read(path)`` gives a sample's bytes, read once each in that order); return what was
    written. ``extension``: every sample's member type (default: from its path).

    Raises
    ------
    ValueError
        If two samples share a key, or a file's size differs from the manifest's.
    """
    keys = [key for key, *_ in samples]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{config}: two outputs have the same WebDataset key")
    read = read or (lambda path: storage.read_bytes(storage.join(output_dir, path)))
    types = [extension or member_extension(path) for _, path, _, _ in samples]
    sizes = [sample_size(key, kind, size, label) for (key, _, size, label), kind in zip(samples, types)]
    infos = []
    for index, (start, end) in enumerate(plan_shards(sizes, max_bytes)):
        def chunks(start=start, end=end) -> Iterator[bytes]:
            length = 0
            for (key, path, size, label), kind in zip(samples[start:end], types[start:end]):
                data = read(path)
                if len(data) != size:
                    raise ValueError(f"{path}: {len(data)} bytes, the manifest says {size}")
                chunk = sample_bytes(key, kind, data, label)
                length += len(chunk)
                yield chunk
            yield _closing(length)
        infos.append(storage.write_atomic(output_dir, shard_path(config, index), chunks(), group=group))
    return infos


def read_shard(stream) -> Iterator[tuple[str, dict]]:
    """``(key, {extension: bytes})`` of each sample of a shard read from a binary stream, in order
    (grouped by key as WebDataset groups them)."""
    key, members = None, {}
    with tarfile.open(fileobj=stream, mode="r:") as archive:
        for member in archive:
            if not member.isfile():
                continue
            name, _, extension = member.name.rsplit("/", 1)[-1].partition(".")
            if name != key and key is not None:
                yield key, members
                members = {}
            key, members[extension] = name, archive.extractfile(member).read()
    if key is not None:
        yield key, members


def check_shards(root: str, config: str, lines: Iterable[str], listed: ChecksumTable) -> list[str]:
    """Problems of one config's shards against its manifest lines: the shards ``SHA256SUMS`` lists
    (``listed``: its table), read in order, hold exactly the manifest's samples in order (their
    keys), each with the tree file's member type and SHA-256 and its label (empty: they match)."""
    prefix = f"{WEBDATASET}/{config}/"
    shards = list(listed.under(prefix))
    lines = list(lines)
    expected, stacked = manifest_sha256s(lines)
    found = []
    for shard in shards:
        try:
            with storage.open_stream(storage.join(root, shard)) as stream:
                found += [(key, _digests(members, stacked)) for key, members in read_shard(stream)]
        except (OSError, tarfile.TarError) as err:
            return [f"{shard}: unreadable ({type(err).__name__}: {err})"]
    if [key for key, _ in found] != [key for key, _, _ in expected]:
        return [f"{prefix}: {len(found)} samples, the manifest {len(expected)} (or in another order)"]
    problems = []
    types = _member_types(lines, stacked)
    for (key, members), (_, sha256, label), extension in zip(found, expected, types):
        data = [value for extension, value in members.items() if extension != "cls"]
        kinds = sorted(members)
        if kinds != sorted((extension, "cls")):
            problems.append(f"{prefix}{key}: members {', '.join('.' + k for k in kinds)}, the manifest "
                            f".{extension} and .cls")
        elif data != [sha256]:
            problems.append(f"{prefix}{key}: the sample's bytes differ from the tree file's")
        elif members.get("cls") != label_bytes(label):
            problems.append(f"{prefix}{key}: label {members.get('cls')!r}, the manifest {label}")
    return problems


def _member_types(lines: Iterable[str], stacked: bool) -> list[str]:
    """The data member's extension of each manifest line's sample (:func:`member_extension` of its
    tree file, :data:`STACKED_EXTENSION` for a row of a stacked array)."""
    if stacked:
        return [STACKED_EXTENSION for _ in lines]
    return [member_extension(json.loads(line)["path"]) for line in lines]


def _digests(members: dict, stacked: bool) -> dict:
    """A sample's members with each data member (all but ``.cls``) replaced by its SHA-256: of the
    bytes, or (``stacked``: a row of a stacked array) of the PNG's decoded uint8 pixels."""
    return {extension: value if extension == "cls" else hashlib.sha256(_pixels(value) if stacked else value).hexdigest()
            for extension, value in members.items()}


def _pixels(png: bytes) -> bytes:
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).tobytes()


def manifest_sha256s(lines: Iterable[str]) -> tuple[list[tuple[str, str, int]], bool]:
    """``(key, sha256, label)`` of each manifest line, and whether the rows are of stacked arrays:
    the tree file's SHA-256, or for a row of a stacked array the SHA-256 of its uint8 pixels
    (``array_sha256``)."""
    rows = [json.loads(line) for line in lines]
    if is_folder_tree([(None, row["path"], 0, 0) for row in rows]):
        return [(sample_key(row["path"]), row["sha256"], int(row["label"])) for row in rows], False
    return [(stacked_key(row), row["array_sha256"], int(row["label"])) for row in rows], True


def is_folder_tree(samples: Sequence[tuple]) -> bool:
    """True when every sample is a file of a class folder (``<tree>/.../<class>/<file>``), not a row of
    a stacked array (``CIFAR-10-C/fog.npy``)."""
    return bool(samples) and all(path.count("/") >= 2 for _, path, _, _ in samples)


def write_config_webdataset(output_dir: str, config: str, max_bytes: int = MAX_SHARD_BYTES,
                            examples: Optional[Callable[[str], Iterator[bytes]]] = None) -> list[FileInfo]:
    """The shards of one config, from its manifest ``manifest/<config>.jsonl``; return what was written.

    A sample's bytes are the ``image`` of its TFDS example, which is the tree file's bytes for the
    JPEG and PNG editions and, for a config of stacked arrays, the row's PNG; the examples of a
    shard come from ``examples(shard)`` (serialized, in key order; default: the TFRecord shard
    files). The samples of a video tree (ImageNet-P's MP4 files, which no example holds) are the
    tree files.
    """
    lines = storage.read_bytes(storage.join(output_dir, manifest_path(config))).decode("utf-8").splitlines()
    samples = manifest_samples(lines)
    if not samples:
        return []
    examples = examples or (lambda shard: _shard_records(output_dir, shard))
    rows = [json.loads(line) for line in lines]
    locators = [(row["shard"], number) for number, row in enumerate(rows)]
    if is_folder_tree(samples):
        if any(member_extension(path) == "mp4" for _, path, _, _ in samples):
            return write_shards(output_dir, config, samples, max_bytes=max_bytes, group=config)
        read = _sequential(_example_images(locators, examples), [path for _, path, _, _ in samples])
        return write_shards(output_dir, config, samples, read, max_bytes, config)
    sizes = [len(data) for data in _example_images(locators, examples)]
    read = _sequential(_example_images(locators, examples), locators)
    stacked = [(stacked_key(row), locator, size, int(row["label"])) for row, locator, size in zip(rows, locators, sizes)]
    return write_shards(output_dir, config, stacked, read, max_bytes, config, STACKED_EXTENSION)



def write_spilled_webdataset(release: "ReleaseFiles", config: str, shard_refs: Sequence[Sequence[tuple]]
                             ) -> list[FileInfo]:
    """The shards of one config of a build (:func:`write_config_webdataset`), their images read from
    the build's spilled TFDS examples (``shard_refs``: per TFRecord shard, ``(part, offset, length)``
    in key order) instead of the TFRecord files, which the release may not hold."""
    from pipelines.formats.spill import SpillReader

    dataset, count = release.dataset, release.shard_count
    refs = {f"{dataset.config_dir(config)}/{dataset.shard_name(index, count)}": shard_refs[index]
            for index in range(count)}

    def examples(shard: str) -> Iterator[bytes]:
        reader = SpillReader(release.output_dir)
        try:
            for ref in refs[shard]:
                yield reader.read(*ref)
        finally:
            reader.close()
    return write_config_webdataset(release.output_dir, config, examples=examples)

STACKED_EXTENSION = "png"
"""Member type of a row of a stacked array: the lossless PNG of the TFDS example (CIFAR-10-C's)."""


def stacked_key(row: Mapping) -> str:
    """The key of a row of a stacked array: ``<class name>_<image key stem>``, e.g. ``cat_00000``."""
    return f"{row['wnid']}_{str(row['image_key']).rsplit('.', 1)[0]}".replace(".", "_").replace("/", "_")


def _example_images(locators: Sequence[tuple[str, int]], examples: Callable[[str], Iterator[bytes]]) -> Iterator[bytes]:
    """The ``image`` of each row's TFDS example, in row order. A shard holds its rows' examples in
    key order, so each row takes the next example of its shard (each shard read once, in order)."""
    from pipelines.formats.tfrecord import decode_example

    readers: dict = {}
    try:
        for shard, _ in locators:
            if shard not in readers:
                readers[shard] = examples(shard)
            yield decode_example(next(readers[shard]))["image"][0]
    finally:
        for reader in readers.values():
            reader.close()


def _shard_records(output_dir: str, shard: str) -> Iterator[bytes]:
    """The serialized examples of a TFRecord shard file of the release, in order."""
    from pipelines.formats.tfrecord import iter_records

    with storage.open_stream(storage.join(output_dir, shard)) as stream:
        for _, data in iter_records(stream):
            yield data


def _sequential(values: Iterator[bytes], locators: Sequence) -> Callable:
    """``read(locator)`` over values that come in ``locators``' order, each read once."""
    expected = iter(locators)

    def read(locator):
        if next(expected) != locator:
            raise ValueError(f"rows read out of order at {locator}")
        return next(values)
    return read


def check_release_shards(root: str, manifest_parts: Sequence[str], listed: ChecksumTable,
                         formats: Iterable[str] = ()) -> list[str]:
    """Problems of a release's shards (:func:`check_shards` per config that has any; ``listed``: the
    table of its ``SHA256SUMS``); a file outside a config's folder and shards of a config without a
    manifest part are a problem too, and so is, when ``formats`` (``release.json``'s
    ``config.formats``) names ``webdataset``, a config with outputs but no shard. Empty: they match."""
    shard_files = list(listed.under(f"{WEBDATASET}/"))  # a few per config
    configs = sorted({p.split("/")[1] for p in shard_files if p.count("/") == 2})
    parts = {part.rsplit("/", 1)[-1][:-len(".jsonl")]: part for part in manifest_parts}
    problems = [f"{path}: not in a config's folder ({WEBDATASET}/<config>/<config>-NNNNNN.tar)" for path in shard_files
                if path.count("/") != 2]
    problems += [f"{WEBDATASET}/{config}/: shards of a config without a manifest" for config in configs
                 if config not in parts]
    if WEBDATASET in set(formats):
        problems += [f"{WEBDATASET}/{config}/: no shard listed in {CHECKSUMS}" for config, part in sorted(parts.items())
                     if config not in configs and part in listed and _has_rows(root, part)]
    for config in configs:
        if config in parts and parts[config] in listed:
            try:
                lines = storage.read_bytes(storage.join(root, parts[config])).decode("utf-8").splitlines()
            except OSError:
                continue  # reported as missing
            problems += check_shards(root, config, lines, listed)
    return problems


def _has_rows(root: str, part: str) -> bool:
    try:
        return bool(storage.read_bytes(storage.join(root, part), 0, 1))
    except OSError:
        return False  # reported as missing
