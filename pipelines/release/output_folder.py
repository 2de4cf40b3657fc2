"""The output folder of a build: one build at a time, only folders the factory made, resumable.

- :class:`FolderLock`: an exclusive lock on ``DIR/.lock`` (``flock``), so that a second build or
  ``package`` into a busy folder refuses at once, naming the other build (host, pid, start time).
  The kernel drops the lock when its holder dies, so a stale lock (from a killed build) is taken
  over safely; the lock file names the holder only for the message. Worker processes take a
  shared lock on ``DIR/.parts/workers.lock``, so that a build waits for the workers of a killed
  driver to be gone before it writes.
- :func:`inspect_folder` recognises what a folder holds: nothing, a release (``release.json``),
  a build in progress (its build record ``DIR/.parts/build.json``, written when a build starts:
  edition, config and the checksum of the input listing), or something else, which a build
  refuses: it never deletes anything it did not create.
- :func:`remove_release` (``--force``) removes a release or build of this factory, by the names
  of the release layout only.

Locks are taken on local folders only (an object store has no ``flock``).
"""
from __future__ import annotations

import datetime
import errno
import fcntl
import hashlib
import json
import os
import socket
import threading
import time
from typing import Any, Iterable, Mapping, Optional

from schemas.adversarial import A_TREE, O_TREE
from schemas.editions import category_trees, release_trees
from schemas.publication import CARD
from schemas.release import (CHECKSUMS, FAILURES, MANIFEST_DIR, PACKAGES_DIR, PARTS_DIR, RELEASE_JSON, SCRATCH_DIRS,
                             SOURCES, Release, json_line)

from pipelines.formats import storage
from pipelines.formats.scratch_files import parse_lock_record
from pipelines.formats.release_document import read_release
from pipelines.formats.release_formats import format_folders

__all__ = ["LOCK_FILE", "WORKERS_LOCK", "BUILD_RECORD", "ORPHAN_WAIT_SECONDS", "LOCK_BEAT_SECONDS", "LOCK_STALE_SECONDS", "RELEASE_FILES", "release_names",
           "OutputFolderError", "FolderBusy", "FolderLock", "wait_for_orphan_workers", "WorkerLock", "listing_sha256",
           "entry_size", "inspect_folder", "write_build_record", "remove_release", "check_not_inside"]

LOCK_FILE = ".lock"
WORKERS_LOCK = f"{PARTS_DIR}/workers.lock"
BUILD_RECORD = f"{PARTS_DIR}/build.json"
"""What a build in progress is: edition, config and input listing checksum, written when it starts."""
ORPHAN_WAIT_SECONDS = 30.0
LOCK_BEAT_SECONDS = 30.0
"""How often the holder of an object-store lock rewrites it."""
LOCK_STALE_SECONDS = 300.0
"""An object-store lock not rewritten for this long is the lock of a build that is gone (taken over)."""
"""How long a build waits for the worker processes of a killed build to exit."""
RELEASE_FILES = (MANIFEST_DIR, SOURCES, FAILURES, RELEASE_JSON, CHECKSUMS, PACKAGES_DIR, CARD, *SCRATCH_DIRS)
"""The top-level names every release has beside its tree and its formats' folders (the card
``imagenet-cp publish`` writes included)."""


def release_names() -> tuple:
    """Every top-level name a build, ``package`` or ``publish`` creates in a release folder: the tree
    of every registered edition's layouts (:func:`schemas.editions.release_trees`), the VCR and A/O
    trees, :data:`RELEASE_FILES` and the folders of every registered format
    (:func:`pipelines.formats.release_formats.format_folders`), read when called."""
    return tuple(dict.fromkeys((*release_trees(), *category_trees(), A_TREE, O_TREE, *RELEASE_FILES,
                                *format_folders())))


class OutputFolderError(ValueError):
    """The output folder cannot take this build (one line, for the user)."""


class FolderBusy(OutputFolderError):
    """Another build or ``package`` holds the folder's lock."""


def _holder_text(info: Mapping[str, Any]) -> str:
    return (f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started', '?')}"
            + (f" ({info['command']})" if info.get("command") else ""))


class FolderLock:
    """Exclusive lock of an output folder (a context manager): an ``flock`` on ``FOLDER/.lock`` for a
    local folder, a lock object ``FOLDER/.lock`` written by a conditional PUT on an S3 store.

    On S3 the holder rewrites the object every :data:`LOCK_BEAT_SECONDS` (``If-Match`` its last
    ETag), and a lock object not rewritten for :data:`LOCK_STALE_SECONDS` is the lock of a build that
    is gone: it is taken over (``If-Match``, so two takers cannot both win). On another store, or an
    S3 store that refuses conditional writes, nothing is locked and :attr:`note` says so in one line.

    Parameters
    ----------
    folder : str
        The output folder (made when missing).
    command : str
        What holds the lock (``build-c``, ``package``), for the other side's message.
    create : bool
        Make the folder when it is missing (else :meth:`acquire` raises ``FileNotFoundError``).

    Raises
    ------
    FolderBusy
        From :meth:`acquire`, when another live process holds the lock.
    """

    def __init__(self, folder: str, command: str = "build", create: bool = True):
        self.folder, self.command, self._create = folder, command, create
        self._fd: Optional[int] = None
        self.took_over: Optional[dict] = None
        """The previous holder's record when the lock was left by a process that died."""
        self.note: Optional[str] = None
        """Why the folder is not locked (a store without conditional writes), else None."""
        self._object: Optional[_LockObject] = None

    def acquire(self) -> "FolderLock":
        if not storage.is_local(self.folder):
            if not storage.supports_conditional_writes(self.folder):
                self.note = (f"{self.folder} is not locked: only local folders and s3:// stores take a lock; "
                             "run one build per output folder")
                return self
            try:
                self._object = _LockObject(storage.join(self.folder, LOCK_FILE), self._record())
                self.took_over = self._object.acquire()
            except storage.ConditionalWritesUnsupported as err:
                self._object = None
                self.note = (f"{self.folder} is not locked: the store refuses conditional writes ({err}); "
                             "run one build per output folder")
            return self
        if self._create:
            os.makedirs(self.folder, exist_ok=True)
        elif not os.path.isdir(self.folder):
            raise FileNotFoundError(f"{self.folder}: no such folder")
        path = os.path.join(self.folder, LOCK_FILE)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                info = _read_info(fd)
                os.close(fd)
                raise _busy(self.folder, info) from None
            try:  # the holder before us may have removed the file after we opened it: lock the live one
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read_info(fd)
        if previous:
            self.took_over = previous
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(self._record()).encode("utf-8"))
        self._fd = fd
        return self

    def _record(self) -> dict:
        return {"host": socket.gethostname(), "pid": os.getpid(), "command": self.command,
                "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}

    def release(self) -> None:
        if self._object is not None:
            self._object.release()
            self._object = None
        if self._fd is not None:
            os.unlink(os.path.join(self.folder, LOCK_FILE))
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _busy(folder: str, info: Mapping[str, Any]) -> "FolderBusy":
    return FolderBusy(f"{folder} is in use by another build: {_holder_text(info)}; wait for it to finish or stop "
                      "it (nothing was changed)")


class _LockObject:
    """The lock object of an S3 folder: made with ``If-None-Match: *``, rewritten every
    :data:`LOCK_BEAT_SECONDS` by a daemon thread with ``If-Match``, deleted with ``If-Match``."""

    def __init__(self, path: str, record: dict):
        self.path, self.record = path, record
        self._etag: Optional[str] = None
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None

    def _body(self) -> bytes:
        return json.dumps(dict(self.record, beat=time.time())).encode("utf-8")

    def acquire(self) -> Optional[dict]:
        """Take the lock; the record of a stale holder taken over, else None."""
        took_over = None
        try:
            self._etag = storage.put_object(self.path, self._body(), if_absent=True)
        except storage.PreconditionFailed:
            try:
                data, etag = storage.get_object(self.path)
            except FileNotFoundError:  # released in between: try once more
                self._etag = storage.put_object(self.path, self._body(), if_absent=True)
            else:
                info = parse_lock_record(data)
                if time.time() - float(info.get("beat", 0)) < LOCK_STALE_SECONDS:
                    raise _busy(storage.parent(self.path), info) from None
                try:
                    self._etag = storage.put_object(self.path, self._body(), if_etag=etag)
                except storage.PreconditionFailed:  # another build took it over first
                    raise _busy(storage.parent(self.path), info) from None
                took_over = info
        self._beat = threading.Thread(target=self._keep, name="lock-beat", daemon=True)
        self._beat.start()
        return took_over

    def _keep(self) -> None:
        while not self._stop.wait(LOCK_BEAT_SECONDS):
            try:
                self._etag = storage.put_object(self.path, self._body(), if_etag=self._etag)
            except OSError:  # taken over (we looked dead) or the store is unreachable: the next beat tries again
                continue

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        try:
            storage.delete_object(self.path, if_etag=self._etag)
        except OSError:  # taken over since, or gone: not ours to delete
            pass


def _read_info(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return parse_lock_record(os.read(fd, 4096))
    except OSError:
        return {}


def wait_for_orphan_workers(folder: str, timeout: float = ORPHAN_WAIT_SECONDS) -> None:
    """Wait until no worker of an earlier (killed) build of ``folder`` holds the workers' lock.

    Raises
    ------
    FolderBusy
        If they are still running after ``timeout`` seconds.
    """
    if not storage.is_local(folder):
        return
    path = os.path.join(folder, WORKERS_LOCK)
    if not os.path.exists(path):
        return
    deadline = time.monotonic() + timeout
    with open(path, "rb") as stream:
        while True:
            try:
                fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(stream, fcntl.LOCK_UN)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise FolderBusy(f"worker processes of an earlier build of {folder} are still running after "
                                     f"{timeout:.0f} s; stop them and rerun") from None
                time.sleep(0.2)


class WorkerLock:
    """A worker's shared lock on ``DIR/.parts/workers.lock`` (see :func:`wait_for_orphan_workers`),
    held from a DoFn's ``setup`` until the process ends; a no-op for remote folders."""

    def __init__(self, folder: Optional[str]):
        self._stream = None
        if folder is None or not storage.is_local(folder):
            return
        path = os.path.join(folder, WORKERS_LOCK)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._stream = open(path, "ab")
        try:
            fcntl.flock(self._stream, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass  # a driver waiting for orphans holds it for an instant: the build goes on unprotected


def listing_sha256(entries: Iterable, failures: Iterable) -> str:
    """Checksum of an input listing: every entry's key, place and size (local files), and every
    file the listing rejected. Changes when files are added, removed, renamed or resized."""
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(json_line({"key": entry.key, "source": entry.source, "size": entry_size(entry)}).encode())
    for failure in failures:  # names that are not UTF-8 as failures.jsonl records them (escaped)
        record = failure.to_json()
        digest.update(json_line({"key": record["key"], "source": record["source"]}).encode())
    return digest.hexdigest()


def entry_size(entry) -> Optional[int]:
    """Bytes of an entry's encoded image where known without reading it (tar member, local file)."""
    loc = entry.locator
    if loc.length is not None and loc.container != "tfrecord":
        return loc.length
    if loc.container in (None, "file") and storage.is_local(loc.path):
        try:
            return os.stat(loc.path).st_size
        except OSError:
            return None
    return None


def inspect_folder(folder: str) -> tuple[str, Optional[Release]]:
    """What ``folder`` holds: ``('empty', None)``, ``('release', release.json)``,
    ``('build', build record)`` (both read as :class:`schemas.release.Release`) or ``('foreign', None)``."""
    if not storage.exists(folder):
        return "empty", None
    names = [n for n in _top_level(folder) if n != LOCK_FILE]
    if not names:
        return "empty", None
    for kind, relative in (("release", RELEASE_JSON), ("build", BUILD_RECORD)):
        path = storage.join(folder, relative)
        if storage.exists(path):
            try:
                return kind, read_release(folder, relative)
            except (OSError, ValueError):
                return "foreign", None
    return "foreign", None


def _top_level(folder: str) -> list:
    if storage.is_local(folder):
        return os.listdir(folder) if os.path.isdir(folder) else [os.path.basename(folder)]
    return [storage.basename(p.rstrip("/")) for p in storage.match(storage.join(folder, "*"))]


def write_build_record(folder: str, record: Release) -> None:
    """Write the build record (the release's identity, config and input listing) of a build in progress."""
    storage.write_atomic(folder, BUILD_RECORD, (json.dumps(record.to_json(), sort_keys=True, indent=2) + "\n").encode())


def remove_release(folder: str, keep: Iterable[str] = ()) -> None:
    """Delete every top-level name of the release layout (:func:`release_names`) but ``keep``;
    nothing else in the folder is touched."""
    for name in release_names():
        if name not in keep:
            storage.delete_tree(storage.join(folder, name))


def check_not_inside(input_path: Optional[str], output_dir: str) -> None:
    """Refuse an input that is the output folder or contains it (local paths).

    Raises
    ------
    OutputFolderError
    """
    if input_path is None or not storage.is_local(input_path) or not storage.is_local(output_dir):
        return
    source, output = os.path.realpath(input_path), os.path.realpath(output_dir)
    if output == source or output.startswith(source.rstrip(os.sep) + os.sep):
        raise OutputFolderError(f"the output {output_dir} is the input {input_path} or inside it: choose an output "
                                "folder outside the input")
