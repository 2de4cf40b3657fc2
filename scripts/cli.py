"""``imagenet-cp``: one sub-command per module of ``scripts``.

Each listed module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Modules import Beam (through ``pipelines``) inside ``run`` only, after their arguments are checked.
"""
from __future__ import annotations

import argparse
import importlib
import sys

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
        command.set_defaults(run=module.run)
    return parser


def _pop_flag(argv: list, flag: str) -> bool:
    """Remove ``flag`` from ``argv`` (before any ``--``); True if it was there."""
    end = argv.index("--") if "--" in argv else len(argv)
    if flag in argv[:end]:
        argv.remove(flag)
        return True
    return False


def main(argv=None) -> int:
    """Run one sub-command. A failure prints one line on stderr (``--debug``: the traceback) and
    exits 2 for bad arguments or input, 1 for a failure of the environment (disk full, permissions)."""
    from scripts.errors import describe, quiet_libraries

    argv = list(sys.argv[1:] if argv is None else argv)
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
