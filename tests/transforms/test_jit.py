"""transforms.jit: numba's target takes the host's full vector width, and the values do not depend on it."""
import os
import subprocess
import sys
from pathlib import Path

from transforms import jit

ROOT = Path(__file__).resolve().parents[2]

#: Corruptions whose kernels are the widest loops (1025-tap and 59-tap Gaussians, the zoom sums,
#: the glass swaps, the unit conversions), digested in a child process.
_DIGEST = """
import hashlib, os, sys
import numpy as np
from transforms import corrupt, example_rng
image = np.random.RandomState(3).randint(0, 256, (224, 224, 3)).astype(np.uint8)
digest = hashlib.sha256()
for name, severity in [("elastic_transform", 1), ("elastic_transform", 2), ("zoom_blur", 5), ("glass_blur", 2),
                       ("gaussian_noise", 3), ("shot_noise", 4), ("brightness", 2)]:
    digest.update(np.ascontiguousarray(corrupt(image, name, severity, example_rng(7, "k", name, severity))).tobytes())
print(os.environ.get("NUMBA_CPU_FEATURES", "") + " " + digest.hexdigest())
"""


def _child(env_features, cache_dir) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != jit.FEATURES_VARIABLE}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    if env_features is not None:
        env[jit.FEATURES_VARIABLE] = env_features
    out = subprocess.run([sys.executable, "-c", _DIGEST], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return (out[0], out[1]) if len(out) == 2 else ("", out[0])


def test_full_width_features_turn_the_preference_off_last():
    assert jit.full_width_features("+avx2,+avx512f") == "+avx2,+avx512f,-prefer-256-bit"


def test_nothing_is_set_once_numba_is_imported_or_the_user_chose(monkeypatch):
    monkeypatch.delenv(jit.FEATURES_VARIABLE, raising=False)
    assert "numba" in sys.modules
    assert jit.prefer_full_width_vectors() is False
    assert jit.FEATURES_VARIABLE not in os.environ
    monkeypatch.setenv(jit.FEATURES_VARIABLE, "+sse2")
    monkeypatch.delitem(sys.modules, "numba")
    assert jit.prefer_full_width_vectors() is False
    assert os.environ[jit.FEATURES_VARIABLE] == "+sse2"


def test_the_vector_width_changes_no_value(tmp_path):
    """A child importing transforms sets the variable exactly on an AVX-512 host; a child with the
    host's features as LLVM tunes them (256-bit vectors there) gives the same bytes."""
    from llvmlite import binding

    host = binding.get_host_cpu_features()
    chosen, wide = _child(None, tmp_path / "wide")
    assert chosen == (jit.full_width_features(host.flatten()) if host.get("avx512f", False) else "")
    kept, narrow = _child(host.flatten(), tmp_path / "narrow")
    assert kept == host.flatten()
    assert wide == narrow and len(wide) == 64


def test_transforms_import_numba_through_jit():
    users = [path.name for path in sorted((ROOT / "transforms").glob("*.py"))
             if path.name != "jit.py" and "numba." in path.read_text()]
    assert len(users) >= 10, users
    for name in users:
        source = (ROOT / "transforms" / name).read_text()
        assert "from .jit import numba" in source and "\nimport numba" not in source, name
