"""Keep freed memory for reuse: large NumPy temporaries without fresh page faults.

Every corruption allocates a few image-sized temporaries (1.2 MB for a 224x224x3 float64
array, more at 299). glibc serves blocks above its mmap threshold (128 KiB at first, raised
dynamically) with fresh ``mmap`` pages and unmaps them on free, so the next temporary faults
every page in again: about half the time of snow, fog and glass blur went to page faults.
:func:`retain_freed_memory` fixes glibc's thresholds so that such blocks come from the heap
and freed heap memory is kept, as ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` /
``MALLOC_TOP_PAD_`` would from the environment. Only speed changes; every value computed is
the same. Elsewhere than on glibc it does nothing.

Importing :mod:`transforms` changes no process setting: whoever corrupts images calls
:func:`retain_freed_memory` once, explicitly (the command line in ``scripts.cli.main``, and every
build worker in the ``setup`` of its output DoFns, ``pipelines.beam.write_release.OutputsFn``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["MALLOPT_SETTINGS", "retain_freed_memory"]

#: mallopt parameter -> (value, the environment variable that would set it at a process's start).
#: The mmap threshold is glibc's largest allowed value on 64-bit systems (32 MiB); blocks above
#: it (none of the transforms' temporaries) still get their own mapping.
MALLOPT_SETTINGS = {
    -1: (256 * 2 ** 20, "MALLOC_TRIM_THRESHOLD_"),  # M_TRIM_THRESHOLD: keep up to 256 MiB freed at the top
    -2: (64 * 2 ** 20, "MALLOC_TOP_PAD_"),  # M_TOP_PAD: grow the heap 64 MiB at a time
    -3: (32 * 2 ** 20, "MALLOC_MMAP_THRESHOLD_"),  # M_MMAP_THRESHOLD: fixed, no dynamic raising
}

_applied = False


def retain_freed_memory() -> bool:
    """Apply :data:`MALLOPT_SETTINGS` to this process with glibc's ``mallopt``. Idempotent.

    A setting that the environment already gives (its variable in ``os.environ``) is left as
    the environment set it.

    Returns
    -------
    bool
        True if glibc accepted every setting (False elsewhere than on glibc).

    Examples
    --------
    A second call changes nothing:

    >>> import transforms
    >>> transforms.retain_freed_memory() == transforms.retain_freed_memory()
    True
    """
    global _applied
    if _applied:
        return True
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _applied = all(mallopt(parameter, value) == 1 for parameter, (value, variable) in MALLOPT_SETTINGS.items()
                   if variable not in os.environ)
    return _applied
