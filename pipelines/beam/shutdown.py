"""How a local build stops: on SIGINT/SIGTERM, a dead worker, or a full disk, with one line.

:func:`stopping_cleanly` wraps the run of a local pipeline. SIGINT and SIGTERM stop the worker
processes at once (the local runner would wait for them to notice that the driver went away) and
end the build with :class:`BuildInterrupted` (exit status 130 or 143). A pipeline error is
translated: a worker process that died becomes :class:`BuildStopped` ("a worker process died"),
a full disk :class:`BuildStopped` naming the folder and the space still needed. Every case leaves
the folder resumable: rerunning the same command finishes the missing work.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import signal
import threading
import time
from typing import Callable, Optional

__all__ = ["RESUME_HINT", "STALL_SECONDS", "WORKER_MODULE", "DISK_FULL_MARKERS", "WORKER_DIED_MARKERS",
           "BuildInterrupted", "BuildStopped", "worker_pids", "stop_workers", "explain_failure", "BEAM_LOGGERS",
           "BEAM_THREADS", "stopping_cleanly", "wait_watched"]

RESUME_HINT = "rerun the same command to resume"
STALL_SECONDS = 1800.0
"""How long a job run elsewhere may go without committing anything before the driver stops it
(:func:`wait_watched`): longer than a runner's own timeouts for a lost worker (Beam's gRPC
channels give up a silent peer after 20 + 300 s), far longer than the 120 s within which a
working worker commits a part (:data:`pipelines.formats.parts.PART_SECONDS`), and than one
config's merge of its tables."""
WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"
DISK_FULL_MARKERS = ("No space left on device", f"[Errno {errno.ENOSPC}]")
WORKER_DIED_MARKERS = ("Channel closed prematurely", "Worker subprocess exited", "StatusCode.UNAVAILABLE",
                       "Socket closed", "failed to connect to all addresses")


class BuildInterrupted(Exception):
    """SIGINT or SIGTERM stopped the build; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted; {RESUME_HINT}")
        self.exit_code = 128 + signum


class BuildStopped(Exception):
    """The build could not go on (a worker died, the disk is full): one line, and resumable."""

    exit_code = 3


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    return children


def worker_pids(pid: Optional[int] = None) -> list[int]:
    """The local runner's worker processes below ``pid`` (default: this process), and their
    ``/bin/sh`` launchers (Linux; empty elsewhere)."""
    if not os.path.isdir("/proc"):
        return []
    children, found = _children(), []
    todo = list(children.get(pid or os.getpid(), []))
    while todo:
        child = todo.pop()
        todo.extend(children.get(child, []))
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                if WORKER_MODULE.encode() in cmdline.read():
                    found.append(child)
        except OSError:
            continue
    return found


def stop_workers(grace: float = 2.0) -> None:
    """SIGTERM the local worker processes, then SIGKILL the ones still there after ``grace`` s."""
    pids = worker_pids()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.05)
        if not pids:
            return


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _message(err: BaseException) -> str:
    """``'Type: message'`` of ``err`` and of each exception it came from, each once (a worker's
    failure can come back through Beam's threads as a chain that loops)."""
    texts, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        texts.append(f"{type(err).__name__}: {err}")
        err = err.__cause__ or err.__context__
    return " ".join(texts)


def explain_failure(err: BaseException, folder: str, space_needed: Callable[[], int]) -> Optional[BuildStopped]:
    """A :class:`BuildStopped` for a pipeline error that a user can act on, else None."""
    text = _message(err)
    if (isinstance(err, OSError) and err.errno == errno.ENOSPC) or any(m in text for m in DISK_FULL_MARKERS):
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            free = 0
        need = max(0, space_needed() - free)
        needed = f" and the build needs about {max(1, round(need / 2**20))} MiB more" if need else ""
        return BuildStopped(f"disk full: {folder} has {free / 2**20:.0f} MiB free{needed}; free space, then "
                            f"{RESUME_HINT}")
    if any(m in text for m in WORKER_DIED_MARKERS):
        return BuildStopped(f"a worker process died (killed, or out of memory); {RESUME_HINT}")
    return None


BEAM_LOGGERS = ("apache_beam.runners.worker.data_plane", "apache_beam.runners.portability.local_job_service", "apache_beam.runners.portability.fn_api_runner.worker_handlers",
                "apache_beam.runners.portability.fn_api_runner.fn_runner")
"""Loggers of the local runner whose errors, when a worker or the driver stops, repeat as tracebacks
what the build reports in one line."""
BEAM_THREADS = ("run_worker", "beam_control_read", "read_state", "read_grpc_client_inputs")
"""Threads of the local runner whose errors repeat, as tracebacks, what the build reports in one line."""


def _quiet_beam_threads(fallback):
    def hook(args):
        if not args.thread or not args.thread.name.startswith(BEAM_THREADS):
            fallback(args)
    return hook


@contextlib.contextmanager
def stopping_cleanly(folder: str, space_needed: Callable[[], int] = lambda: 0, signals: bool = True):
    """Run a local pipeline inside this: see the module documentation. ``signals=False``: only
    translate errors (for the driver's own work around a pipeline).

    Raises
    ------
    BuildInterrupted
        On SIGINT or SIGTERM (the workers are stopped first).
    BuildStopped
        When a worker died or the disk is full.
    """
    installed = {}
    quiet_hook, previous_hook = _quiet_beam_threads(threading.excepthook), threading.excepthook

    def handler(signum, frame):
        stop_workers()
        raise BuildInterrupted(signum)

    threading.excepthook = quiet_hook
    loggers = [logging.getLogger(name) for name in BEAM_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)

    if signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            installed[sig] = signal.signal(sig, handler)
    try:
        yield
    except (BuildInterrupted, BuildStopped):
        raise
    except KeyboardInterrupt:
        stop_workers()
        raise BuildInterrupted(signal.SIGINT) from None
    except Exception as err:
        if signals:
            stop_workers()
        stopped = explain_failure(err, folder, space_needed)
        if stopped is None:
            raise
        raise stopped from err
    finally:
        for sig, previous in installed.items():
            signal.signal(sig, previous)
        threading.excepthook = previous_hook
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def wait_watched(result, committed: Callable[[], int], stall_seconds: float = STALL_SECONDS,
                 poll: float = 10.0) -> None:
    """Wait for a job run elsewhere (``result.wait_until_finish()``), stopping it when its
    committed work stops growing.

    A runner does not always notice a worker that is gone: Beam's job service waits for ever for
    a worker host that dropped off the network. Every ``poll`` seconds ``committed()`` (what the
    job has committed so far, a count that grows while it works; an error reading it counts as no
    change) is read; when it has not changed for ``stall_seconds`` (0: never), the job is asked to
    cancel and the wait ends.

    Raises
    ------
    BuildStopped
        When the job stalled (one line; the committed parts stay, so a rerun resumes).
    Exception
        Whatever ``wait_until_finish`` raised.
    """
    finished, failure = threading.Event(), []

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as err:  # handed to the caller's thread
            failure.append(err)
        finally:
            finished.set()

    threading.Thread(target=wait, name="wait-until-finish", daemon=True).start()

    def count(previous: Optional[int]) -> Optional[int]:
        try:
            return committed()
        except Exception:  # the store cannot say now: no change
            return previous

    last, since = count(None), time.monotonic()
    while not finished.wait(poll):
        now = count(last)
        if now != last:
            last, since = now, time.monotonic()
        elif stall_seconds and time.monotonic() - since >= stall_seconds:
            canceller = threading.Thread(target=_cancel, args=(result,), name="cancel-job", daemon=True)
            canceller.start()
            canceller.join(poll)  # a job service that does not answer is not waited for
            raise BuildStopped(f"no part was committed for {stall_seconds / 60:g} min (a worker lost with its "
                               f"host or its network, which the runner did not notice); the job was told to cancel; "
                               f"{RESUME_HINT}")
    if failure:
        raise failure[0]


def _cancel(result) -> None:
    with contextlib.suppress(Exception):  # a runner that cannot cancel: the driver stops all the same
        result.cancel()
