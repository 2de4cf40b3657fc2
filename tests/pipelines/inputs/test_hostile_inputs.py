"""Hostile inputs: every file ends as an output or a failure with a reason, whatever it is;
truncated tars and corrupt TFDS shards are refused naming the file."""
import errno
import io
import json
import os
import struct
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipelines.inputs.listing import index_source, walk_tar
from pipelines.release.verify import verify_release
from schemas.release import FAILURES, SOURCES
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

GOOD = "n01440764/ILSVRC2012_val_00000293.JPEG"


def png_of(width: int, height: int) -> bytes:
    """A real (decodable) 8-bit greyscale PNG, tiny for any size (one grey level)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def dds_unimplemented() -> bytes:
    """A DDS header with a pixel format Pillow does not implement (it raises NotImplementedError)."""
    pixel_format = struct.pack("<II4sIIIII", 32, 0x4, b"XYZW", 0, 0, 0, 0, 0)
    header = struct.pack("<IIIIIII", 124, 0x1007, 4, 4, 0, 0, 0) + b"\0" * 44 + pixel_format + b"\0" * 20
    return b"DDS " + header + b"\0" * 64


def encoded(array: np.ndarray, fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt)
    return buffer.getvalue()


def test_1x20000_png_is_rejected_before_any_resize(monkeypatch):
    import transforms
    from pipelines.inputs.listing import inspect_image

    data = png_of(1, 20_000)
    assert len(data) < 200
    calls = []
    monkeypatch.setattr(Image.Image, "resize", lambda self, *a, **k: calls.append(a))
    for decode in (inspect_image, transforms.preprocess, transforms.preprocess_uncropped):
        with pytest.raises(ValueError, match=r"^image of 1x20000 pixels: Resize\(256\) would make 256 x 5,120,000 "
                                             r"= 1,310,720,000 pixels, above the limit of 89,478,485 pixels$"):
            decode(data)
    assert calls == []
    monkeypatch.undo()
    assert transforms.preprocess(png_of(3, 3000)).shape == (224, 224, 3)  # 256 x 256,000: within the limit


def test_pixel_limit_is_checked_from_the_header_before_decoding(monkeypatch):
    import transforms
    from pipelines.inputs.listing import inspect_image
    from transforms.preprocess import MAX_PIXELS

    assert MAX_PIXELS == 89_478_485
    side = 9_460  # 9,460 x 9,460 = 89,491,600 pixels: one row above the limit; Pillow only warns
    data = png_of(side, side)
    loads = []
    monkeypatch.setattr(Image.Image, "load", lambda self: loads.append(self.size))
    for decode in (inspect_image, transforms.preprocess, transforms.preprocess_uncropped):
        with pytest.raises(ValueError, match=r"^image of 9460x9460 pixels: 89,491,600 pixels, above the limit of "
                                             r"89,478,485 pixels$"):
            decode(data)
    assert loads == []


def reference_loader(data: bytes) -> Image.Image:
    """The reference's ``pil_loader`` (torchvision ``datasets.folder``): open, convert('RGB')."""
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


def reference_resize(image: Image.Image, size: int) -> Image.Image:
    """torchvision 0.2 ``Resize(size)`` with an int: short side ``size``, long side truncated, bilinear."""
    w, h = image.size
    if (w <= h and w == size) or (h <= w and h == size):
        return image
    if w < h:
        return image.resize((size, int(size * h / w)), Image.BILINEAR)
    return image.resize((int(size * w / h), size), Image.BILINEAR)


def reference_center_crop(image: Image.Image, size: int) -> Image.Image:
    """torchvision 0.2 ``CenterCrop(size)``: offsets ``int(round((dim - size) / 2.))``."""
    w, h = image.size
    top, left = int(round((h - size) / 2.)), int(round((w - size) / 2.))
    return image.crop((left, top, left + size, top + size))


def reference_edition(image: Image.Image, edition: str) -> Image.Image:
    """Each edition's recipe as its reference driver writes it (see docs/reference/algorithms.md)."""
    w, h = image.size
    side = min(w, h)
    square = image.crop(((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side))
    if edition == "imagenet":
        return reference_center_crop(reference_resize(image, 256), 224)
    if edition == "inception":
        th, tw = int(0.875 * h), int(0.875 * w)
        top, left = int(round((h - th) / 2.)), int(round((w - tw) / 2.))
        return image.crop((left, top, left + tw, top + th)).resize((299, 299), Image.BILINEAR)
    if edition == "imagenet64":
        return image.resize((64, 64), Image.BILINEAR)
    if edition == "tinyimagenet":
        return square.resize((64, 64), Image.BILINEAR)
    assert edition == "cifar"
    return square.resize((32, 32), Image.BOX)


THIN = ((7, 300), (300, 7), (3, 3000), (1, 349), (349, 1))


@pytest.mark.parametrize("width, height", THIN)
def test_thin_images_give_the_reference_arrays(width, height):
    import transforms
    from schemas.editions import get_edition
    from transforms.views_p import edition_input

    pixels = np.random.RandomState(width * 7919 + height).randint(0, 256, (height, width, 3), dtype=np.uint8)
    data = encoded(pixels, "PNG")
    for edition in transforms.EDITIONS:
        try:
            expected = np.asarray(reference_edition(reference_loader(data), edition))
        except ValueError:  # e.g. inception's 0.875 crop of a 1-pixel side is empty: the reference fails too
            with pytest.raises(ValueError):
                transforms.preprocess(data, edition=edition)
            continue
        np.testing.assert_array_equal(transforms.preprocess(data, edition=edition), expected, err_msg=edition)
        np.testing.assert_array_equal(transforms.preprocess(Image.open(io.BytesIO(data)), edition=edition),
                                      expected, err_msg=edition)
    with Image.open(io.BytesIO(data)) as image:  # P: Resize(256) on the image as opened, then RGB
        expected_p = np.asarray(reference_resize(image, 256).convert("RGB"))
    np.testing.assert_array_equal(transforms.preprocess_uncropped(data), expected_p)
    for edition in transforms.EDITIONS:
        table = get_edition(edition).p
        if table is not None:
            assert edition_input(data, table).ndim == 3, edition  # every P edition reads it
    grey = encoded(pixels[..., 0], "PNG")  # mode L: P resizes before converting, C after
    with Image.open(io.BytesIO(grey)) as image:
        np.testing.assert_array_equal(transforms.preprocess_uncropped(grey),
                                      np.asarray(reference_resize(image, 256).convert("RGB")))
    for edition in transforms.EDITIONS:  # every edition converts to RGB first (the 64 drivers did not)
        try:
            expected = np.asarray(reference_edition(reference_loader(grey), edition))
        except ValueError:
            continue
        assert expected.ndim == 3 and expected.shape[2] == 3
        np.testing.assert_array_equal(transforms.preprocess(grey, edition=edition), expected, err_msg=edition)


def test_high_depth_greyscale_beside_the_reference_clip():
    """A deviation (docs/reference/fidelity.md): the reference's convert('RGB') clips a 16-bit image
    above 255 to white and turns a 0..1 float image black; to_8bit scales them."""
    import transforms

    ramp16 = (np.arange(300 * 300, dtype=np.int64).reshape(300, 300) * 65535 // (300 * 300 - 1)).astype(np.uint16)
    data = encoded(ramp16, "PNG")
    reference = np.asarray(reference_edition(reference_loader(data), "imagenet"))
    ours = transforms.preprocess(data)
    assert (reference == 255).mean() > 0.99  # the reference: almost all white
    expected = (ramp16.astype(np.int64) * 255 + 32767) // 65535  # ours: the ramp in 8 bits
    np.testing.assert_array_equal(ours, transforms.preprocess(Image.fromarray(expected.astype(np.uint8), "L")))
    assert ours.min() < 20 and ours.max() > 235
    ramp_f = np.linspace(0, 1, 300 * 300, dtype=np.float32).reshape(300, 300)
    data = encoded(ramp_f, "TIFF")
    assert np.asarray(reference_edition(reference_loader(data), "imagenet")).max() <= 1  # black
    ours = transforms.preprocess(data)
    assert ours.min() < 20 and ours.max() > 235


def test_16_bit_and_float_images_are_scaled_not_clipped():
    import transforms

    ramp16 = (np.arange(256 * 256, dtype=np.uint32).reshape(256, 256)).astype(np.uint16)
    out = transforms.preprocess(encoded(ramp16, "PNG"))
    assert out.min() < 20 and out.max() > 235 and len(np.unique(out)) > 100  # a ramp, not a flat white
    expected = (ramp16.astype(np.int64) * 255 + 32767) // 65535
    crop = transforms.preprocess(Image.fromarray(expected.astype(np.uint8), "L"))
    np.testing.assert_array_equal(out, crop)
    ramp_f = np.linspace(0, 1, 256 * 256, dtype=np.float32).reshape(256, 256)
    out_f = transforms.preprocess(encoded(ramp_f, "TIFF"))
    assert out_f.min() < 20 and out_f.max() > 235  # not the all-black clip of 0..1 floats
    with pytest.raises(transforms.BadInput, match="float image with values outside 0.0..1.0"):
        transforms.preprocess(encoded(ramp_f * 1000, "TIFF"))


def test_any_decoder_exception_is_a_value_error():
    import transforms
    from pipelines.inputs.listing import inspect_image

    for decode in (inspect_image, transforms.preprocess):
        with pytest.raises(ValueError, match="cannot decode image: NotImplementedError"):
            decode(dds_unimplemented())
    with pytest.raises(transforms.BadInput, match="not in any format Pillow reads") as info:  # a failure record
        transforms.preprocess(b"plain text")
    assert "0x" not in str(info.value)  # no object repr


@pytest.fixture()
def hostile_folder(tmp_path, sample_folder, monkeypatch):
    """Two good photos plus every crashing file of the issue: symlink loops, names that are not
    UTF-8, an unlistable folder, DDS data named .JPEG, a 1x20000 PNG, 16-bit and float images."""
    root = tmp_path / "val"
    good = sorted(sample_folder.glob("*/*.JPEG"))[:2]
    for path in good:
        (root / path.parent.name).mkdir(parents=True, exist_ok=True)
        (root / path.parent.name / path.name).write_bytes(path.read_bytes())
    wnid = root / "n01440764"
    wnid.mkdir(exist_ok=True)
    os.symlink("ILSVRC2012_val_00000001.JPEG", wnid / "ILSVRC2012_val_00000001.JPEG")  # self loop
    os.symlink("ILSVRC2012_val_00000003.JPEG", wnid / "ILSVRC2012_val_00000002.JPEG")  # a <-> b
    os.symlink("ILSVRC2012_val_00000002.JPEG", wnid / "ILSVRC2012_val_00000003.JPEG")
    os.mkdir(os.fsencode(root) + b"/n01443537")
    with open(os.fsencode(wnid) + b"/caf\xe9.JPEG", "wb") as stream:  # Latin-1 name
        stream.write(good[0].read_bytes())
    bad_folder = os.fsencode(root) + b"/n0\xff"
    os.mkdir(bad_folder)
    with open(bad_folder + b"/ILSVRC2012_val_00000004.JPEG", "wb") as stream:
        stream.write(good[0].read_bytes())
    locked = root / "n01484850"
    locked.mkdir()
    (locked / "ILSVRC2012_val_00000005.JPEG").write_bytes(good[0].read_bytes())
    locked.chmod(0)
    scandir = os.scandir

    def scandir_as_user(path="."):  # root may list a 000 folder: deny it as the kernel denies a user
        if isinstance(path, str) and path == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return scandir(path)
    monkeypatch.setattr(os, "scandir", scandir_as_user)
    files = {
        "n01440764/ILSVRC2012_val_00000006.JPEG": dds_unimplemented(),
        "n01440764/ILSVRC2012_val_00000007.JPEG": png_of(1, 20_000),
        "n01440764/ILSVRC2012_val_00000008.JPEG": encoded((np.arange(300 * 300).reshape(300, 300) % 65536
                                                           ).astype(np.uint16), "PNG"),
        "n01440764/ILSVRC2012_val_00000009.JPEG": encoded(np.linspace(0, 1, 300 * 300, dtype=np.float32
                                                                      ).reshape(300, 300), "TIFF"),
    }
    for relative, data in files.items():
        (root / relative).write_bytes(data)
    with open(root / "n01440764" / "ILSVRC2012_val_00000010.JPEG", "wb") as stream:  # sparse: no disk used
        stream.truncate((512 << 20) + 1)
    yield root
    locked.chmod(0o755)


HOSTILE_FAILURES = {
    "n01440764/ILSVRC2012_val_00000001.JPEG": ("list", "symlink loop"),
    "n01440764/ILSVRC2012_val_00000002.JPEG": ("list", "symlink loop"),
    "n01440764/ILSVRC2012_val_00000003.JPEG": ("list", "symlink loop"),
    "n01440764/caf\\xe9.JPEG": ("list", "not UTF-8"),
    "n0\\xff/ILSVRC2012_val_00000004.JPEG": ("list", "not UTF-8"),
    "n01484850": ("list", "cannot list this folder: permission denied"),
    "n01440764/ILSVRC2012_val_00000010.JPEG": ("list", "above the limit of 536,870,912 bytes per image"),
    "n01440764/ILSVRC2012_val_00000006.JPEG": ("decode", "NotImplementedError"),
    "n01440764/ILSVRC2012_val_00000007.JPEG": ("decode", "above the limit of 89,478,485 pixels"),
}


def test_folder_listing_records_loops_names_and_permissions(hostile_folder):
    index = index_source(str(hostile_folder))
    failures = {f.to_json()["key"]: f.to_json() for f in index.failures}
    for key, (stage, reason) in HOSTILE_FAILURES.items():
        if stage == "list":
            assert reason in failures[key]["reason"], (key, failures.get(key))
    assert len(index.entries) == 2 + 4  # the photos, DDS, the 1x20000 PNG, 16-bit and float images
    again = index_source(str(hostile_folder))
    assert [f.to_json() for f in again.failures] == [f.to_json() for f in index.failures]  # reproducible


def test_hostile_folder_builds_to_the_end(hostile_folder, tmp_path, capsys):
    output = tmp_path / "release"
    code = cli(["build-c", "--input", str(hostile_folder), "--output", str(output), "--workers", "1",
                "--corruptions", "contrast", "--severities", "1"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err, captured
    assert "failures" in captured.out, captured
    failures = {f["key"]: f for f in map(json.loads, (output / FAILURES).read_text(encoding="utf-8").splitlines())}
    assert set(failures) == set(HOSTILE_FAILURES)
    for key, (stage, reason) in HOSTILE_FAILURES.items():
        assert failures[key]["stage"] == stage and reason in failures[key]["reason"], failures[key]
    sources = {s["key"]: s for s in map(json.loads, (output / SOURCES).read_text().splitlines())}
    assert len(sources) == 4
    assert "I;16 image scaled to 8 bits" in sources["n01440764/ILSVRC2012_val_00000008.JPEG"]["note"]
    for key in ("n01440764/ILSVRC2012_val_00000008.JPEG", "n01440764/ILSVRC2012_val_00000009.JPEG"):
        out = np.asarray(Image.open(output / "ImageNet-C" / "contrast" / "1" / key))
        assert out.std() > 5, key  # a picture, not a flat clip
    assert verify_release(str(output)).ok


def test_hostile_folder_builds_imagenet_p_to_the_end(hostile_folder, tmp_path, capsys):
    output = tmp_path / "release-p"
    code = cli(["build-p", "--input", str(hostile_folder), "--output", str(output), "--workers", "1",
                "--perturbations", "brightness", "--preset", "ultrafast"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err, captured
    failures = {f["key"] for f in map(json.loads, (output / FAILURES).read_text(encoding="utf-8").splitlines())}
    assert failures == set(HOSTILE_FAILURES)
    assert len((output / SOURCES).read_text().splitlines()) == 4
    assert verify_release(str(output)).ok


# --- tars ---------------------------------------------------------------------------------------

def _tar(path: Path, sample_folder: Path, count: int = 3) -> Path:
    with tarfile.open(path, "w") as archive:
        for image in sorted(sample_folder.glob("*/*.JPEG"))[:count]:
            archive.add(image, arcname=image.name)
    return path


def test_truncated_tars_are_refused(tmp_path, sample_folder):
    whole = _tar(tmp_path / "val.tar", sample_folder).read_bytes()
    with tarfile.open(tmp_path / "val.tar") as archive:
        members = archive.getmembers()
    second_header = members[1].offset
    last_end = members[-1].offset_data + -(-members[-1].size // 512) * 512
    cuts = {"inside a member": members[1].offset_data + 100, "at a member header": second_header,
            "inside a header": second_header + 200, "after the last member": last_end,
            "inside the end marker": last_end + 512}
    for what, cut in cuts.items():
        path = tmp_path / f"cut-{cut}.tar"
        path.write_bytes(whole[:cut])
        with pytest.raises(ValueError, match=r"truncated") as info:
            list(walk_tar(str(path)))
        assert str(path) in str(info.value), what
    assert len(list(walk_tar(str(tmp_path / "val.tar")))) == 3


def test_truncated_tar_build_exits_2_with_one_line(tmp_path, sample_folder, capsys):
    whole = _tar(tmp_path / "val.tar", sample_folder).read_bytes()
    with tarfile.open(tmp_path / "val.tar") as archive:
        cut = archive.getmembers()[2].offset
    (tmp_path / "cut.tar").write_bytes(whole[:cut])
    code = cli(["build-c", "--input", str(tmp_path / "cut.tar"), "--output", str(tmp_path / "out"),
                "--corruptions", "contrast", "--severities", "1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "truncated tar" in err
    assert not (tmp_path / "out" / "release.json").exists()


def test_a_tar_named_like_the_official_one_must_be_it(tmp_path, sample_folder):
    path = _tar(tmp_path / "ILSVRC2012_img_val.tar", sample_folder)
    with pytest.raises(ValueError, match=r"but the official ILSVRC2012_img_val.tar has 6,744,924,160"):
        index_source(str(path))


# --- TFDS ---------------------------------------------------------------------------------------

def _copy_tfds(sample_tfds: Path, tmp_path: Path) -> Path:
    import shutil
    copy = tmp_path / "tfds"
    shutil.copytree(sample_tfds, copy)
    return copy


def test_corrupt_tfds_shards_name_their_file(sample_tfds, tmp_path):
    copy = _copy_tfds(sample_tfds, tmp_path)
    shard = copy / "imagenet2012" / "5.1.0" / "imagenet2012-validation.tfrecord-00001-of-00002"
    data = shard.read_bytes()
    for damaged, reason in [(data[:40] + bytes([data[40] ^ 1]) + data[41:], "corrupt TFRecord shard"),
                            (data[:len(data) - 10], "corrupt TFRecord shard"),
                            (b"", "0 records, but dataset_info.json lists")]:
        shard.write_bytes(damaged)
        with pytest.raises(ValueError, match=reason) as info:
            index_source(str(copy))
        assert str(shard) in str(info.value)
    shard.unlink()
    with pytest.raises(ValueError, match="cannot read this TFDS shard") as info:
        index_source(str(copy))
    assert str(shard) in str(info.value)


def test_zero_usable_images_exit_1_with_the_failures_and_no_release(tmp_path, capsys):
    root = tmp_path / "val" / "n01440764"
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("x")
    (root / "ILSVRC2012_val_00000001.JPEG").symlink_to("ILSVRC2012_val_00000001.JPEG")
    code = cli(["build-c", "--input", str(tmp_path / "val"), "--output", str(tmp_path / "out"),
                "--corruptions", "contrast", "--severities", "1"])
    captured = capsys.readouterr()
    assert code == 1
    assert "no usable image" in captured.err and "n01440764/notes.txt: not an image file" in captured.err
    assert "symlink loop" in captured.err
    assert not (tmp_path / "out" / "release.json").exists() and not (tmp_path / "out" / "tfds").exists()

