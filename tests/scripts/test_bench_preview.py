"""`imagenet-cp bench` and `imagenet-cp preview`, run through the CLI on tiny selections."""
import json

import numpy as np
import pytest
from PIL import Image
from skimage import data

from pipelines import bench, preview
from scripts.cli import main
from transforms import corrupt, example_rng, preprocess

SELECTION = "contrast,fog"


def test_bench_json_has_positive_figures(capsys):
    assert main(["bench", "--json", "--repeats", "1", "--images", "1", "--corruptions", SELECTION]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["corruptions"]) == {"contrast", "fog"}
    for timing in result["corruptions"].values():
        assert timing["ms"] > 0 and len(timing["ms_by_severity"]) == 5
        assert all(ms > 0 for ms in timing["ms_by_severity"] + timing["encode_ms_by_severity"])
    for key in ("decode_ms", "encode_ms", "total_75_ms", "floor_io_75_ms"):
        assert result[key] > 0, key
    assert result["benchmark_conditions"] == 10
    assert result["floor_io_75_ms"] == pytest.approx(result["decode_ms"] + 75 * result["encode_ms"])
    assert result["total_75_ms"] > result["decode_ms"] + 10 * result["encode_ms"]
    machine = result["machine"]
    assert machine["cores"] >= 1 and machine["cpu"] and machine["libraries"]["numpy"] == np.__version__


def test_bench_table_is_aligned(capsys):
    assert main(["bench", "--repeats", "1", "--images", "1", "--corruptions", "fog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("corruption"))
    row = next(line for line in lines if line.startswith("fog"))
    assert len(row) == len(header) and "s5" in header
    assert any(line.startswith("I/O floor") for line in lines)


def test_bench_rejects_bad_options(capsys):
    assert main(["bench", "--corruptions", "fog,rain"]) == 2
    assert "valid names" in capsys.readouterr().err
    with pytest.raises(ValueError, match="images"):
        bench.run_bench(["fog"], images=0)
    with pytest.raises(ValueError, match="repeats"):
        bench.run_bench(["fog"], repeats=0)


def test_select_corruptions_follows_the_table():
    assert bench.select_corruptions(["fog", "gaussian_noise"]) == ("gaussian_noise", "fog")
    assert len(bench.select_corruptions()) == 19


def test_preview_writes_labelled_grid(tmp_path):
    source = tmp_path / "cat.jpg"
    Image.fromarray(data.chelsea()).save(source, quality=95)
    out = tmp_path / "grid.png"
    assert main(["preview", str(source), "-o", str(out), "--corruptions", SELECTION]) == 0
    sheet = np.asarray(Image.open(out).convert("RGB"))
    assert sheet.shape[:2] == (30 + 2 * 228 + 4, 200 + 6 * 228 + 4)  # header + 2 rows; labels + 6 columns
    clean = preprocess(source.read_bytes())

    def cell(row, column):
        top, left = preview.HEADER_HEIGHT + row * 228, preview.LABEL_WIDTH + column * 228
        return sheet[top:top + 224, left:left + 224]

    np.testing.assert_array_equal(cell(0, 0), clean)
    for severity in (1, 5):
        expected = corrupt(clean, "fog", severity, example_rng(0, "preview/cat.jpg", "fog", severity))
        np.testing.assert_array_equal(cell(0, severity), expected)  # fog comes first in the table
    assert (sheet[:preview.HEADER_HEIGHT, preview.LABEL_WIDTH:] < 128).any()  # column headers drawn
    assert (sheet[preview.HEADER_HEIGHT:, :preview.LABEL_WIDTH] < 128).any()  # row names drawn


def test_preview_reports_unreadable_image(tmp_path, capsys):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not an image")
    assert main(["preview", str(bad), "-o", str(tmp_path / "x.png")]) == 2
    assert "cannot decode" in capsys.readouterr().err
