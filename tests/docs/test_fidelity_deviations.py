"""docs/reference/fidelity.md lists every deliberate deviation with the tests that pin it: each test
it names exists (a renamed or removed test fails here, not silently in the doc)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIDELITY = ROOT / "docs" / "reference" / "fidelity.md"


def _deviations() -> str:
    text = FIDELITY.read_text(encoding="utf-8")
    start = text.index("### Deliberate deviations and reference quirks kept")
    return text[start:text.index("Library versions are pinned", start)]


def named_tests(text: str) -> list[tuple[str, str]]:
    """``(test file, test name or '')`` of each `tests/...py[::name]` and `::name` (of the file
    named last) in ``text``."""
    found, current = [], None
    for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", text):
        if path:
            current = path
        if path or name:
            found.append((current, name))
    return found


def test_every_deviation_names_a_test_and_each_exists():
    section = _deviations()
    entries = [e for e in re.split(r"\n- ", section)[1:]]
    assert len(entries) >= 10
    for entry in entries:
        if entry.startswith("The bundled sample") or entry.startswith("**Dataset names"):
            continue  # choices of names, no output differs
        assert "tests/" in entry, f"a deviation without a test: {entry[:80]!r}"
    for path, name in named_tests(section):
        assert path is not None and (ROOT / path).is_file(), path
        if name:
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), f"{path}::{name}"


def test_the_high_depth_scaling_and_the_pixel_limit_are_listed():
    section = _deviations()
    for words in ("High-depth greyscale is scaled, not clipped", "Pixel limit", "ImageNet-P Gaussian noise",
                  "H.264 bytes", "89,478,485"):
        assert words in section, words
