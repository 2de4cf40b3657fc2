"""``imagenet-cp``: one sub-command per module of ``scripts``.

Each listed module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
