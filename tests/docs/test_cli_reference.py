"""docs/reference/cli.md holds every command's current ``--help`` (regenerate: ``python -m scripts.cli_reference``)."""
import pytest

from scripts import cli_reference


def test_the_cli_reference_is_every_commands_help():
    page = cli_reference.PAGE.read_text()
    assert cli_reference.render(page, cli_reference.command_help()) == page, \
        "docs/reference/cli.md differs from --help: run `python -m scripts.cli_reference`"


def test_a_command_without_a_section_is_refused():
    with pytest.raises(ValueError, match="no section for brand-new"):
        cli_reference.render("## bench\n\n```\nold\n```\n", {"bench": "new", "brand-new": "x"})
