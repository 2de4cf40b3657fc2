"""`imagenet-cp bench` and `imagenet-cp preview`, run through the CLI on tiny selections."""
import json

import numpy as np
import pytest
from PIL import Image
from skimage import data

from pipelines.bench import corruptions as bench
from pipelines.bench import preview
from schemas.imagenet_c import select_corruptions
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


def test_bench_json_reports_draws_floors_ratios_and_both_modes(capsys):
    assert main(["bench", "--json", "--repeats", "1", "--images", "1", "--corruptions", "gaussian_noise,contrast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rng"] == "reference" and list(result["modes"]) == ["reference", "fast"]
    noise, contrast = result["corruptions"]["gaussian_noise"], result["corruptions"]["contrast"]
    assert noise["draw_ms"] > 0 and all(ms > 0 for ms in noise["draw_ms_by_severity"])
    assert contrast["draw_ms"] == 0 and contrast["draw_ms_by_severity"] == [0.0] * 5
    draws = sum(noise["draw_ms_by_severity"])
    assert result["draw_75_ms"] == pytest.approx(draws)
    assert result["floor_exact_75_ms"] == pytest.approx(result["floor_io_75_ms"] + draws)
    numpy_draws = sum(noise["draw_numpy_ms_by_severity"])
    assert numpy_draws > 0 and result["draw_numpy_75_ms"] == pytest.approx(numpy_draws)
    assert result["floor_numpy_75_ms"] == pytest.approx(result["floor_io_75_ms"] + numpy_draws)
    total = result["total_75_ms"]
    assert result["ratios"] == pytest.approx({
        "total_over_floor_io": total / result["floor_io_75_ms"],
        "total_over_floor_exact": total / result["floor_exact_75_ms"],
        "total_over_floor_numpy": total / result["floor_numpy_75_ms"],
        "reference_estimate_over_total": 9500.0 / total})
    assert result["reference_estimate"]["ms"] == 9500.0 and "quoted" in result["reference_estimate"]["source"]
    reference, fast = result["modes"]["reference"], result["modes"]["fast"]
    assert reference["total_75_ms"] == total and reference["corruptions"]["gaussian_noise"]["ms"] == noise["ms"]
    for key in ("total_75_ms", "floor_io_75_ms", "draw_75_ms", "floor_exact_75_ms", "draw_numpy_75_ms"):
        assert fast[key] > 0, key
    assert fast["corruptions"]["gaussian_noise"]["draw_ms"] > 0 == fast["corruptions"]["contrast"]["draw_ms"]
    assert fast["ratios"]["reference_estimate_over_total"] == pytest.approx(9500.0 / fast["total_75_ms"])


def test_bench_times_one_rng_mode_on_request(capsys):
    assert main(["bench", "--json", "--repeats", "1", "--images", "1", "--corruptions", "fog", "--rng", "fast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rng"] == "fast" and list(result["modes"]) == ["fast"]
    assert result["corruptions"]["fog"]["draw_ms"] > 0
    assert main(["bench", "--corruptions", "fog", "--rng", "philox"]) == 2
    assert "valid modes: reference, fast" in capsys.readouterr().err


def test_bench_table_is_aligned(capsys):
    assert main(["bench", "--repeats", "1", "--images", "1", "--corruptions", "fog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("corruption"))
    row = next(line for line in lines if line.startswith("fog"))
    assert len(row) == len(header) and "s5" in header
    assert any(line.startswith("I/O floor") for line in lines)
    assert any(line.startswith("exact floor") for line in lines)
    modes = [line.split()[0] for line in lines if line.startswith(("reference ", "fast "))]
    assert modes == ["reference", "fast"]


def test_bench_rejects_bad_options(capsys):
    assert main(["bench", "--corruptions", "fog,rain"]) == 2
    assert "valid names" in capsys.readouterr().err
    with pytest.raises(ValueError, match="images"):
        bench.run_bench(["fog"], images=0)
    with pytest.raises(ValueError, match="repeats"):
        bench.run_bench(["fog"], repeats=0)


def test_select_corruptions_follows_the_table():
    assert select_corruptions(["fog", "gaussian_noise"]) == ("gaussian_noise", "fog")
    assert len(select_corruptions()) == 19


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
