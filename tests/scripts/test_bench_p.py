"""`imagenet-cp bench`'s ImageNet-P section: generation and encoding timed apart."""
import json

import pytest

from pipelines.bench.perturbations import run_p_bench
from scripts.cli import main


def test_bench_json_has_an_imagenet_p_section(capsys):
    assert main(["bench", "--json", "--repeats", "1", "--images", "1", "--corruptions", "contrast",
                 "--perturbations", "translate,shot_noise", "--preset", "ultrafast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["corruptions"]) == {"contrast"} and result["decode_ms"] > 0  # the ImageNet-C keys stay
    section = result["imagenet_p"]
    assert list(section["perturbations"]) == ["shot_noise", "translate"]  # table order
    for name, frames in (("shot_noise", 31), ("translate", 41)):
        timing = section["perturbations"][name]
        assert timing["frames"] == frames and timing["mp4_bytes"] > 0
        assert timing["generate_ms"] > 0 and timing["encode_ms"] > 0 and timing["lossless_ms"] > 0
        assert timing["encode_plain_c_ms"] > 0 and timing["identical_bytes"] is True  # both paths, one run
    assert section["datasets"] == 4 and (section["preset"], section["simd"], section["threads"]) == ("ultrafast", True, 1)
    parts = [t["difficulties"] * (t["generate_ms"] + t["encode_ms"] + t["lossless_ms"])
             for t in section["perturbations"].values()]
    assert section["total_ms"] == pytest.approx(section["decode_ms"] + sum(parts))
    plain = [t["difficulties"] * (t["generate_ms"] + t["encode_plain_c_ms"] + t["lossless_ms"])
             for t in section["perturbations"].values()]
    assert section["total_plain_c_ms"] == pytest.approx(section["decode_ms"] + sum(plain))
    assert section["encoder"]["libx264"]


def test_a_corruption_selection_alone_skips_imagenet_p(capsys):
    assert main(["bench", "--json", "--repeats", "1", "--images", "1", "--corruptions", "contrast"]) == 0
    assert "imagenet_p" not in json.loads(capsys.readouterr().out)


def test_bench_table_shows_both_sections(capsys):
    assert main(["bench", "--repeats", "1", "--images", "1", "--corruptions", "contrast",
                 "--perturbations", "brightness", "--preset", "ultrafast"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("perturbation"))
    row = next(line for line in lines if line.startswith("brightness"))
    assert len(row) == len(header) and "generate" in header and "encode" in header and "plain C" in header
    assert any(line.startswith("contrast") for line in lines)


def test_bench_rejects_bad_imagenet_p_options(capsys):
    assert main(["bench", "--perturbations", "rotate,fog"]) == 2
    assert "valid names" in capsys.readouterr().err
    assert main(["bench", "--corruptions", "contrast", "--perturbations", "rotate", "--preset", "turbo"]) == 2
    assert "valid presets" in capsys.readouterr().err
    with pytest.raises(ValueError, match="images"):
        run_p_bench(["rotate"], images=6)
    with pytest.raises(ValueError, match="repeats"):
        run_p_bench(["rotate"], repeats=0)
