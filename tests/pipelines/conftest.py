"""Fixtures of the pipeline tests: the sample folder, a folder of bad inputs, and small builds.

Builds use two fast corruptions at two severities so that a build takes seconds. Helpers are
handed to tests as fixtures (test modules cannot import a conftest in importlib mode).
"""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipelines.beam.build import SourceSelection
from pipelines.beam.imagenet_c import build_imagenet_c
from pipelines.beam.runner import RunOptions
from schemas.release import DEFAULT_FORMATS
from schemas.configs import ImageNetCConfig
from pipelines.install.sample import write_sample
from pipelines.formats.tfrecord import encode_example, frame_record
from schemas.wnids import wnid_to_label

FAST = ImageNetCConfig.select(["gaussian_noise", "contrast"], [1, 2])


def build(output: Path, selection: SourceSelection = SourceSelection(), config=FAST, workers=2,
          examples_per_shard=None, formats=DEFAULT_FORMATS, **run):
    """Build a release quickly (progress lines off); ``run``: more :class:`RunOptions` fields."""
    return build_imagenet_c(str(output), selection, config,
                            RunOptions(**{"workers": workers, "progress_interval": 3600, **run}),
                            examples_per_shard, formats)


def png_bomb(width: int = 30_000, height: int = 30_000) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` pixels (a decompression bomb)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


def encoded(image: np.ndarray, mode: str, fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image).convert(mode).save(buffer, format=fmt)
    return buffer.getvalue()


#: relative path -> reason fragment expected in failures.jsonl, for every bad input below.
BAD_INPUTS = {
    "n01440764/ILSVRC2012_val_00000293.JPEG": "truncated",
    "n01440764/ILSVRC2012_val_00002138.JPEG": "cannot decode",          # zero bytes
    "n01440764/ILSVRC2012_val_00003014.JPEG": "cannot decode",          # text behind .JPEG
    "n01440764/README.txt": "not an image file",
    "n01484850/ILSVRC2012_val_00000200.JPEG": "decompression bomb",
    "n99999999/ILSVRC2012_val_00000001.JPEG": "not one of the 1000 ImageNet wnids",
    "misc/photo.JPEG": "not one of the 1000 ImageNet wnids",
    "holiday.JPEG": "no ground truth",
    "n02123045/ilsvrc2012_val_00001341.jpeg": "duplicate file name",
    "n01440764/ILSVRC2012_val_00005000.JPEG": "escapes the input root",
    "n01491361": "escapes the input root",
    "n01440764/sub/ILSVRC2012_val_00006000.JPEG": "nested too deep",
    ".DS_Store": "unsupported name",
}

#: Decodable inputs that are not plain RGB JPEGs: built, with a note in sources.jsonl.
ODD_INPUTS = {
    "n01443537/ILSVRC2012_val_00000236.JPEG": "PNG data behind a .jpeg name",
    "n01443537/ILSVRC2012_val_00000262.JPEG": "CMYK image converted to RGB",
}


@pytest.fixture(scope="session")
def fast_build():
    """:func:`build`: a quick release build."""
    return build


@pytest.fixture(scope="session")
def bad_inputs():
    """:data:`BAD_INPUTS` (relative path -> expected reason) and :data:`ODD_INPUTS` (-> note)."""
    return BAD_INPUTS, ODD_INPUTS


@pytest.fixture(scope="session")
def make_bomb():
    return png_bomb


@pytest.fixture(scope="session")
def make_encoded():
    return encoded


@pytest.fixture(scope="session")
def sample_folder(tmp_path_factory) -> Path:
    return Path(write_sample(str(tmp_path_factory.mktemp("sample") / "val")))


@pytest.fixture(scope="session")
def bad_input_folder(tmp_path_factory, sample_folder) -> Path:
    """The sample plus one file for each bad case of :data:`BAD_INPUTS` and :data:`ODD_INPUTS`."""
    root = tmp_path_factory.mktemp("bad")
    val = Path(write_sample(str(root / "val")))
    good = (val / "n02123045" / "ILSVRC2012_val_00001341.JPEG").read_bytes()
    photo = np.asarray(Image.open(io.BytesIO(good)).convert("RGB"))
    outside = root / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.JPEG").write_bytes(good)
    (outside / "folder" / "ILSVRC2012_val_00000100.JPEG").write_bytes(good)
    contents = {
        "n01440764/ILSVRC2012_val_00000293.JPEG": good[: len(good) // 2],
        "n01440764/ILSVRC2012_val_00002138.JPEG": b"",
        "n01440764/ILSVRC2012_val_00003014.JPEG": b"this is not an image\n",
        "n01440764/README.txt": b"notes\n",
        "n01484850/ILSVRC2012_val_00000200.JPEG": png_bomb(),
        "n99999999/ILSVRC2012_val_00000001.JPEG": good,
        "misc/photo.JPEG": good,
        "holiday.JPEG": good,
        "n02123045/ilsvrc2012_val_00001341.jpeg": good,
        "n01440764/sub/ILSVRC2012_val_00006000.JPEG": good,
        ".DS_Store": b"\0",
        "n01443537/ILSVRC2012_val_00000236.JPEG": encoded(photo, "RGB", "PNG"),
        "n01443537/ILSVRC2012_val_00000262.JPEG": encoded(photo, "CMYK", "JPEG"),
    }
    for relative, data in contents.items():
        (val / relative).parent.mkdir(parents=True, exist_ok=True)
        (val / relative).write_bytes(data)
    os.symlink(outside / "secret.JPEG", val / "n01440764" / "ILSVRC2012_val_00005000.JPEG")
    os.symlink(outside / "folder", val / "n01491361")
    return val


@pytest.fixture(scope="session")
def sample_tar(tmp_path_factory, sample_folder) -> Path:
    """The sample as a flat tar laid out like ILSVRC2012_img_val.tar (another name: that one is
    checked against the official archive), plus a member escaping the root."""
    path = tmp_path_factory.mktemp("tar") / "sample_img_val.tar"
    with tarfile.open(path, "w") as archive:
        for image in sorted(sample_folder.glob("*/*.JPEG")):
            archive.add(image, arcname=image.name)
        archive.add(next(sample_folder.glob("*/*.JPEG")), arcname="../ILSVRC2012_val_00000999.JPEG")
    return path


@pytest.fixture(scope="session")
def sample_tfds(tmp_path_factory, sample_folder) -> Path:
    """The sample as a prepared TFDS imagenet2012 validation split (2 shards) in a data_dir."""
    data_dir = tmp_path_factory.mktemp("tfds_data")
    version_dir = data_dir / "imagenet2012" / "5.1.0"
    version_dir.mkdir(parents=True)
    images = sorted(sample_folder.glob("*/*.JPEG"))
    shards = [images[::2], images[1::2]]
    for index, shard in enumerate(shards):
        records = [frame_record(encode_example({"image": p.read_bytes(), "label": wnid_to_label()[p.parent.name],
                                                "file_name": p.name})) for p in shard]
        (version_dir / f"imagenet2012-validation.tfrecord-{index:05d}-of-00002").write_bytes(b"".join(records))
    info = {"name": "imagenet2012", "version": "5.1.0", "fileFormat": "tfrecord",
            "splits": [{"name": "validation", "shardLengths": [str(len(s)) for s in shards]}]}
    (version_dir / "dataset_info.json").write_text(json.dumps(info))
    return data_dir


@pytest.fixture(scope="session")
def sample_release(tmp_path_factory):
    """(release directory, BuildResult) of the sample, fast corruptions, 2 workers."""
    output = tmp_path_factory.mktemp("release") / "sample"
    return output, build(output)


BEAM_FIXTURES = {"sample_release", "worker_pool"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that asks for a Beam build fixture is marked ``beam`` wherever it lives."""
    for item in items:
        if BEAM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.beam)


# --- a Beam worker pool, as Flink and Spark job servers use (EXTERNAL environment) -------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def worker_pool(tmp_path_factory):
    """``start(env=None) -> (port, log path)``: a worker pool
    (``python -m apache_beam.runners.worker.worker_pool_main``) whose SDK workers run this checkout
    with ``env`` added to their environment; every pool started is stopped at the end."""
    repo = Path(__file__).resolve().parents[2]
    pools = []

    def start(env=None):
        port = _free_port()
        environment = dict(os.environ, **(env or {}),
                           PYTHONPATH=os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
                           PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
        log = tmp_path_factory.mktemp("worker_pool") / "pool.log"  # a file: a pipe nobody reads would fill
        with open(log, "wb") as stream:
            pool = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                                     f"--service_port={port}"], env=environment, start_new_session=True,
                                    stdout=stream, stderr=subprocess.STDOUT)
        pools.append(pool)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("localhost", port), timeout=1).close()
                return port, log
            except OSError as err:
                if pool.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"the Beam worker pool did not start on port {port}: {err!r} "
                                f"{log.read_text(errors='replace')[-500:]}")
                time.sleep(0.2)

    yield start
    for pool in pools:
        if pool.poll() is None:
            os.killpg(pool.pid, signal.SIGTERM)  # the pool and the SDK workers it started
            pool.wait(10)
