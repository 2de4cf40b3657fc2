"""pipelines.bench.video: preset / size / fidelity figures on a real ImageNet-P sequence."""
from __future__ import annotations

import numpy as np
import pytest

from pipelines.bench.video import bench_sequence, format_video_table, psnr_db, run_video_bench


def test_psnr_db_of_known_errors():
    original = np.zeros((2, 4, 4, 3), np.uint8)
    assert psnr_db(original, original) == float("inf")
    assert psnr_db(original + 1, original) == pytest.approx(20 * np.log10(255))


def test_bench_reports_every_encode_of_a_real_sequence():
    result = run_video_bench(perturbations=("rotate",), presets=("ultrafast",), simd=(False, True))
    sequence = result["sequences"]["rotate"]
    assert sequence["frames"] == 31 and sequence["rate_control"] == "-crf 20"
    assert [(row["preset"], row["simd"]) for row in sequence["encodes"]] == [("ultrafast", False),
                                                                             ("ultrafast", True)]
    for row in sequence["encodes"]:
        assert row["ms"] > 0 and 0 < row["bytes"] < sequence["png_bytes"] and row["psnr_db"] > 38
    table = format_video_table(result)
    assert "| rotate (-crf 20), 31 frames | ultrafast | off |" in table and "libx264 core" in table


@pytest.mark.parametrize("call, message", [
    (lambda: run_video_bench(presets=("turbo",)), "valid presets"),
    (lambda: run_video_bench(presets=()), "valid presets"),
    (lambda: bench_sequence("blur"), "valid names: gaussian_noise"),
    (lambda: bench_sequence("rotate", photo="dog"), "valid names: chelsea"),
])
def test_bad_selection_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
