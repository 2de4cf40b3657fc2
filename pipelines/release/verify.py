"""Verify a release directory against its ``SHA256SUMS``, its manifests and ``release.json``.

Every file listed is hashed again (in parallel threads: ``hashlib`` releases the GIL); files on
disk that are not listed are extra. The tree is walked without following links: a symlink, a
device, socket or fifo, or a folder that holds no listed file (an empty one included) anywhere
in the release is a problem, except the empty class folders of a subset's tree, which must be
there (:mod:`pipelines.formats.class_folders`). The three records are cross-checked:

- ``SHA256SUMS`` lists ``release.json``, ``sources.jsonl``, ``failures.jsonl``, exactly the
  manifest parts ``release.json`` names, exactly the files in the tree's folders that the
  manifests list (with the manifests' digests; a row of a stacked array at the tree's top, e.g.
  ``CIFAR-10-C/fog.npy``, names a listed file), and every shard a manifest row points to;
- ``release.json``'s counts equal the manifests' rows (per config and in all), the lines of
  ``sources.jsonl`` and ``failures.jsonl``, and the TFDS ``shardLengths`` of each config;
- its manifest digest and input checksum are recomputed from the parts and ``sources.jsonl``;
- what the loaders read is read as they read it (:mod:`pipelines.release.verify_records`): every
  TFDS record (CRCs, label, image bytes against the manifest's SHA-256) and every ImageNet-P MP4
  (decoded with OpenCV to the manifest's frame count);
- every registered format checks its own files
  (:func:`pipelines.formats.release_formats.format_problems`): the WebDataset shards hold exactly
  each manifest's samples, in order, with the tree files' bytes and the labels; the Hugging Face
  index ``imagenet-cp publish`` writes is read as ``datasets`` reads it;
- the published files (``README.md``, ``croissant.json``, the Hugging Face index) are made again
  from ``release.json`` and the manifests and compared byte for byte
  (:func:`pipelines.release.verify_publication.check_publication`).

``SHA256SUMS`` is parsed as ``sha256sum --strict -c`` parses it (:func:`parse_checksums`): lines
end in ``\n`` only, and a line holding any other line break (``\r``, ``\v``, ``\f``, ``\x1c``...,
which Python's ``splitlines`` would split on) is refused with its number.

Memory does not grow with the number of files (a whole ImageNet-C lists 4.8 million): ``SHA256SUMS``
is read as a stream into a table on disk (:class:`pipelines.formats.checksum_table.ChecksumTable`),
the walk of the tree goes into it too, missing, extra and changed files and extra and missing
folders come from SQL queries, and every check reads the listing through the table's lookups and
prefix queries, a manifest row and a batch of files to hash at a time.

A ``packages/`` folder, when present, is checked against its own ``SHA256SUMS``. The release may
lie on any file system :mod:`pipelines.formats.storage` reaches (a local disk, ``s3://``, ``gs://``); an
object store holds no links, devices or empty folders.
"""
from __future__ import annotations

import codecs
import hashlib
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

from schemas.release import (CHECKSUMS, FAILURES, MANIFEST_DIR, PACKAGES_DIR, RELEASE_JSON, SOURCES, TFDS_FORMAT, TREE_FORMAT,
                             Release)
from schemas.tfds import split_examples

from pipelines.formats import storage
from pipelines.formats.checksum_table import ChecksumTable, ListedTwice, folder_and_parents
from pipelines.formats.class_folders import listed_class_folders
from pipelines.formats.manifests import parse_manifest_line
from pipelines.formats.parts import iter_file_chunks, iter_lines
from pipelines.formats.release_document import read_release
from pipelines.formats.release_formats import format_problems
from pipelines.release.verify_publication import check_publication
from pipelines.release.verify_records import IN_FLIGHT_PER_THREAD, bounded_map, check_loaded_data, open_file

__all__ = ["CHUNK_BYTES", "LOCK_FILE", "LINE_BREAKS", "HEX", "parse_checksums", "numbered_checksums",
           "iter_checksums", "check_utf8", "read_listing", "read_checksums", "file_sha256", "FILE", "FOLDER",
           "PROBLEM", "walk_tree", "scan_tree", "relative_files", "VerifyReport", "check_files", "verify_checksums",
           "bounded_map", "IN_FLIGHT_PER_THREAD", "verify_release"]

CHUNK_BYTES = 1 << 20

LOCK_FILE = ".lock"
"""The folder lock a build or ``package`` holds, left out of the check (the value of
``pipelines.release.output_folder.LOCK_FILE``, not imported from there: it needs Beam's file systems)."""


LINE_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character but ``\\n`` that ``str.splitlines`` ends a line at: refused inside a ``SHA256SUMS`` line."""

HEX = frozenset("0123456789abcdefABCDEF")


def parse_checksums(data: bytes) -> dict[str, str]:
    """Parse a ``SHA256SUMS`` file as ``sha256sum --strict -c`` does: {relative path: hex digest}.

    Lines end in ``\\n`` (the last one may lack it) and blank lines are skipped; each other line
    is ``<64 hex digits><space><space or *><path>``. Stricter than ``sha256sum``: a line holding
    another line break (:data:`LINE_BREAKS`, a ``\\r`` before the ``\\n`` of a CRLF file
    included) is refused, so that no parser splitting lines otherwise reads other entries.

    For a small file (``packages/SHA256SUMS``); ``verify`` reads a release's into a
    :class:`~pipelines.formats.checksum_table.ChecksumTable` (:func:`read_listing`).

    Raises
    ------
    ValueError
        On the first bad line, naming its number (:class:`~pipelines.formats.checksum_table.ListedTwice`
        for a path listed a second time); first of all when the file is not UTF-8 text.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(err) from err
    entries = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        path, digest = _checksum_entry(number, line)
        if path in entries:
            raise ListedTwice(number, path)
        entries[path] = digest
    return entries


def _checksum_entry(number: int, line: str) -> tuple[str, str]:
    """``(path, lower-case hex digest)`` of line ``number`` of a ``SHA256SUMS``, checked as
    :func:`parse_checksums` checks every line."""
    breaks = sorted({repr(ch) for ch in line if ch in LINE_BREAKS})
    if breaks:
        raise ValueError(f"{CHECKSUMS} line {number} holds a line break other than \\n ({', '.join(breaks)}); "
                         f"its lines end in \\n only")
    digest, mode, path = line[:64], line[64:66], line[66:]
    if len(digest) != 64 or not set(digest) <= HEX or mode not in ("  ", " *") or not path:
        raise ValueError(f"malformed {CHECKSUMS} line {number} {line[:120]!r}: expected '<64 hex digits>  <path>'")
    return path, digest.lower()


def _raw_lines(root: str) -> Iterator[tuple[int, bytes]]:
    """``(number, bytes)`` of each non-empty line of ``root/SHA256SUMS``, read as a stream: one
    chunk of the file is in memory at a time (a full ImageNet-C lists 4.75 million files)."""
    with storage.open_stream(storage.join(root, CHECKSUMS)) as stream:
        rest, number = b"", 0
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                number += 1
                if line:
                    yield number, line
        if rest:
            yield number + 1, rest


def numbered_checksums(root: str) -> Iterator[tuple[int, str, str]]:
    """``(line number, path, digest)`` of each line of ``root/SHA256SUMS`` in file order, read as a
    stream; each line is checked as :func:`parse_checksums` checks it, but a path listed twice is
    not looked for (that needs every path at once: :meth:`ChecksumTable.fill
    <pipelines.formats.checksum_table.ChecksumTable.fill>` does it)."""
    for number, line in _raw_lines(root):
        yield (number, *_checksum_entry(number, _utf8_line(number, line)))


def iter_checksums(root: str) -> Iterator[tuple[str, str]]:
    """``(path, digest)`` of each line of ``root/SHA256SUMS`` in file order, read as a stream
    (:func:`numbered_checksums` without the line numbers)."""
    return ((path, digest) for _, path, digest in numbered_checksums(root))


def _utf8_line(number: int, line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{CHECKSUMS} line {number} is not UTF-8 text (byte {err.start} of the line)") from err


def _not_utf8(err: UnicodeDecodeError, offset: int = 0) -> ValueError:
    """The error :func:`parse_checksums` raises for a ``SHA256SUMS`` that is not UTF-8 text: the
    decoding error at byte ``offset + err.start`` of the file."""
    return ValueError(f"{CHECKSUMS} is not UTF-8 text (byte {offset + err.start})")


def check_utf8(root: str) -> None:
    """Refuse ``root/SHA256SUMS`` when it is not UTF-8 text, with :func:`parse_checksums`' message
    (the first bad byte of the file), reading it as a stream.

    Raises
    ------
    ValueError
        Naming the first byte that is not UTF-8.
    """
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    with storage.open_stream(storage.join(root, CHECKSUMS)) as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            _decode(decoder, chunk, offset)
            offset += len(chunk)
    _decode(decoder, b"", offset, final=True)


def _decode(decoder: codecs.IncrementalDecoder, chunk: bytes, offset: int, final: bool = False) -> None:
    """Decode the chunk of a file at byte ``offset``, raising :func:`_not_utf8` at its bad byte."""
    pending = len(decoder.getstate()[0])  # the first bytes of a character cut at the last chunk's end
    try:
        decoder.decode(chunk, final)
    except UnicodeDecodeError as err:
        raise _not_utf8(err, offset - pending) from err


def read_listing(root: str, report: VerifyReport) -> Optional[ChecksumTable]:
    """``root/SHA256SUMS`` in a :class:`~pipelines.formats.checksum_table.ChecksumTable` (the
    caller closes it), read as a stream and refused as :func:`parse_checksums` refuses it; None,
    the problem added to ``report``, when the file is absent or refused."""
    if not _is_file(storage.join(root, CHECKSUMS)):
        report.problems.append(f"{CHECKSUMS} not found in {root}")
        return None
    try:
        check_utf8(root)
        return ChecksumTable.of(numbered_checksums(root))
    except ValueError as err:
        report.problems.append(str(err))
        return None


def read_checksums(root: str) -> dict[str, str]:
    """:func:`parse_checksums` of ``root/SHA256SUMS``."""
    return parse_checksums(storage.read_bytes(storage.join(root, CHECKSUMS)))


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open_file(path) as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


FILE, FOLDER, PROBLEM = "file", "folder", "problem"
"""The kinds of what :func:`walk_tree` finds."""


def walk_tree(root: str, skip: tuple = ()) -> Iterator[tuple[str, str]]:
    """Walk ``root`` without following links: ``(kind, value)`` of each thing found, a relative
    ``/``-separated path of a :data:`FILE` or :data:`FOLDER` or the message of a :data:`PROBLEM`,
    leaving out ``skip`` paths (files or whole folders, relative to ``root``).

    A problem is every symlink and every entry that is neither a regular file nor a folder. Only the
    entries of one folder (and the folders still to list) are in memory at a time, except on an
    object store, where the files are listed at once and a folder comes once per file below it.
    """
    if not storage.is_local(root):  # an object store: no links, devices or empty folders
        for path in storage.list_tree(root, skip):
            yield FILE, path
            yield from ((FOLDER, folder) for folder in folder_and_parents(path))
        return
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(os.path.join(root, relative) if relative else root) as scan:
                children = list(scan)
        except OSError as err:
            yield PROBLEM, f"cannot list {relative or root}: {(err.strerror or type(err).__name__).lower()}"
            continue
        for child in children:
            path = f"{relative}/{child.name}" if relative else child.name
            if path in skip:
                continue
            mode = child.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                pending.append(path)
            yield _entry(mode, path)


def _entry(mode: int, path: str) -> tuple[str, str]:
    """What :func:`walk_tree` gives for an entry of a local folder (its mode not following links)."""
    if stat.S_ISDIR(mode):
        return FOLDER, path
    if stat.S_ISREG(mode):
        return FILE, path
    if stat.S_ISLNK(mode):
        return PROBLEM, f"symlink (a release holds no links): {path}"
    return PROBLEM, f"not a regular file (device, socket or fifo): {path}"


def scan_tree(root: str, skip: tuple = ()) -> tuple[set, set, list]:
    """:func:`walk_tree` gathered: ``(files, folders, problems)``, relative ``/``-separated paths
    (sets: for a folder of a few files; ``verify`` streams the walk into its table)."""
    files, folders, problems = set(), set(), []
    for kind, value in walk_tree(root, skip):
        if kind == PROBLEM:
            problems.append(value)
        else:
            (files if kind == FILE else folders).add(value)
    return files, folders, problems


def relative_files(root: str, skip: tuple = ()) -> set[str]:
    """Relative ``/``-separated paths of every regular file below ``root`` (links not followed),
    leaving out ``skip`` paths (files or whole folders, relative to ``root``)."""
    return scan_tree(root, skip)[0]


def _is_file(path: str) -> bool:
    """True for a regular file (local: not a link) or an object."""
    if storage.is_local(path):
        return os.path.isfile(path) and not os.path.islink(path)
    return storage.exists(path)


@dataclass
class VerifyReport:
    """Problems found in a release; empty lists mean it is intact."""

    checked: int = 0
    missing: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.problems)

    def merge(self, other: "VerifyReport", prefix: str) -> None:
        self.checked += other.checked
        for name in ("missing", "extra", "changed", "problems"):
            getattr(self, name).extend(f"{prefix}{item}" for item in getattr(other, name))

    def text(self) -> str:
        """A human-readable report, one problem a line, then a verdict."""
        lines = [f"{kind}: {item}" for kind in ("missing", "extra", "changed", "problems")
                 for item in getattr(self, kind)]
        verdict = (f"OK: {self.checked} files match" if self.ok else
                   f"FAILED: {len(self.missing)} missing, {len(self.extra)} extra, {len(self.changed)} changed, "
                   f"{len(self.problems)} other problems among {self.checked} listed files")
        return "\n".join(lines + [verdict])


def verify_checksums(root: str, skip: tuple = (), threads: Optional[int] = None,
                     empty_folders: Optional[Callable[[ChecksumTable], Iterable[str]]] = None) -> VerifyReport:
    """Compare the files below ``root`` with ``root/SHA256SUMS`` (:func:`read_listing`, then
    :func:`check_files`); ``empty_folders(listed)`` gives the folders that must be there though
    they hold no listed file."""
    report = VerifyReport()
    listed = read_listing(root, report)
    if listed is not None:
        with listed:
            check_files(root, listed, report, skip, threads, empty_folders(listed) if empty_folders else ())
    return report


def check_files(root: str, listed: ChecksumTable, report: VerifyReport, skip: tuple = (),
                threads: Optional[int] = None, empty: Iterable[str] = ()) -> None:
    """Compare the files below ``root`` with the table of its ``SHA256SUMS``, adding to ``report``.

    Paths that could point outside the release and what the walk finds odd are problems; the
    listed files the walk does not find are missing, the files it finds unlisted extra, and the
    others are hashed again (changed: another digest). ``empty``: the folders that must be there
    though they hold no listed file (the class folders a subset misses,
    :func:`pipelines.formats.class_folders.listed_class_folders`): on a local disk, one absent is
    missing; every other folder without a listed file is extra. The walk goes into the table and
    the comparison is SQL: memory does not grow with the number of files.

    Parameters
    ----------
    skip : tuple of str
        Paths left out of the walk (files or whole folders, relative to ``root``); ``SHA256SUMS``
        always is.
    threads : int, optional
        Hashing threads (default: one per core).
    """
    unsafe = listed.unsafe()
    report.problems += [f"{CHECKSUMS} lists a path outside the release: {p!r}" for p in unsafe]
    listed.add_found(_found(walk_tree(root, skip + (CHECKSUMS,)), report.problems))
    listed.expect_empty(empty)
    report.checked += len(listed) - len(unsafe)
    missing_folders = listed.missing_folders() if storage.is_local(root) else ()
    report.missing += sorted([f"{folder}/" for folder in missing_folders] + list(listed.missing()))
    report.extra += sorted([f"{folder}/" for folder in listed.extra_folders()] + list(listed.extra()))
    report.changed += _changed(root, listed.common(), threads)


def _found(walk: Iterable[tuple[str, str]], problems: list) -> Iterator[tuple[str, bool]]:
    """``(path, is a folder)`` of what a :func:`walk_tree` finds; its problems go into ``problems``."""
    for kind, value in walk:
        if kind == PROBLEM:
            problems.append(value)
        else:
            yield value, kind == FOLDER


def _changed(root: str, common: Iterable[tuple[str, str]], threads: Optional[int]) -> list[str]:
    """The paths of ``(path, listed digest)`` whose file below ``root`` has another SHA-256, in the
    order given, hashed in ``threads`` threads (default: one per core) as the pairs stream by."""
    def differs(entry: tuple[str, str]) -> Optional[str]:
        path, digest = entry
        return path if file_sha256(storage.join(root, path)) != digest else None

    workers = threads or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [path for path in bounded_map(pool, differs, common, IN_FLIGHT_PER_THREAD * workers) if path]


def _lines(root: str, relative: str):
    """The lines of a file of the release, read chunk by chunk."""
    yield from iter_lines(storage.join(root, relative))


def _check_manifests(root: str, release: Release, listed: ChecksumTable, report: VerifyReport) -> None:
    """Cross-check SHA256SUMS (``listed``: its table, looked up row by row), the manifest parts and
    release.json's counts (see the module doc)."""
    problems = report.problems
    counts = release.counts
    required = (RELEASE_JSON, SOURCES) + ((FAILURES,) if counts.failures else ())
    for name in required:
        if name not in listed:
            problems.append(f"{CHECKSUMS} does not list {name}")
    parts = list(release.manifest_parts)
    listed_parts = list(listed.under(f"{MANIFEST_DIR}/"))
    if sorted(parts) != listed_parts:
        problems.append(f"manifest parts in {RELEASE_JSON} ({len(parts)}) differ from those in {CHECKSUMS} "
                        f"({len(listed_parts)}): {', '.join(sorted(set(parts) ^ set(listed_parts))[:5])}")
    per_config = counts.outputs_per_config
    tree = release.tree
    has_tree, has_tfds = TREE_FORMAT in release.formats, TFDS_FORMAT in release.formats
    rows_total, shard_rows, files_in_folders = 0, {}, 0
    for part in parts:
        if part not in listed or not _is_file(storage.join(root, part)):
            continue  # reported as missing
        config = part.rsplit("/", 1)[-1][:-len(".jsonl")]
        rows, previous = 0, None
        for number, line in enumerate(_lines(root, part), 1):
            row = parse_manifest_line(line)
            rows += 1
            where = f"{part} line {number}"
            if previous is not None and row.key <= previous:
                problems.append(f"{where}: key {row.key!r} out of order or repeated")
            previous = row.key
            if tree is not None and not row.path.startswith(f"{tree}/"):
                problems.append(f"{where}: {row.path} is not in the {tree}/ tree")
            digest = listed.get(row.path)
            stacked = tree is not None and "/" not in row.path[len(tree) + 1:]  # a row of <tree>/<name>.npy
            if not has_tree:
                if digest is not None:
                    problems.append(f"{where}: {row.path} is listed in {CHECKSUMS}, but the release has no tree")
            elif digest is None:
                problems.append(f"{where}: {row.path} is not listed in {CHECKSUMS}")
            elif not stacked and digest != row.sha256:
                problems.append(f"{where}: the SHA-256 of {row.path} differs from {CHECKSUMS}")
            files_in_folders += has_tree and not stacked
            if row.shard is not None and not has_tfds:
                if row.shard in listed:
                    problems.append(f"{where}: shard {row.shard} is listed in {CHECKSUMS}, but the release has "
                                    "no TFDS records")
            elif row.shard is not None:
                if row.shard not in listed:
                    problems.append(f"{where}: shard {row.shard} is not listed in {CHECKSUMS}")
                shard_rows[os.path.dirname(row.shard)] = shard_rows.get(os.path.dirname(row.shard), 0) + 1
        rows_total += rows
        if per_config is not None and per_config.get(config) != rows:
            problems.append(f"{part}: {rows} records, {RELEASE_JSON} counts {per_config.get(config)}")
    extra_configs = set(per_config or {}) - {p.rsplit("/", 1)[-1][:-len(".jsonl")] for p in parts}
    if extra_configs:
        problems.append(f"{RELEASE_JSON} counts outputs of configs without a manifest: {', '.join(sorted(extra_configs))}")
    for name, value in (("counts.outputs", counts.outputs), ("manifest.records", release.manifest.records)):
        if value != rows_total:
            problems.append(f"{RELEASE_JSON} {name} is {value}, the manifests hold {rows_total} records")
    if tree is not None:  # one file per row in the tree's folders; files at its top are stacked arrays or docs
        in_tree = listed.count_under(f"{tree}/", nested=True)
        if in_tree != files_in_folders:
            problems.append(f"{CHECKSUMS} lists {in_tree} files in the {tree}/ folders, the manifests "
                            f"{files_in_folders}")
    for relative, name, expected in ((SOURCES, "input.images", release.input.images),
                                     (FAILURES, "counts.failures", counts.failures)):
        if expected is not None and relative in listed and _is_file(storage.join(root, relative)):
            lines = sum(1 for _ in _lines(root, relative))
            if expected != lines:
                problems.append(f"{relative}: {lines} records, {RELEASE_JSON} {name} is {expected}")
    images = (release.input.images, counts.images)
    if None not in images and images[0] != images[1]:
        problems.append(f"{RELEASE_JSON}: input.images is {images[0]}, counts.images {images[1]}")
    split = release.tfds.split if release.tfds else None
    for folder, rows in sorted(shard_rows.items()):
        info_path = f"{folder}/dataset_info.json"
        if info_path not in listed or not _is_file(storage.join(root, info_path)):
            problems.append(f"{info_path} is not listed in {CHECKSUMS}")
            continue
        lengths = split_examples(storage.read_bytes(storage.join(root, info_path)), split)
        if sum(lengths) != rows:
            problems.append(f"{info_path}: {sum(lengths)} examples, the manifest {rows}")


def _packed(root: str) -> dict[str, str]:
    """``packages/<tar>`` -> SHA-256 of ``packages/SHA256SUMS`` (empty when not packed or unreadable:
    the packages' own check reports that), as ``croissant.json`` lists them."""
    try:
        packed = read_checksums(storage.join(root, PACKAGES_DIR))
    except (OSError, ValueError):
        return {}
    return {f"{PACKAGES_DIR}/{name}": digest for name, digest in packed.items()}


def _check_release_json(root: str, report: VerifyReport, listed: ChecksumTable, threads: Optional[int] = None) -> None:
    """Recompute the manifest digest and the input checksum that ``release.json`` records, and
    cross-check it, the manifests and what the loaders read with ``listed`` (the table of
    ``SHA256SUMS``)."""
    try:
        release = read_release(root)
        missing = [name for name in ("manifest", "input", "counts") if getattr(release, name) is None]
        if missing:
            raise ValueError(f"it has no {', '.join(missing)}")
        digest = hashlib.sha256()
        for part in release.manifest_parts:
            for chunk in iter_file_chunks(storage.join(root, part)):
                digest.update(chunk)
        if digest.hexdigest() != release.manifest.sha256:
            report.problems.append(f"manifest digest differs from {RELEASE_JSON}")
        if file_sha256(storage.join(root, SOURCES)) != release.input.sha256:
            report.problems.append(f"{SOURCES} differs from the input checksum in {RELEASE_JSON}")
        _check_manifests(root, release, listed, report)
        report.problems += check_loaded_data(root, release, listed, threads)
        report.problems += format_problems(root, release, listed)
        report.problems += check_publication(root, release, listed, _packed(root))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        report.problems.append(f"cannot check {RELEASE_JSON}: {type(err).__name__}: {err}")


def verify_release(root: str, threads: Optional[int] = None, include_packages: bool = True) -> VerifyReport:
    """Verify a release directory (and its ``packages/`` when present).

    Parameters
    ----------
    root : str
        The release directory (local).
    threads : int, optional
        Hashing threads (default: one per core).
    include_packages : bool
        Also check ``packages/`` against its own ``SHA256SUMS`` when it exists.
    """
    local = storage.is_local(root)
    if not (os.path.isdir(root) if local else storage.is_folder(root)):
        return VerifyReport(problems=[f"{root} is not a release folder"])
    if local:
        root = os.path.realpath(root)  # the folder the user named; nothing inside it is followed
    report = VerifyReport()
    listed = read_listing(root, report)
    if listed is not None:
        with listed:  # its temporary file is deleted when the checks are done
            check_files(root, listed, report, (PACKAGES_DIR, LOCK_FILE), threads, listed_class_folders(root, listed))
            _check_release_json(root, report, listed, threads)
    if include_packages:
        packages = storage.join(root, PACKAGES_DIR)
        if local and (os.path.islink(packages) or (os.path.lexists(packages) and not os.path.isdir(packages))):
            report.problems.append(f"{PACKAGES_DIR} is not a folder (a link or a file)")
        elif os.path.isdir(packages) if local else storage.is_folder(packages):
            report.merge(verify_checksums(packages, (), threads), f"{PACKAGES_DIR}/")
    return report
