"""The README's library snippet runs as written, and the names it documents behave as it says."""
import re
from pathlib import Path

import numpy as np

import transforms

README = Path(__file__).resolve().parents[2] / "README.md"


def test_library_snippet_runs(tmp_path, monkeypatch):
    from skimage import data

    text = README.read_text()
    section = text[text.index("## Library use"):]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ILSVRC2012_val_00000293.JPEG").write_bytes(transforms.encode_jpeg(data.chelsea()))
    scope: dict = {}
    exec(compile(snippet, "README.md", "exec"), scope)
    assert scope["x"].shape == (224, 224, 3) and scope["jpeg"][:2] == b"\xff\xd8"
    assert scope["frames"].shape == (31, 224, 224, 3) and scope["frames"].dtype == np.uint8


def test_documented_names():
    assert len(transforms.CORRUPTIONS) == 19 and list(transforms.CORRUPTIONS)[:2] == ["gaussian_noise", "shot_noise"]
    assert transforms.CORRUPTIONS["fog"].category == "weather"
    assert list(transforms.CORRUPTIONS) == [*transforms.BENCHMARK_CORRUPTIONS, *transforms.EXTRA_CORRUPTIONS]
    assert len(transforms.PERTURBATIONS) == 14
