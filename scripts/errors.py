"""One clear line for every failure a user can cause, and quiet libraries at the default verbosity.

:func:`describe` turns an exception (an ``OSError`` such as a full disk, a ``ValueError`` from a
check, or the ``RuntimeError`` in which Beam wraps a worker's exception) into one line a person
can act on; :func:`quiet_libraries` silences Beam's and TensorFlow's own log lines before they
are imported. Nothing here imports Beam.
"""
from __future__ import annotations

import errno
import logging
import os
import re

__all__ = ["OS_ERRORS", "QUIET_LOGGERS", "describe_os_error", "describe", "JOB_SERVICE_DEADLINE_HINT",
           "quiet_libraries", "WorkerStderr"]

#: errno -> what the user should know about it.
OS_ERRORS = {
    errno.ENOSPC: "disk full (no space left on device)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOENT: "no such file or folder",
    errno.EISDIR: "is a folder, not a file",
    errno.ENOTDIR: "not a folder",
    errno.EMFILE: "too many open files",
}

_WRAPPED_OS_ERROR = re.compile(r"(?:\w+Error): \[Errno (\d+)\] [^:\n]*(?:: '([^'\n]*)')?")
_WHILE_RUNNING = re.compile(r"\s*\[while running '[^\]]*'\]\s*$")
_WRAPPED_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$", re.MULTILINE)

QUIET_LOGGERS = ("apache_beam", "absl", "tensorflow", "h5py", "numba", "urllib3", "botocore", "grpc")
"""Loggers kept at ERROR at the default verbosity (their INFO and WARNING lines are not the user's)."""


def describe_os_error(err: OSError) -> str:
    """``'disk full (no space left on device): /out/x.tfrecord'``-style text of an OSError."""
    what = OS_ERRORS.get(err.errno, (err.strerror or type(err).__name__).lower())
    where = err.filename if err.filename is not None else ""
    return f"{what}: {os.fsdecode(where)}" if where else what


def describe(err: BaseException) -> str:
    """One line about ``err``: no traceback, no object reprs.

    A Beam ``RuntimeError`` that carries a worker's traceback as text is reduced to the worker's
    own exception (its errno meaning for an OSError).
    """
    if isinstance(err, ValueError) and str(err).strip() and "Traceback" not in str(err):
        return str(err).strip().splitlines()[0]  # our own checks say what is wrong
    rpc = _rpc_status(err)
    if rpc is not None:
        return rpc
    for cause in _chain(err):
        if isinstance(cause, OSError) and cause.errno is not None:
            return describe_os_error(cause)
    text = str(err)
    match = _WRAPPED_OS_ERROR.search(text)
    if match:
        code, where = int(match.group(1)), match.group(2)
        what = OS_ERRORS.get(code, os.strerror(code).lower())
        return f"{what}: {where}" if where else what
    if "Traceback" in text or len(text.splitlines()) > 1:
        found = _WRAPPED_ERROR.findall(text)
        if found:
            kind, message = found[-1]
            return f"{kind}: {_WHILE_RUNNING.sub('', message).strip()}"
    first = text.strip().splitlines()[0] if text.strip() else type(err).__name__
    return first if isinstance(err, ValueError) else f"{type(err).__name__}: {first}"


JOB_SERVICE_DEADLINE_HINT = ("the driver stops waiting for a job service after --job_server_timeout seconds "
                             "(Beam's default: 300), however long the job runs; give a larger one, e.g. "
                             "--job_server_timeout=86400")
"""What a gRPC ``DEADLINE_EXCEEDED`` from a job service means (Beam's ``PortableRunner`` opens the
job's state and message streams with ``--job_server_timeout`` as their deadline)."""


def _rpc_status(err: BaseException):
    """``'gRPC DEADLINE_EXCEEDED: ...'`` for a gRPC error (its status, not its multi-line repr), else None."""
    for cause in _chain(err):
        code, details = getattr(cause, "code", None), getattr(cause, "details", None)
        if callable(code) and callable(details) and type(cause).__module__.startswith("grpc"):
            try:
                name = getattr(code(), "name", str(code()))
                text = " ".join(str(details() or "").split())
            except Exception:  # a gRPC error without a status yet
                continue
            hint = f" ({JOB_SERVICE_DEADLINE_HINT})" if name == "DEADLINE_EXCEEDED" else ""
            return f"gRPC {name}: {text}{hint}"
    return None


def _chain(err: BaseException):
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def quiet_libraries(verbose: bool = False) -> None:
    """Silence Beam's and TensorFlow's log noise (``apitools not found``, worker start-up lines,
    TensorFlow's C++ banner) unless ``verbose``. Call before they are imported."""
    if verbose:
        logging.basicConfig(level=logging.INFO)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    root = logging.getLogger()
    if not root.handlers:  # a root handler stops logging.warning() from adding a stderr one
        handler = logging.StreamHandler()
        handler.setLevel(logging.ERROR)
        root.addHandler(handler)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def _log_thread_exception(args) -> None:
    """``threading.excepthook`` writing to file descriptor 2 (the log file of :class:`WorkerStderr`)."""
    import sys
    import traceback

    if args.exc_type is SystemExit:
        return
    print(f"Exception in thread {args.thread.name if args.thread else '?'}:", file=sys.__stderr__)
    traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback, file=sys.__stderr__)
    sys.__stderr__.flush()


class WorkerStderr:
    """While open, processes started from here (Beam's SDK workers) write their stderr to a log
    file; this process keeps writing to the terminal through :attr:`terminal`.

    Local SDK workers print start-up lines (``apitools not found``, ``Logging handler created``)
    before any of our code runs in them; they go to ``path`` instead, which is named in the error
    line when the build fails and removed when it succeeds.
    """

    def __init__(self, path: str):
        self.path = path
        self.terminal = None
        self._saved = None

    def __enter__(self) -> "WorkerStderr":
        import sys

        sys.stderr.flush()
        self._saved = os.dup(2)
        log = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 2)
        os.close(log)
        self.terminal = os.fdopen(os.dup(self._saved), "w", buffering=1)
        self._stderr, sys.stderr = sys.stderr, self.terminal
        import threading

        # a library thread that dies (Beam's reader of a job service's messages) leaves its traceback
        # in the log, not on the terminal: the command's own error line says what happened
        self._excepthook, threading.excepthook = threading.excepthook, _log_thread_exception
        return self

    def __exit__(self, kind, value, traceback) -> None:
        import sys

        import threading

        threading.excepthook = self._excepthook
        sys.stderr = self._stderr
        self.terminal.close()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        if kind is None and os.path.exists(self.path):
            os.remove(self.path)
