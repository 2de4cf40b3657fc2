"""The public transforms API: preprocessing, seeds, JPEG encoding and input validation."""
import io
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import transforms
from transforms.preprocess import center_crop_box, resize_short_side


@pytest.mark.parametrize("size,expected", [((500, 375), (341, 256)), ((375, 500), (256, 341)),
                                           ((256, 300), (256, 300)), ((1000, 999), (256, 256))])
def test_resize_truncates_the_long_side(size, expected):
    assert resize_short_side(Image.new("RGB", size)).size == expected


def test_center_crop_rounds_half_to_even():
    assert center_crop_box(341, 256)[:2] == (58, 16)   # round(58.5) = 58
    assert center_crop_box(343, 256)[:2] == (60, 16)   # round(59.5) = 60


@pytest.mark.parametrize("mode", ["L", "RGBA", "CMYK", "P", "RGB"])
def test_preprocess_accepts_every_mode_and_returns_rgb(mode):
    rng = np.random.RandomState(0)
    pil = Image.fromarray(rng.randint(0, 256, (300, 400, 3), dtype=np.uint8)).convert(mode)
    buf = io.BytesIO()
    pil.save(buf, format="TIFF" if mode == "CMYK" else "PNG")
    for source in (pil, buf.getvalue()):
        out = transforms.preprocess(source)
        assert out.dtype == np.uint8 and out.shape == (224, 224, 3)
    if mode == "L":
        assert (out[..., 0] == out[..., 1]).all()


def test_preprocess_rejects_garbage():
    with pytest.raises(ValueError, match="cannot decode"):
        transforms.preprocess(b"not an image")
    with pytest.raises(ValueError, match="uint8"):
        transforms.preprocess(np.zeros((10, 10, 3), np.float32))


def test_encode_jpeg_is_pillow_q85_optimize():
    x = np.random.RandomState(1).randint(0, 256, (224, 224, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(x).save(buf, format="JPEG", quality=85, optimize=True)
    assert transforms.encode_jpeg(x) == buf.getvalue()


def test_example_seed_is_stable_and_keyed():
    seed = transforms.example_seed(0, "n01440764/ILSVRC2012_val_00000293.JPEG", "fog", 3)
    assert seed == transforms.example_seed(0, "n01440764/ILSVRC2012_val_00000293.JPEG", "fog", 3)
    assert 0 <= seed < 2 ** 32
    others = {transforms.example_seed(r, k, n, s) for r in (0, 1) for k in ("a/x.JPEG", "a/y.JPEG")
              for n in ("fog", "snow") for s in (1, 2)}
    assert len(others) == 16


def test_example_seed_is_the_same_in_another_process():
    code = "import transforms; print(transforms.example_seed(7, 'n1/f.JPEG', 'frost', 5))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == transforms.example_seed(7, "n1/f.JPEG", "frost", 5)


def test_independent_streams_for_different_keys():
    a = transforms.example_rng(0, "n1/a.JPEG", "gaussian_noise", 1).standard_normal(10000)
    b = transforms.example_rng(0, "n1/b.JPEG", "gaussian_noise", 1).standard_normal(10000)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05


@pytest.mark.parametrize("kwargs,match", [
    (dict(name="gaussian"), "valid names: gaussian_noise, shot_noise"),
    (dict(severity=0), r"severity must be one of \[1, 2, 3, 4, 5\]"),
    (dict(severity=6), "severity must be one of"),
    (dict(severity=2.0), "severity must be one of"),
    (dict(image=np.zeros((224, 224, 3), np.float64)), r"uint8 array of shape \(224, 224, 3\)"),
    (dict(image=np.zeros((256, 256, 3), np.uint8)), r"uint8 array of shape \(224, 224, 3\)"),
    (dict(rng=np.random.default_rng(0)), "RandomState"),
])
def test_corrupt_rejects_bad_arguments(kwargs, match):
    args = dict(image=np.zeros((224, 224, 3), np.uint8), name="contrast", severity=1,
                rng=np.random.RandomState(0))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        transforms.corrupt(**args)


def test_same_seed_same_bytes_across_processes():
    code = ("import numpy as np, hashlib, transforms;"
            "x = np.random.RandomState(3).randint(0, 256, (224, 224, 3), dtype=np.uint8);"
            "y = transforms.corrupt(x, 'gaussian_noise', 3, np.random.RandomState(11));"
            "print(hashlib.sha256(transforms.encode_jpeg(y)).hexdigest())")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(runs) == 1


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_heap_thresholds_are_fixed_by_an_explicit_call_not_by_import():
    code = ("import transforms; from transforms import heap; before = heap._applied; "
            "print(before, transforms.retain_freed_memory(), heap._applied, transforms.retain_freed_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True", "True"]  # nothing at import; applied once, idempotent
