"""`imagenet-cp build-c --rng`: the random mode reaches every output and is recorded in release.json."""
import hashlib
import json

import pytest

from schemas.configs import ImageNetCConfig
from scripts.cli import main as cli
from transforms import corrupt, example_rng, preprocess

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

CONFIG = "gaussian_noise_1"


def hashes(release_dir):
    """image key -> SHA-256 of the corrupted array, from the manifest of :data:`CONFIG`."""
    with open(release_dir / "manifest" / f"{CONFIG}.jsonl") as stream:
        return {row["image_key"]: row["array_sha256"] for row in map(json.loads, stream)}


def build_c(sample_folder, output, rng):
    return cli(["build-c", "--output", str(output), "--input", str(sample_folder), "--limit", "2",
                "--corruptions", "gaussian_noise", "--severities", "1", "--workers", "1", "--rng", rng])


@pytest.fixture(scope="module")
def releases(sample_folder, tmp_path_factory):
    """Release directories of the same selection: reference, fast, and fast again."""
    root = tmp_path_factory.mktemp("rng")
    for name, rng in (("reference", "reference"), ("fast", "fast"), ("fast_again", "fast")):
        assert build_c(sample_folder, root / name, rng) == 0
    return root


def test_release_json_records_the_mode(releases):
    for name, rng in (("reference", "reference"), ("fast", "fast")):
        config = json.loads((releases / name / "release.json").read_text())["config"]
        assert config["rng"] == rng and config["corruptions"] == ["gaussian_noise"]


def test_modes_differ_and_each_reproduces(releases, sample_folder):
    reference, fast = hashes(releases / "reference"), hashes(releases / "fast")
    assert len(fast) == 2 and fast.keys() == reference.keys()
    assert all(fast[key] != reference[key] for key in fast)
    assert hashes(releases / "fast_again") == fast
    key = sorted(fast)[0]
    crop = preprocess((sample_folder / key).read_bytes())
    array = corrupt(crop, "gaussian_noise", 1, example_rng(0, key, "gaussian_noise", 1, mode="fast"))
    assert hashlib.sha256(array.tobytes()).hexdigest() == fast[key]


def test_other_mode_into_the_same_directory_is_refused(releases, sample_folder, capsys):
    assert build_c(sample_folder, releases / "fast", "reference") == 2
    assert "another config" in capsys.readouterr().err


def test_unknown_mode_is_rejected(tmp_path, capsys):
    assert cli(["build-c", "--output", str(tmp_path / "x"), "--rng", "quick"]) == 2
    assert "reference, fast" in capsys.readouterr().err
    with pytest.raises(ValueError, match="rng mode"):
        ImageNetCConfig.select(["fog"], rng="Philox")
    assert ImageNetCConfig().rng == "reference"
