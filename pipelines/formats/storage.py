"""File access through Beam's file systems, so that inputs and releases may live on a local disk,
a shared file system or an object store (``s3://``, ``gs://``, ``azfs://``) alike.

Every write is atomic: a reader sees the whole file under its final name or nothing.

- On a local disk (and HDFS) the bytes go to ``ROOT/.tmp/<random>`` first and are renamed into
  place, so an interrupted or retried worker never leaves a half-written file under its name.
- On an object store a new object becomes visible only when its upload completes (an S3
  multipart upload, a GCS resumable upload, an Azure block-blob commit), so objects are written in
  place: a rename there is a copy plus a delete, one more transfer of every byte. A write that
  fails part-way (an exception while the bytes are produced) is deleted again.

Object-store options (``--s3_endpoint_url``, ``--s3_access_key_id``, ...) are Beam pipeline
options: :func:`configure` makes this process use those among a command's Beam arguments;
workers get them from the runner. Without them the store's SDK reads its own environment
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``~/.aws``, ...).
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import threading
import uuid
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

from apache_beam.io.filesystem import CompressionTypes, FileSystem
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, S3Options
from apache_beam.options.value_provider import RuntimeValueProvider

from schemas.records import FileInfo
from schemas.release import TMP_DIR

__all__ = ["OBJECT_STORE_SCHEMES", "configure", "join", "is_local", "is_object_store", "read_bytes", "open_atomic",
           "write_atomic", "write_new", "open_stream", "create_stream", "match", "parent", "basename", "exists",
           "delete_tree", "list_files", "list_tree", "size", "is_folder", "list_folders", "PreconditionFailed",
           "ConditionalWritesUnsupported", "supports_conditional_writes", "put_object", "get_object", "delete_object"]

_RAW = CompressionTypes.UNCOMPRESSED
_MIN_READ_BUFFER = 1 << 16

OBJECT_STORE_SCHEMES = frozenset({"s3", "gs", "azfs"})
"""Schemes whose writes are atomic by themselves (an object appears only once complete)."""


def configure(beam_args: Sequence[str] = ()) -> None:
    """Use the file-system options among ``beam_args`` (e.g. ``--s3_endpoint_url=URL``,
    ``--s3_access_key_id=KEY``) for every file access of this process (the driver; workers get the
    options from their runner)."""
    FileSystems.set_options(PipelineOptions(list(beam_args)))


def join(root: str, relative: str) -> str:
    """``root`` joined with a ``/``-separated relative path."""
    return FileSystems.join(root, *relative.split("/")) if relative else root


def is_local(path: str) -> bool:
    """True for a path on the local file system (no URL scheme)."""
    return FileSystems.get_scheme(path) is None


def is_object_store(path: str) -> bool:
    """True for a path on an object store (``s3://``, ``gs://``, ``azfs://``)."""
    return FileSystems.get_scheme(path) in OBJECT_STORE_SCHEMES


def read_bytes(path: str, offset: int = 0, length: Optional[int] = None) -> bytes:
    """The bytes of ``path``, or ``length`` bytes from ``offset`` when a length is given.

    Raises
    ------
    OSError
        If the file cannot be opened or is shorter than the requested range.
    """
    # a range of an S3 object: read ahead no more than asked (Beam's default buffer is 16 MiB, which
    # would fetch 16 MiB from a tar or TFRecord shard for every 110 kB image)
    stream = (_s3io().open(path, "rb", read_buffer_size=max(length, _MIN_READ_BUFFER))
              if length is not None and _is_s3(path) else open_stream(path))
    with stream:
        if length is None:
            return stream.read()
        stream.seek(offset)
        data = stream.read(length)
    if len(data) != length:
        raise OSError(f"{path}: expected {length} bytes at offset {offset}, got {len(data)}")
    return data


class _HashingWriter:
    """A write stream that hashes and counts what goes through it (``sha256``, ``size``)."""

    def __init__(self, stream):
        self._stream, self._digest, self.size = stream, hashlib.sha256(), 0

    def write(self, data) -> int:
        self._stream.write(data)
        self._digest.update(data)
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


@contextlib.contextmanager
def open_atomic(root: str, relative: str) -> Iterator[_HashingWriter]:
    """A write stream for a new file ``root/relative`` that appears under its name only when the
    ``with`` block ends without an exception; ``stream.sha256`` and ``stream.size`` describe the
    bytes written. On a local disk the bytes go to ``root/.tmp/`` and are renamed into place; on an
    object store they are uploaded in place (see the module docstring)."""
    destination = join(root, relative)
    if is_object_store(destination):
        stream = _ObjectWriter(destination)
        try:
            writer = _HashingWriter(stream)
            yield writer
        except BaseException:
            stream.abandon()
            raise
        stream.close()
        return
    temporary = join(root, f"{TMP_DIR}/{uuid.uuid4().hex}")
    try:
        with FileSystems.create(temporary, compression_type=_RAW) as stream:
            yield _HashingWriter(stream)
    except BaseException:
        delete_tree(temporary)
        raise
    if is_local(destination):
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        os.replace(temporary, destination)
    else:
        FileSystems.rename([temporary], [destination])


def write_atomic(root: str, relative: str, data: Union[bytes, Iterable[bytes]], group: str = "") -> FileInfo:
    """Write ``data`` (bytes, or an iterable of byte chunks) to ``root/relative`` atomically (see
    :func:`open_atomic`) and describe the file written."""
    with open_atomic(root, relative) as stream:
        for chunk in [data] if isinstance(data, (bytes, bytearray)) else data:
            stream.write(chunk)
    return FileInfo(path=relative, sha256=stream.sha256, size=stream.size, group=group)


_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def write_new(root: str, relative: str, data: bytes, group: str = "") -> FileInfo:
    """Write ``data`` to ``root/relative`` for a build whose ledger covers the file, and describe it.

    On a local disk a file that does not exist yet is created in place (``O_CREAT | O_EXCL``: one
    file created instead of a temporary one renamed into place, about half the kernel's work per
    tree file), and a file that exists already (a resumed or retried write, a symlink, anything)
    is replaced atomically by :func:`write_atomic`; elsewhere it is :func:`write_atomic`.

    Only for files that a release lists once its build is sealed, written by a worker before the
    part that records them commits (:class:`pipelines.formats.parts.PartWriter`): an interrupted
    write can leave a short file under its name, but no committed part lists it, so its image is
    built again on resume and the file replaced; until the seal, nothing looks like a release; and
    ``verify`` checks every byte against ``SHA256SUMS``. A write that raises removes its file.
    """
    if not is_local(root):
        return write_atomic(root, relative, data, group)
    destination = os.path.join(root, *relative.split("/"))
    try:
        try:
            descriptor = os.open(destination, _NEW_FILE_FLAGS, 0o666)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            descriptor = os.open(destination, _NEW_FILE_FLAGS, 0o666)
    except FileExistsError:
        return write_atomic(root, relative, data, group)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
        finally:
            os.close(descriptor)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(destination)
        raise
    return FileInfo(path=relative, sha256=hashlib.sha256(data).hexdigest(), size=len(data), group=group)


def open_stream(path: str):
    """A seekable binary stream reading ``path``."""
    if _is_s3(path):
        return _s3io().open(path, "rb")
    return FileSystems.open(path, compression_type=_RAW)


def create_stream(path: str):
    """A binary stream writing a new file at ``path`` (parent folders are made on a local disk).

    Not atomic on a local disk: only for files under a fresh, unique name that nothing reads
    before the stream is closed (scratch files such as :mod:`pipelines.formats.spill`'s)."""
    if is_object_store(path):
        return _ObjectWriter(path)
    return FileSystems.create(path, compression_type=_RAW)


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob pattern (``*`` stays inside one folder, ``**`` crosses them)."""
    return sorted(path for path, _ in _match(pattern))


def _match(pattern: str, limit: Optional[int] = None) -> list[tuple[str, int]]:
    """``(path, size)`` of (at most ``limit``) files matching a glob pattern."""
    if _is_s3(pattern):
        prefix = re.match(r"[^*?\[]*", pattern).group(0)
        regex = re.compile(FileSystem.translate_pattern(pattern))
        found = ((path, size) for path, size in _s3io().list_files(prefix) if regex.match(path))
        return list(itertools.islice(found, limit))
    return [(m.path, m.size_in_bytes) for m in FileSystems.match([pattern], [limit])[0].metadata_list]


def parent(path: str) -> str:
    return FileSystems.split(path)[0]


def basename(path: str) -> str:
    return FileSystems.split(path)[1]


def exists(path: str) -> bool:
    """True when a file or a folder is at ``path``; on an object store, where folders are only
    key prefixes, a folder exists when some object lies below it."""
    if is_local(path):
        return os.path.exists(path)
    return _exists_file(path) or bool(_match(join(path, "**"), 1))


def _exists_file(path: str) -> bool:
    return _s3io().exists(path) if _is_s3(path) else FileSystems.exists(path)


def delete_tree(path: str) -> None:
    """Delete a file or a folder with everything below it; nothing happens when it is absent."""
    if is_object_store(path) and not _exists_file(path):
        _delete([path.rstrip("/") + "/"])  # every object below the prefix (none: a no-op)
    elif _exists_file(path):
        _delete([path])


def list_files(root: str, relative_folder: str) -> list[str]:
    """Sorted relative paths of the files directly inside ``root/relative_folder``."""
    folder = join(root, relative_folder)
    if is_local(folder) and not os.path.isdir(folder):
        return []
    return sorted(f"{relative_folder}/{basename(p)}" for p in match(join(folder, "*")))


def list_tree(root: str, skip: Sequence[str] = ()) -> dict[str, int]:
    """Every file below ``root``: ``{relative '/'-separated path: size in bytes}``, sorted by path,
    leaving out the ``skip`` paths (files or whole folders, relative to ``root``).

    An object store holds no empty folders, so neither does this listing on any file system."""
    skip = tuple(skip)

    def kept(relative):
        return not any(relative == s or relative.startswith(s + "/") for s in skip)

    found = {}
    if is_local(root):
        for folder, subfolders, files in os.walk(root):
            relative = os.path.relpath(folder, root).replace(os.sep, "/")
            prefix = "" if relative == "." else relative + "/"
            subfolders[:] = sorted(d for d in subfolders if kept(prefix + d))
            for name in files:
                if kept(prefix + name):
                    found[prefix + name] = _local_size(os.path.join(folder, name))
    else:
        start = len(join(root, "x")) - 1
        for path, size in _match(join(root, "**")):
            if kept(path[start:]):
                found[path[start:]] = size
    return dict(sorted(found.items()))


def _local_size(path: str) -> int:
    """Size of a local file, following symlinks; a broken symlink's own size (so that listing a
    folder never fails: reading the file reports the problem)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return os.lstat(path).st_size


def size(path: str) -> int:
    """The size of the file ``path`` in bytes.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    """
    if is_local(path):
        return os.path.getsize(path)
    if _is_s3(path) and _exists_file(path):
        return _s3io().size(path)
    found = [length for name, length in _match(path) if name == path]
    if not found:
        raise FileNotFoundError(path)
    return found[0]


def is_folder(path: str) -> bool:
    """True when ``path`` is a folder (on an object store: a prefix with objects below it)."""
    if is_local(path):
        return os.path.isdir(path)
    return not _exists_file(path) and exists(path)


def list_folders(path: str) -> list[str]:
    """Sorted names of the folders directly inside ``path`` (none when it is not a folder)."""
    if is_local(path):
        return sorted(e.name for e in os.scandir(path) if e.is_dir()) if os.path.isdir(path) else []
    return sorted({relative.split("/", 1)[0] for relative in list_tree(path) if "/" in relative})


# --- object stores ----------------------------------------------------------------------------

class _ObjectWriter:
    """A write stream to a new object, opened on the first non-empty write.

    Beam's S3 writer cannot make an empty object (it completes a multipart upload of no parts,
    which S3 refuses as malformed), so an object that stays empty is put in one request."""

    def __init__(self, path: str):
        self._path, self._stream, self._size = path, None, 0

    def write(self, data) -> int:
        if len(data):
            if self._stream is None:
                self._stream = (_s3io().open(self._path, "wb") if _is_s3(self._path)
                                else FileSystems.create(self._path, compression_type=_RAW))
            self._stream.write(data)
            self._size += len(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        """Complete the upload (the object appears now)."""
        if self._stream is not None:
            self._stream.close()
        elif _is_s3(self._path):
            bucket, key = self._path[len("s3://"):].split("/", 1)
            _s3io().client.client.put_object(Bucket=bucket, Key=key, Body=b"")
        else:
            FileSystems.create(self._path, compression_type=_RAW).close()
        self._stream, self._path = None, None

    def abandon(self) -> None:
        """Give up the object: Beam's writers can only complete an upload, so it is completed and
        deleted at once (a killed process never completes it: nothing appears)."""
        if self._stream is not None:
            path, stream, self._stream = self._path, self._stream, None
            try:
                stream.close()
            finally:
                _delete([path])

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.close()
        else:
            self.abandon()


def _is_s3(path: str) -> bool:
    return FileSystems.get_scheme(path) == "s3"


def _delete(paths: list[str]) -> None:
    """Delete files, or every object below a prefix for a path ending in ``/``."""
    if paths and _is_s3(paths[0]):
        failed = {path: error for path, error in _s3io().delete_paths(paths).items() if error is not None}
        if failed:
            raise OSError(f"cannot delete {', '.join(sorted(failed))}: {next(iter(failed.values()))}")
    else:
        FileSystems.delete(paths)


_S3_CLIENTS = threading.local()
_S3_OPTION_NAMES = ("s3_access_key_id", "s3_secret_access_key", "s3_session_token", "s3_endpoint_url",
                    "s3_region_name", "s3_api_version", "s3_verify", "s3_disable_ssl")


def _s3io():
    """This thread's ``S3IO``, made once per set of S3 options.

    Beam's S3 file system makes a new boto3 client for every call (about 90 ms of CPU each, 40
    times what writing a 30 kB object costs); a release writes millions of objects."""
    from apache_beam.io.aws import s3io

    options = FileSystems._pipeline_options or RuntimeValueProvider.runtime_options
    if getattr(_S3_CLIENTS, "options", False) is options:  # reading the options parses them again: 0.6 ms
        return _S3_CLIENTS.io
    view = (options if isinstance(options, PipelineOptions)
            else PipelineOptions.from_dictionary(dict(options or {}))).view_as(S3Options)
    key = tuple(str(getattr(view, name)) for name in _S3_OPTION_NAMES)
    if getattr(_S3_CLIENTS, "key", None) != key:
        _S3_CLIENTS.io, _S3_CLIENTS.key = s3io.S3IO(options=view), key
    _S3_CLIENTS.options = options
    return _S3_CLIENTS.io


# --- conditional writes (the object-store lock) -------------------------------------------------

class PreconditionFailed(OSError):
    """A conditional write or delete found the object other than it expected (there, absent, or
    changed since)."""


class ConditionalWritesUnsupported(OSError):
    """The store refuses the conditions of a conditional write (``If-None-Match``, ``If-Match``)."""


def supports_conditional_writes(path: str) -> bool:
    """True for the stores :func:`put_object` can write conditionally (``s3://``)."""
    return _is_s3(path)


def _bucket_key(path: str) -> tuple[str, str]:
    bucket, _, key = path[len("s3://"):].partition("/")
    return bucket, key


def _s3_call(path: str, call: Callable[[Any], Any]):
    """``call(boto3 client)``, its errors as :class:`PreconditionFailed`, :class:`ConditionalWritesUnsupported`,
    ``FileNotFoundError`` or ``OSError``."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call(_s3io().client.client)
    except ClientError as err:
        code = str(err.response.get("Error", {}).get("Code", ""))
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
            raise PreconditionFailed(f"{path}: {code or status}") from None
        if code in ("NoSuchKey", "404") or status == 404:
            raise FileNotFoundError(f"{path}: no such object") from None
        if code in ("NotImplemented", "InvalidArgument", "InvalidRequest") or status == 501:
            raise ConditionalWritesUnsupported(f"{path}: {code or status}") from None
        raise OSError(f"{path}: {code or status}: {err}") from None
    except BotoCoreError as err:
        raise OSError(f"{path}: {err}") from None


def put_object(path: str, data: bytes, if_absent: bool = False, if_etag: Optional[str] = None) -> str:
    """Write the object ``path`` (``s3://``) in one PUT, only if it is absent (``if_absent``,
    ``If-None-Match: *``) or still has the ETag ``if_etag`` (``If-Match``); returns its new ETag.

    Raises
    ------
    PreconditionFailed
        When the condition does not hold.
    ConditionalWritesUnsupported
        When the store refuses the condition.
    """
    bucket, key = _bucket_key(path)
    conditions = {"IfNoneMatch": "*"} if if_absent else {"IfMatch": if_etag} if if_etag else {}
    return _s3_call(path, lambda client: client.put_object(Bucket=bucket, Key=key, Body=data, **conditions))["ETag"]


def get_object(path: str) -> tuple[bytes, str]:
    """The bytes and ETag of the object ``path`` (``s3://``); ``FileNotFoundError`` when absent."""
    bucket, key = _bucket_key(path)
    response = _s3_call(path, lambda client: client.get_object(Bucket=bucket, Key=key))
    return response["Body"].read(), response["ETag"]


def delete_object(path: str, if_etag: Optional[str] = None) -> None:
    """Delete the object ``path`` (``s3://``), only if it still has the ETag ``if_etag`` when given."""
    bucket, key = _bucket_key(path)
    conditions = {"IfMatch": if_etag} if if_etag else {}
    _s3_call(path, lambda client: client.delete_object(Bucket=bucket, Key=key, **conditions))
