"""Frost textures: fetched from a source, verified by SHA-256, never written when wrong."""
import shutil

import pytest

from pipelines.install.assets import fetch_frost
from schemas.assets import FROST_DIR_ENV, FROST_FILES
from transforms import assets


@pytest.fixture()
def good_dir(tmp_path):
    try:
        source = assets.find_frost_dir()
    except assets.FrostAssetError as err:
        pytest.skip(f"frost textures not installed here: {err}")
    shutil.copytree(source, tmp_path / "good")
    return tmp_path / "good"


def test_fetch_from_directory_verifies_and_copies(good_dir, tmp_path):
    dest = fetch_frost(str(good_dir), tmp_path / "dest")
    assert sorted(p.name for p in dest.iterdir()) == sorted(FROST_FILES)


def test_fetch_rejects_a_changed_texture_and_writes_nothing(good_dir, tmp_path):
    data = bytearray((good_dir / "frost4.jpg").read_bytes())
    data[100] ^= 0xFF
    (good_dir / "frost4.jpg").write_bytes(bytes(data))
    with pytest.raises(assets.FrostAssetError, match="frost4.jpg"):
        fetch_frost(str(good_dir), tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_missing_textures_say_how_to_fix(monkeypatch, tmp_path):
    monkeypatch.setenv(FROST_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(assets, "PACKAGE_FROST_DIR", tmp_path / "none")
    monkeypatch.setattr(assets, "USER_FROST_DIR", tmp_path / "none")
    with pytest.raises(assets.FrostAssetError, match="imagenet-cp fetch-assets"):
        assets.find_frost_dir()


def test_environment_variable_points_to_textures(good_dir, monkeypatch):
    monkeypatch.setenv(FROST_DIR_ENV, str(good_dir))
    assert assets.find_frost_dir() == good_dir
