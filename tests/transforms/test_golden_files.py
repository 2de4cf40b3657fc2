"""The committed golden hash files (tests/golden/) are what tests/golden/derive.py makes from
the maintainers' reference set: a check of the files themselves, run where that set is present."""
import importlib.util
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _derive():
    spec = importlib.util.spec_from_file_location("golden_derive", GOLDEN / "derive.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["reference_c_dev.json", "reference_p_dev.json"])
def test_golden_file_is_derived_from_the_shared_reference(name, reference_dir):
    if not (reference_dir / name).exists():
        pytest.skip(f"{reference_dir} not found: the golden files cannot be re-derived here")
    derive = _derive()
    assert (GOLDEN / name).read_text() == derive.text(derive.DERIVED[name](reference_dir))


def test_golden_files_hold_no_arrays():
    for path in GOLDEN.glob("*.json"):
        assert path.stat().st_size < 200_000, path
