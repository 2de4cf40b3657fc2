"""docs/reference/cli.md from the parsers themselves: each command's section holds its ``--help``.

``python -m scripts.cli_reference`` rewrites the file; ``tests/docs/test_cli_reference.py`` fails
when the page and ``--help`` disagree, so the reference cannot go stale.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ["PAGE", "WIDTH", "command_help", "render", "main"]

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md"
WIDTH = "100"  # argparse wraps at $COLUMNS: fixed, so the page is the same on every terminal
_SECTION = re.compile(r"(## (?P<name>[a-z0-9-]+)\n\n```\n)(?P<body>.*?)(\n```)", re.S)


def command_help() -> dict[str, str]:
    """Each sub-command's ``--help`` text, keyed by its name, at a fixed width."""
    from scripts.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        return {name: sub.format_help().rstrip("\n") for name, sub in commands.choices.items()}
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def render(page: str, helps: dict[str, str]) -> str:
    """``page`` with the code block under every ``## <command>`` heading replaced by its help."""
    missing = sorted(set(helps) - {m["name"] for m in _SECTION.finditer(page)})
    if missing:
        raise ValueError(f"{PAGE.name} has no section for {', '.join(missing)}")
    return _SECTION.sub(lambda m: m.group(1) + helps.get(m["name"], m["body"]) + m.group(4), page)


def main() -> int:
    PAGE.write_text(render(PAGE.read_text(), command_help()))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
