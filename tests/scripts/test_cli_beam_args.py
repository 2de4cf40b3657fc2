"""Options after ``--`` reach a sub-command as ``args.beam_args``; options after a positional stay its own."""
import pytest

import pipelines.release.package
from scripts.cli import main


def test_options_after_the_release_folder_are_the_commands_own(tmp_path, monkeypatch):
    seen = {}

    def package_release(release, output):
        seen.update(release=release, output=output)
        return []

    monkeypatch.setattr(pipelines.release.package, "package_release", package_release)
    assert main(["package", str(tmp_path / "r"), "--output", str(tmp_path / "tars"),
                 "--", "--s3_endpoint_url=http://127.0.0.1:1"]) == 0
    assert seen == {"release": str(tmp_path / "r"), "output": str(tmp_path / "tars")}


def test_a_command_without_beam_options_refuses_them(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["fetch-assets", "--", "--runner=DirectRunner"])
    assert stop.value.code == 2 and "no options after '--'" in capsys.readouterr().err
