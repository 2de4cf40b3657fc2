"""A disk-backed table of the files a ``SHA256SUMS`` lists, so that checking a release of millions of
files holds none of their paths in memory.

A whole ImageNet-C lists 4.8 million files: a dict of them and the sets of paths compared with the
tree took about 3 GiB. :class:`ChecksumTable` keeps them in a SQLite database in a temporary file
(deleted when the table is closed; about 180 bytes of disk per file, listed and found: some 850 MB
for a whole ImageNet-C), written without a journal or syncs and read through a page cache of
:data:`CACHE_KIB`. It is filled from a stream of ``SHA256SUMS`` entries and reads like a dict of
``{path: hex digest}`` (paths in sorted order), plus the queries ``verify`` needs as SQL: the paths
under a prefix, their number, the folders that hold listed files, and the comparison with the
files and folders a walk of the tree finds (missing, extra and common files, extra and missing
folders).

Every path is kept, listed twice ones excepted (:class:`ListedTwice` is raised, as
``parse_checksums`` raises it); a path that could point outside the release (:func:`unsafe_path`)
is kept too but takes no part in the comparison with the tree.
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import ItemsView, Mapping
from typing import Iterable, Iterator, Optional

from schemas.release import CHECKSUMS

__all__ = ["BATCH_ROWS", "CACHE_KIB", "ListedTwice", "unsafe_path", "folder_and_parents", "ChecksumTable"]

BATCH_ROWS = 10_000
"""Rows written to the database at a time (a batch of entries is what a fill holds in memory)."""

CACHE_KIB = 4 << 10
"""The database's page cache, in KiB: what SQLite holds in memory however large the table."""

_SCHEMA = (
    # every listed path: its digest (32 bytes), its line in SHA256SUMS and whether it is safe
    "CREATE TABLE listed (path TEXT PRIMARY KEY, digest BLOB NOT NULL, line INTEGER NOT NULL, "
    "safe INTEGER NOT NULL) WITHOUT ROWID",
    # every folder above a safe listed path; holds: a listed file lies directly in it
    "CREATE TABLE folders (path TEXT PRIMARY KEY, holds INTEGER NOT NULL) WITHOUT ROWID",
    # what the walk of the tree finds: files and folders
    "CREATE TABLE found (path TEXT PRIMARY KEY, folder INTEGER NOT NULL) WITHOUT ROWID",
    # the folders that must be there though they hold no listed file
    "CREATE TABLE empty (path TEXT PRIMARY KEY) WITHOUT ROWID",
)


def _pragmas() -> tuple:
    """The settings of a table's database: no journal, no syncs, a cache of :data:`CACHE_KIB`, sorts
    on disk."""
    return ("PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", f"PRAGMA cache_size=-{CACHE_KIB}",
            "PRAGMA temp_store=FILE")


_FOUND_FILES = "SELECT path FROM found WHERE NOT folder"
_FOUND_FOLDERS = "SELECT path FROM found WHERE folder"
_SAFE = "SELECT path FROM listed WHERE safe"


class ListedTwice(ValueError):
    """A ``SHA256SUMS`` line that lists a path an earlier line lists."""

    def __init__(self, number: int, path: str):
        super().__init__(f"{CHECKSUMS} line {number} lists {path!r} a second time")
        self.number, self.path = number, path


def unsafe_path(path: str) -> bool:
    """True for a listed path that could point outside the release (absolute, with a backslash, or
    with an empty, ``.`` or ``..`` part)."""
    return path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in path.split("/"))


def folder_and_parents(path: str) -> Iterator[str]:
    """The folder of a ``/``-separated path and every folder above it, innermost first
    (``a/b/c.txt`` -> ``a/b``, ``a``; a path at the top has none)."""
    folder = path.rpartition("/")[0]
    while folder:
        yield folder
        folder = folder.rpartition("/")[0]


def _prefix_end(prefix: str) -> Optional[str]:
    """The smallest string above every string that starts with ``prefix`` (None: there is none).

    SQLite compares text byte by byte in UTF-8, which orders as code points do: the paths that start
    with ``prefix`` are exactly those in ``[prefix, end)``, a range the primary key answers."""
    stripped = prefix.rstrip(chr(0x10FFFF))
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    return stripped[:-1] + chr(0xE000 if 0xD800 <= following < 0xE000 else following)  # no surrogates


class _Items(ItemsView):
    """``(path, digest)`` of a :class:`ChecksumTable` in path order, read in one query."""

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from self._mapping._query("SELECT path, lower(hex(digest)) FROM listed ORDER BY path")


class ChecksumTable(Mapping):
    """The entries of a ``SHA256SUMS`` in a temporary SQLite file: a read-only mapping
    ``{path: lower-case hex digest}`` iterated in path order (module doc).

    Use it as a context manager, or call :meth:`close`: it deletes the file. Only the thread that
    made it may use it (SQLite's default).

    Parameters
    ----------
    directory : str, optional
        Where the temporary file is made (default: the system's temporary folder).
    """

    def __init__(self, directory: Optional[str] = None):
        handle, self.path = tempfile.mkstemp(prefix="checksums-", suffix=".sqlite3", dir=directory)
        os.close(handle)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            for statement in _pragmas() + _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error:
            os.remove(self.path)
            raise

    @classmethod
    def of(cls, entries: Iterable[tuple[int, str, str]], directory: Optional[str] = None) -> "ChecksumTable":
        """A table filled with ``entries`` (:meth:`fill`); closed again when they are refused.

        Raises
        ------
        ValueError
            What ``entries`` raises, or :class:`ListedTwice`.
        """
        table = cls(directory)
        try:
            table.fill(entries)
        except BaseException:
            table.close()
            raise
        return table

    # --- filling -------------------------------------------------------------------------------

    def fill(self, entries: Iterable[tuple[int, str, str]]) -> None:
        """Add ``(line number, path, lower-case hex digest)`` entries, :data:`BATCH_ROWS` at a time.

        Raises
        ------
        ListedTwice
            At the first entry whose path an earlier one has, unless ``entries`` raises first at an
            earlier line: the entries read before an error of ``entries`` are added (and checked)
            before it is raised again.
        """
        self._db.execute("BEGIN")
        try:
            for batch in _batches(entries):
                self._add(batch)
        finally:
            self._db.execute("COMMIT")

    def _add(self, batch: list) -> None:
        """Insert a batch of entries and the folders of its safe paths."""
        before = self._db.total_changes
        self._db.executemany("INSERT OR IGNORE INTO listed VALUES (?, ?, ?, ?)",
                             [(path, bytes.fromhex(digest), number, not unsafe_path(path))
                              for number, path, digest in batch])
        if self._db.total_changes - before != len(batch):
            raise self._first_twice(batch)
        self._db.executemany("INSERT INTO folders VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET holds = "
                             "max(holds, excluded.holds)", _folder_rows(path for _, path, _ in batch))

    def _first_twice(self, batch: list) -> ListedTwice:
        """The first entry of ``batch`` that was not added: its path was there before."""
        for number, path, _ in batch:
            if self._one("SELECT line FROM listed WHERE path = ?", path) != number:
                return ListedTwice(number, path)
        raise AssertionError("a batch lost an entry without a repeated path")

    def add_found(self, entries: Iterable[tuple[str, bool]]) -> None:
        """Record what a walk of the tree finds: ``(relative path, is a folder)``, each once or more."""
        self._write("INSERT OR IGNORE INTO found VALUES (?, ?)", entries)

    def expect_empty(self, folders: Iterable[str]) -> None:
        """Record folders that must be there though they hold no listed file (they are not extra,
        and :meth:`missing_folders` names those the walk did not find)."""
        self._write("INSERT OR IGNORE INTO empty VALUES (?)", ((folder,) for folder in folders))

    def _write(self, statement: str, rows: Iterable[tuple]) -> None:
        """Run ``statement`` for each row, :data:`BATCH_ROWS` rows at a time, in one transaction."""
        self._db.execute("BEGIN")
        try:
            for batch in _batches(rows):
                self._db.executemany(statement, batch)
        finally:
            self._db.execute("COMMIT")

    # --- the mapping -------------------------------------------------------------------------

    def __getitem__(self, path: str) -> str:
        digest = self._one("SELECT lower(hex(digest)) FROM listed WHERE path = ?", path)
        if digest is None:
            raise KeyError(path)
        return digest

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._one("SELECT 1 FROM listed WHERE path = ?", path) is not None

    def __iter__(self) -> Iterator[str]:
        return (path for path, in self._query("SELECT path FROM listed ORDER BY path"))

    def __len__(self) -> int:
        return self._one("SELECT count(*) FROM listed")

    def items(self) -> _Items:
        """``(path, digest)`` in path order, read in one query (not one lookup per path)."""
        return _Items(self)

    # --- prefix queries ----------------------------------------------------------------------

    def under(self, prefix: str) -> Iterator[str]:
        """The listed paths that start with ``prefix`` (e.g. ``manifest/``), in order."""
        return (path for path, in self._query(f"SELECT path FROM listed WHERE {_range(prefix)} ORDER BY path",
                                              *_bounds(prefix)))

    def count_under(self, prefix: str, nested: bool = False) -> int:
        """How many listed paths start with ``prefix``; ``nested``: only those with a ``/`` after it
        (the files in the sub-folders of the folder ``prefix`` ends with, not those directly in it)."""
        deeper = f" AND instr(substr(path, {len(prefix) + 1}), '/') > 0" if nested else ""
        return self._one(f"SELECT count(*) FROM listed WHERE {_range(prefix)}{deeper}", *_bounds(prefix))

    def folders_holding(self, prefix: str) -> Iterator[str]:
        """The folders starting with ``prefix`` that a safe listed file lies directly in, in order."""
        return (path for path, in self._query(f"SELECT path FROM folders WHERE holds AND {_range(prefix)} "
                                              "ORDER BY path", *_bounds(prefix)))

    def holds_files(self, folder: str) -> bool:
        """True when a safe listed file lies directly in ``folder``."""
        return bool(self._one("SELECT holds FROM folders WHERE path = ?", folder))

    def unsafe(self) -> list[str]:
        """The listed paths that could point outside the release (:func:`unsafe_path`), in order."""
        return [path for path, in self._query("SELECT path FROM listed WHERE NOT safe ORDER BY path")]

    # --- the listing against the tree --------------------------------------------------------

    def missing(self) -> Iterator[str]:
        """The safe listed paths that the walk did not find as files, in order."""
        return self._paths(f"{_SAFE} EXCEPT {_FOUND_FILES}")

    def extra(self) -> Iterator[str]:
        """The files the walk found that are not listed (or listed only as unsafe paths), in order."""
        return self._paths(f"{_FOUND_FILES} EXCEPT {_SAFE}")

    def extra_folders(self) -> Iterator[str]:
        """The folders the walk found that hold no listed file at any depth and are not expected
        empty (:meth:`expect_empty`), in order."""
        return self._paths(f"{_FOUND_FOLDERS} EXCEPT SELECT path FROM folders EXCEPT SELECT path FROM empty")

    def missing_folders(self) -> Iterator[str]:
        """The folders expected empty that the walk did not find, in order."""
        return self._paths(f"SELECT path FROM empty EXCEPT {_FOUND_FOLDERS}")

    def common(self) -> Iterator[tuple[str, str]]:
        """``(path, listed digest)`` of each safe listed path the walk found as a file, in path order."""
        return self._query("SELECT listed.path, lower(hex(digest)) FROM listed JOIN found USING (path) "
                           "WHERE safe AND NOT folder ORDER BY listed.path")

    # --- the file ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database and delete its file (again: nothing)."""
        if self._db is not None:
            self._db.close()
            self._db = None
            os.remove(self.path)

    def __enter__(self) -> "ChecksumTable":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def _query(self, statement: str, *parameters) -> Iterator[tuple]:
        """The rows of a query, fetched as they are read."""
        return self._db.execute(statement, parameters)

    def _one(self, statement: str, *parameters):
        """The first column of the first row of a query (None: no row)."""
        row = self._db.execute(statement, parameters).fetchone()
        return None if row is None else row[0]

    def _paths(self, compound: str) -> Iterator[str]:
        """The paths a compound ``SELECT path ...`` gives, in order."""
        return (path for path, in self._query(f"{compound} ORDER BY 1"))


def _batches(items: Iterable) -> Iterator[list]:
    """``items`` in lists of :data:`BATCH_ROWS` (the last one shorter). When ``items`` raises a
    ``ValueError``, the items read before it come first as a last batch: what a fill read before a
    line it refuses is added, and checked, before the refusal is raised again."""
    batch: list = []
    try:
        for item in items:
            batch.append(item)
            if len(batch) == BATCH_ROWS:
                yield batch
                batch = []
    except ValueError:
        yield batch
        raise
    yield batch


def _folder_rows(paths: Iterable[str]) -> Iterator[tuple[str, int]]:
    """``(folder, holds a file)`` rows of the folders above the safe ``paths``: the folder each lies
    directly in (1) and the folders above it (0), each time the folder changes from the path before
    (``SHA256SUMS`` lists a folder's files together)."""
    previous = None
    for path in paths:
        folder = path.rpartition("/")[0]
        if folder == previous or unsafe_path(path):
            continue
        previous = folder
        yield from ((parent, int(parent == folder)) for parent in folder_and_parents(path))


def _range(prefix: str) -> str:
    """The SQL condition on ``path`` for the paths starting with ``prefix`` (:func:`_bounds` binds it)."""
    return "path >= ?" + ("" if _prefix_end(prefix) is None else " AND path < ?")


def _bounds(prefix: str) -> tuple:
    end = _prefix_end(prefix)
    return (prefix,) if end is None else (prefix, end)
