"""``imagenet-cp``: one sub-command per module of ``scripts``.

Each listed module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; one
that corrupts images in this process sets ``CORRUPTS_IMAGES = True`` (the heap then keeps freed
memory for the image-sized temporaries, :func:`transforms.heap.retain_freed_memory`; elsewhere that
would only raise the peak).
Modules import Beam (through ``pipelines``) inside ``run`` only, after their arguments are checked.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

__all__ = ["COMMAND_MODULES", "build_parser", "end_process", "main"]

COMMAND_MODULES = (
    "scripts.fetch_assets",
    "scripts.bench",
    "scripts.preview",
    "scripts.metrics",
    "scripts.evaluate",
    "scripts.build_c",
    "scripts.build_p",
    "scripts.build_vcr",
    "scripts.verify",
    "scripts.package",
    "scripts.publish",
    "scripts.fetch_model",
    "scripts.filter_a",
    "scripts.filter_o",
    "scripts.package_a",
    "scripts.package_o",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="imagenet-cp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run, corrupts_images=getattr(module, "CORRUPTS_IMAGES", False))
    return parser


def _pop_flag(argv: list, flag: str) -> bool:
    """Remove ``flag`` from ``argv`` (before any ``--``); True if it was there."""
    end = argv.index("--") if "--" in argv else len(argv)
    if flag in argv[:end]:
        argv.remove(flag)
        return True
    return False


def end_process(code: int) -> NoReturn:
    """End this process with exit status ``code`` once Python's own clean-up has run.

    Native libraries a command loads keep threads of their own (pyarrow's thread pools, OpenBLAS,
    OpenCV's decoder, gRPC, TensorFlow, onnxruntime) that the interpreter's shutdown does not stop;
    one still running while the C++ static destructors run aborts the process ("terminate called
    without an active exception", status 134) after the command has printed its verdict. So the
    interpreter's clean-up runs as at a normal exit (Python threads joined, ``atexit`` handlers:
    temporary folders, worker processes, logs), the standard streams are flushed, and ``os._exit``
    ends the process before those destructors: the exit status is the command's, always.
    """
    import atexit
    import os
    import threading

    shutdown = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx runs first
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``) or a closed stream
            pass
    os._exit(code)


def main(argv=None) -> int:
    """Run one sub-command. A failure prints one line on stderr (``--debug``: the traceback) and
    exits 2 for bad arguments or input, 1 for a failure of the environment (disk full, permissions).

    Called without ``argv`` (the ``imagenet-cp`` program), it ends the process itself with the
    command's exit status (:func:`end_process`); with ``argv`` (in Python) it returns it."""
    if argv is None:
        end_process(_main(list(sys.argv[1:])))
    return _main(list(argv))


def _main(argv: list) -> int:
    from scripts.errors import describe, quiet_libraries

    debug = _pop_flag(argv, "--debug")
    quiet_libraries(verbose=debug)
    parser = build_parser()
    parser.add_argument("--debug", action="store_true",
                        help="show library log lines and the traceback of an error")
    head, beam_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(head)
    if beam_args and "beam_args" not in vars(args):
        parser.error(f"{args.command} takes no options after '--'")
    if "beam_args" in vars(args):
        args.beam_args = beam_args
    try:
        if args.corrupts_images:
            from transforms.heap import retain_freed_memory

            retain_freed_memory()  # speed only (no value changes): image-sized temporaries reuse the heap
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print(f"imagenet-cp {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # one line, not a traceback: the user acts on it or reruns with --debug
        if debug:
            raise
        code = 2 if isinstance(err, ValueError) else 1
        hint = "" if isinstance(err, (OSError, ValueError)) else " (rerun with --debug for the traceback)"
        print(f"imagenet-cp {args.command}: error: {describe(err)}{hint}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
