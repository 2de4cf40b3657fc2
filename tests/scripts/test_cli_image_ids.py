"""``--image-ids NAME`` works from the command line for every bundled id list (not only through
``build()``): the argument check must not take a bundled name for a missing path."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.image_ids import ID_LISTS, named_id_list_bytes
from scripts.build_options import check_source_arguments

REPO = Path(__file__).resolve().parents[2]


def _args(tmp_path, image_ids):
    return argparse.Namespace(input=None, image_ids=image_ids, output=str(tmp_path / "out"), workers=None,
                              limit=None, examples_per_shard=None, seed=0)


@pytest.mark.parametrize("name", list(ID_LISTS))
def test_the_argument_check_accepts_every_bundled_name(tmp_path, name):
    check_source_arguments(_args(tmp_path, name))  # no ValueError


def test_a_missing_file_is_still_refused(tmp_path):
    with pytest.raises(ValueError, match="no such file or folder"):
        check_source_arguments(_args(tmp_path, str(tmp_path / "robustbench-5000")))
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match="not a file"):
        check_source_arguments(_args(tmp_path, str(tmp_path / "folder")))


def _input_holding(folder: Path, ids: list[str]) -> Path:
    """A validation folder whose images carry the given ``<wnid>/<file>`` ids (sample photographs)."""
    from pipelines.install.sample import write_sample

    sample = sorted(Path(write_sample(str(folder / "sample"))).rglob("*.JPEG"))
    for key, source in zip(ids, sample):
        target = folder / "val" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    return folder / "val"


@pytest.mark.beam
@pytest.mark.parametrize("name", list(ID_LISTS))
def test_build_c_with_a_bundled_name_from_the_command_line(tmp_path, name):
    ids = named_id_list_bytes(name).decode().split()
    wanted = ids[:2]
    source = _input_holding(tmp_path, wanted + ["n01440764/ILSVRC2012_val_99999999.JPEG"])
    out = tmp_path / "release"
    result = subprocess.run(
        [sys.executable, "-m", "scripts.cli", "build-c", "--image-ids", name, "--input", str(source),
         "--corruptions", "fog", "--severities", "1", "--no-clean", "--workers", "1", "--output", str(out)],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    # the input holds 2 of the list's ids: they are built, every other id is a listed failure (exit 1)
    assert result.returncode == 1 and "no such file" not in result.stderr, result.stderr
    assert f"2 images, 2 outputs in 1 configs, {len(ids) - 2} failures" in result.stdout, result.stdout
    written = sorted(str(p.relative_to(out)).split("/", 3)[-1] for p in out.rglob("*.JPEG"))
    assert written == sorted(wanted), written
