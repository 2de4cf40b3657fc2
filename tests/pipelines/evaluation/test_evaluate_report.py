"""The report: AlexNet's own errors read as 100 everywhere; every plot is a PNG."""
import numpy as np

from pipelines.evaluation.scores import imagenet_c_section, imagenet_p_section
from pipelines.evaluation.report import write_report
from schemas.baselines import ALEXNET_IMAGENET_C

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_of_alexnet_errors(tmp_path):
    config_errors = [(f"{c}_{s}", e) for c, errors in ALEXNET_IMAGENET_C.corruptions.items()
                     for s, e in zip(range(1, 6), errors)]
    document = {"model": "alexnet"}
    document["imagenet_c"], complete = imagenet_c_section(config_errors, ALEXNET_IMAGENET_C.clean,
                                                          ALEXNET_IMAGENET_C)
    frames = np.arange(31)[None, :, None] + np.arange(5)
    document["imagenet_p"], _ = imagenet_p_section([("rotate", frames), ("shot_noise_2", frames)], None)
    report = write_report(document, tmp_path).read_text()
    assert len(complete) == 19
    assert "| mCE | 100.0 |" in report and "| Relative mCE | 100.0 |" in report
    assert "| extra mCE (4 extras) | 100.0 |" in report
    assert "| fog | 67.5 | 76.0 | 84.4 | 87.3 | 94.5 | 81.9 | 100.0 | 100.0 |" in report
    assert "| rotate | 1.0000 | 1.0000 | 1.0000 | 9.0000 | 15.0000 | 18.0000 | — | — |" in report
    for name in ("error_vs_severity", "corruption_errors", "flip_probability"):
        assert (tmp_path / "plots" / f"{name}.png").read_bytes()[:8] == PNG_MAGIC
        assert f"plots/{name}.png" in report


def test_a_report_of_the_clean_config_alone_has_its_error_and_no_corruption_plot(tmp_path):
    document = {"model": "m"}
    document["imagenet_c"], _ = imagenet_c_section([("clean", 0.25)], None, ALEXNET_IMAGENET_C)
    report = write_report(document, tmp_path).read_text()
    assert "25.0" in report and "error_vs_severity" not in report
    assert not (tmp_path / "plots" / "error_vs_severity.png").exists()
