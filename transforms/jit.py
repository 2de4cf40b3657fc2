"""numba, imported with the host's full vector width: the one import of numba in :mod:`transforms`.

LLVM tunes its code for the Intel CPUs with AVX-512 (Skylake-SP to Emerald Rapids) to prefer
256-bit vectors, and numba compiles for the host as LLVM tunes it. The wide loops of the
corruptions (the 1025-tap Gaussians of ``elastic_transform``, the blurs, the unit conversions) run
about 10-20 % faster with 512-bit vectors on such a CPU (docs/dev/performance.md). Before numba is
first imported, :func:`prefer_full_width_vectors` therefore gives numba the host's own CPU features
with that preference turned off (``NUMBA_CPU_FEATURES``, the setting numba documents for its target).

The values do not change: no kernel of :mod:`transforms` is compiled with ``fastmath``, so LLVM
keeps every floating-point operation and its order, whatever the vector width. Nothing is set
when the CPU has no AVX-512, when the user has set ``NUMBA_CPU_FEATURES``, or when numba was
imported before (numba reads its target once). The variable is inherited by child processes, as
a build's workers are.
"""
from __future__ import annotations

import os
import sys

__all__ = ["FEATURES_VARIABLE", "full_width_features", "prefer_full_width_vectors", "numba"]

#: The environment variable numba reads its target's CPU features from.
FEATURES_VARIABLE = "NUMBA_CPU_FEATURES"


def full_width_features(features: str) -> str:
    """The LLVM feature string ``features`` (as ``+avx2,+avx512f,...``) without the 256-bit preference.

    Parameters
    ----------
    features : str
        The host's features as ``llvmlite.binding.get_host_cpu_features().flatten()`` gives them.

    Returns
    -------
    str
        ``features`` with ``-prefer-256-bit`` last (LLVM applies the last mention of a feature).
    """
    return f"{features},-prefer-256-bit"


def prefer_full_width_vectors() -> bool:
    """Set ``NUMBA_CPU_FEATURES`` for 512-bit vectors on an AVX-512 host, before numba's import.

    Returns
    -------
    bool
        True if the variable was set now; False if it was left alone (set by the user, numba
        already imported, no AVX-512, or the host's features unknown to llvmlite).
    """
    if FEATURES_VARIABLE in os.environ or "numba" in sys.modules:
        return False
    from llvmlite import binding  # numba's own LLVM binding (imported by numba anyway)
    try:
        host = binding.get_host_cpu_features()
    except RuntimeError:  # llvmlite cannot tell on this platform
        return False
    if not host.get("avx512f", False):
        return False
    os.environ[FEATURES_VARIABLE] = full_width_features(host.flatten())
    return True


prefer_full_width_vectors()

import numba  # noqa: E402  (after the target is chosen)
