"""`imagenet-cp bench` per edition: what each edition's build decodes, its draws and its exact floor."""
import io

import numpy as np
import pytest
from PIL import Image

from pipelines.bench.corruptions import source_jpeg
from pipelines.bench.editions import edition_source, format_editions_table, run_editions_bench
from transforms import preprocess


def test_each_edition_decodes_what_its_build_decodes():
    photo = source_jpeg("chelsea")
    assert edition_source("imagenet", photo) is photo and edition_source("imagenet64", photo) is photo
    png = Image.open(io.BytesIO(edition_source("cifar", photo)))  # a CIFAR build lists its images as PNGs
    assert png.format == "PNG" and png.size == (32, 32)
    assert np.array_equal(np.asarray(png), preprocess(photo, "cifar"))
    tiny = Image.open(io.BytesIO(edition_source("tinyimagenet", photo)))
    assert tiny.format == "JPEG" and tiny.size == (64, 64)


def test_editions_bench_reports_draws_and_the_exact_floor():
    result = run_editions_bench(["gaussian_noise", "contrast"], ["imagenet", "cifar"], images=1, repeats=1,
                                clock="cpu")
    for edition, timing in result.items():
        noise, contrast = timing["corruptions"]["gaussian_noise"], timing["corruptions"]["contrast"]
        assert noise["draw_ms"] > 0 and all(ms > 0 for ms in noise["draw_ms_by_severity"]), edition
        assert contrast["draw_ms"] == 0 and contrast["draw_ms_by_severity"] == [0.0] * 5, edition
        saves = 5 * (noise["save_ms"] + contrast["save_ms"])
        assert timing["draw_ms"] == pytest.approx(sum(noise["draw_ms_by_severity"]))
        assert timing["floor_exact_ms"] == pytest.approx(timing["decode_ms"] + saves + timing["draw_ms"])
        assert timing["total_ms"] == pytest.approx(
            timing["decode_ms"] + saves + sum(noise["ms_by_severity"]) + sum(contrast["ms_by_severity"]))
        assert timing["floor_exact_ms"] < timing["total_ms"], edition
    base, cifar = result["imagenet"], result["cifar"]
    assert cifar["source_family"] == "cifar10" and base["source_family"] == "imagenet"
    assert cifar["floor_per_pixel_over_imagenet"] == pytest.approx(
        cifar["floor_exact_ms"] / base["total_ms"] * (224 / 32) ** 2)
    assert base["floor_per_pixel_over_imagenet"] == pytest.approx(base["floor_exact_ms"] / base["total_ms"])
    lines = format_editions_table(result).splitlines()
    assert any(line.startswith("exact floor") for line in lines)
    floor_line = next(line for line in lines if line.startswith("floor per pixel / 224"))
    assert len(floor_line) == len(next(line for line in lines if line.startswith("corruption")))
