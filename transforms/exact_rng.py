"""``numpy.random.RandomState``'s own stream, bit for bit, from compiled samplers.

:class:`ExactRandomState` gives the values of ``RandomState(seed)`` for the calls the corruptions and
perturbations make (``random_sample``, ``uniform``, ``normal``, ``standard_normal``, ``poisson``,
``randint``) and leaves the same state after each, so any later draw, by any code, is the same too.
The samplers are those of :mod:`transforms.mt19937`; NumPy draws the same values one at a time
through generic C loops, 2 to 7 times slower per value (docs/dev/performance.md).

Arguments outside the compiled patterns (array ``loc``/``scale``, a ``size`` with array means,
other dtypes, invalid values) and every other ``RandomState`` method go to a ``RandomState`` put in
the same state, which hands its state back afterwards: the same values and errors as NumPy's.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import numpy as np

from .mt19937 import (POISSON_TABLE_SLOTS, SCRATCH_SHAPE, STATE_WORDS, fill_bounded, fill_normal, fill_poisson,
                      fill_random_sample, fill_standard_normal, fill_uniform, legacy_seed, log_factorial_table)

__all__ = ["ExactRandomState", "CHECK_CALLS", "same_draws", "same_state"]

_WORD_RANGE = 2 ** 32
_INT64 = (-2 ** 63, 2 ** 63)
#: Counts whose log-factorial PTRS looks up rather than computes (means up to about 3,000).
_LOG_FACTORIALS = 4096

#: Calls that cover every compiled path (scalars, shapes, odd Gaussian counts that leave a cached
#: value, Poisson means 0, below 10 and above, negative integer bounds), a few thousand draws each:
#: :func:`same_draws` makes them on both streams.
CHECK_CALLS = (
    ("normal", (), {"size": (1001,), "scale": 0.08}),
    ("normal", (0.5, 0.3, (40, 25)), {}),
    ("normal", (), {}),
    ("standard_normal", ((3, 333),), {}),
    ("standard_normal", (), {}),
    ("poisson", (np.linspace(0.0, 60.0, 3001),), {}),
    ("poisson", (np.repeat([0.0, 0.4, 9.99, 10.0, 250.0], 400).reshape(50, 40),), {}),
    ("poisson", (3.0,), {}),
    ("poisson", (30.0, 500), {}),
    ("randint", (-3, 3), {"size": (1000, 2)}),
    ("randint", (5,), {}),
    ("randint", (0, 117), {}),
    ("randint", (7, 2 ** 31 + 9, 1000), {}),
    ("uniform", (-1, 1), {"size": (50, 40)}),
    ("uniform", (-45, 45), {}),
    ("random_sample", ((2000,),), {}),
    ("random_sample", (), {}),
)


def _real(value) -> Optional[float]:
    """``value`` as a float if it is a finite real scalar (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _integer(value) -> Optional[int]:
    """``value`` as an int if it is an integer scalar (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def _output(size, dtype) -> Optional[np.ndarray]:
    """An empty array for ``size`` (one element for None), or None for a size left to NumPy."""
    if size is None:
        return np.empty(1, dtype)
    dims = size if isinstance(size, tuple) else (size,)
    if all(_integer(d) is not None and d >= 0 for d in dims):
        return np.empty(tuple(int(d) for d in dims), dtype)
    return None


@functools.cache
def _log_factorials() -> np.ndarray:
    """The read-only :func:`transforms.mt19937.log_factorial_table` of PTRS, made once per process."""
    table = log_factorial_table(_LOG_FACTORIALS)
    table.flags.writeable = False
    return table


def _poisson_means(lam, size) -> tuple:
    """The means of a compiled ``poisson`` call (float64, the output's shape) and the size to report
    (None: return a Python int), or ``(None, None)`` for a call left to NumPy."""
    mean = _real(lam)
    if mean is not None:
        out = _output(size, np.float64)
        return (None, None) if out is None else (np.full(out.shape, mean), size)
    if size is None and isinstance(lam, np.ndarray) and lam.dtype.kind in "fiu":
        means = np.ascontiguousarray(lam, dtype=np.float64)
        return means, None if means.ndim == 0 else means.shape
    return None, None


def _result(out: np.ndarray, size):
    """``out`` for a size, else its one value as a Python scalar (as ``RandomState`` returns)."""
    return out.item() if size is None else out


class ExactRandomState:
    """``numpy.random.RandomState(seed)``: the same values and states, drawn by compiled samplers.

    Parameters
    ----------
    seed : int
        In [0, 2**32), as for ``RandomState``.

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.exact_rng import ExactRandomState
    >>> ExactRandomState(3).poisson(np.array([0.0, 4.0, 40.0])).tolist() == \\
    ...     np.random.RandomState(3).poisson(np.array([0.0, 4.0, 40.0])).tolist()
    True
    """

    __slots__ = ("_words", "_counters", "_gauss", "_scratch")

    def __init__(self, seed: int):
        self._words = np.empty((2, STATE_WORDS), np.uint32)  # the key, and its words tempered
        self._counters = np.zeros(2, np.int64)  # position in key, has_gauss
        self._gauss = np.zeros(1)
        self._scratch = np.empty(SCRATCH_SHAPE)  # the samplers' working space, not state
        self.seed(seed)

    def __repr__(self) -> str:
        return f"ExactRandomState(position={int(self._counters[0])})"

    # --- state ---------------------------------------------------------------------------------

    def seed(self, seed) -> None:
        """Reseed as ``RandomState.seed(seed)`` does (an int in [0, 2**32) compiled, else by NumPy)."""
        value = _integer(seed)
        if value is not None and 0 <= value < _WORD_RANGE:
            legacy_seed(self._words, self._counters, self._gauss, value)
        else:
            self.set_state(np.random.RandomState(seed).get_state())

    def get_state(self, legacy: bool = True):
        """The state as ``RandomState.get_state(legacy)`` gives it (a tuple, or a dict for ``legacy=False``)."""
        position, has_gauss = (int(c) for c in self._counters)
        gauss = float(self._gauss[0])
        if legacy:
            return "MT19937", self._words[0].copy(), position, has_gauss, gauss
        return {"bit_generator": "MT19937", "state": {"key": self._words[0].copy(), "pos": position},
                "has_gauss": has_gauss, "gauss": gauss}

    def set_state(self, state) -> None:
        """Take ``state`` in any form ``RandomState.set_state`` accepts (checked by NumPy)."""
        twin = np.random.RandomState(0)
        twin.set_state(state)
        self._take_state_of(twin)

    def _take_state_of(self, twin: np.random.RandomState) -> None:
        _, key, position, has_gauss, gauss = twin.get_state()
        self._words[0] = key
        self._counters[:] = (position, has_gauss)
        self._gauss[0] = gauss

    def _numpy(self, method: str, *args, **kwargs):
        """``RandomState.<method>(*args, **kwargs)`` on a twin in this state, its state taken back."""
        twin = np.random.RandomState(0)
        twin.set_state(self.get_state())
        try:
            return getattr(twin, method)(*args, **kwargs)
        finally:
            self._take_state_of(twin)

    def __getattr__(self, name: str):
        """Any other public ``RandomState`` method, made by NumPy in this stream's state."""
        if name.startswith("_") or not callable(getattr(np.random.RandomState, name, None)):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return lambda *args, **kwargs: self._numpy(name, *args, **kwargs)

    # --- samplers ------------------------------------------------------------------------------

    def random_sample(self, size=None):
        """Floats uniform in [0, 1) (float64; a float for ``size=None``), as ``RandomState.random_sample``."""
        out = _output(size, np.float64)
        if out is None:
            return self._numpy("random_sample", size)
        fill_random_sample(self._words, self._counters, out.reshape(-1))
        return _result(out, size)

    def uniform(self, low=0.0, high=1.0, size=None):
        """Floats ``low + (high - low) * u`` in [low, high), as ``RandomState.uniform`` (scalar bounds compiled)."""
        start, end, out = _real(low), _real(high), _output(size, np.float64)
        span = None if start is None or end is None else end - start
        if out is None or span is None or not math.isfinite(span):
            return self._numpy("uniform", low, high, size)
        fill_uniform(self._words, self._counters, start, span, out.reshape(-1))
        return _result(out, size)

    def standard_normal(self, size=None):
        """Standard Gaussian floats, as ``RandomState.standard_normal`` (polar method, cached partner)."""
        out = _output(size, np.float64)
        if out is None:
            return self._numpy("standard_normal", size)
        fill_standard_normal(self._words, self._counters, self._gauss, out.reshape(-1), self._scratch)
        return _result(out, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Gaussian floats ``loc + scale * g``, as ``RandomState.normal`` (finite scalar ``loc``, ``scale`` >= +0 compiled)."""
        mean, spread, out = _real(loc), _real(scale), _output(size, np.float64)
        if out is None or mean is None or spread is None or math.copysign(1.0, spread) < 0:
            return self._numpy("normal", loc, scale, size)
        fill_normal(self._words, self._counters, self._gauss, mean, spread, out.reshape(-1), self._scratch)
        return _result(out, size)

    def poisson(self, lam=1.0, size=None):
        """Poisson counts (int64; an int for a scalar mean and ``size=None``), as ``RandomState.poisson``.

        Compiled: an array of means (float, int or uint, zeros included) with ``size=None``, or one
        mean with any size; means in [0, 1e15].
        """
        means, shape = _poisson_means(lam, size)
        if means is None:
            return self._numpy("poisson", lam, size)
        out = np.empty(means.shape, np.int64)
        table = np.full(POISSON_TABLE_SLOTS, np.nan), np.empty((POISSON_TABLE_SLOTS, 5))
        if not fill_poisson(self._words, self._counters, means.reshape(-1), out.reshape(-1), *table, _log_factorials(),
                            self._scratch[0]):
            return self._numpy("poisson", lam, size)  # a mean NumPy refuses or that is out of range
        return _result(out, shape)

    def randint(self, low, high=None, size=None, dtype=int):
        """Integers in [low, high), or [0, low) (int64; an int for ``size=None``), as ``RandomState.randint``.

        Compiled: integer bounds with ``high - low`` in [1, 2**32] and the default ``dtype=int``.
        """
        start, end = (0, _integer(low)) if high is None else (_integer(low), _integer(high))
        out = _output(size, np.int64)
        if (dtype is not int or out is None or start is None or end is None
                or not 0 < end - start <= _WORD_RANGE or start < _INT64[0] or end > _INT64[1]):
            return self._numpy("randint", low, high, size, dtype)
        fill_bounded(self._words, self._counters, start, end - 1 - start, out.reshape(-1))
        return _result(out, size)


def same_draws(exact, numpy: np.random.RandomState, calls=CHECK_CALLS) -> bool:
    """Whether ``calls`` give the same values, types and states on both streams, in order.

    Parameters
    ----------
    exact : ExactRandomState
        The stream checked, in the same state as ``numpy``.
    numpy : numpy.random.RandomState
        The reference stream.
    calls : sequence of (method, args, kwargs)
        Made on both; default :data:`CHECK_CALLS`.

    Returns
    -------
    bool
        True when every result has the same type, dtype, shape and bytes, and every state after a
        call is the same.
    """
    for method, args, kwargs in calls:
        got, want = getattr(exact, method)(*args, **kwargs), getattr(numpy, method)(*args, **kwargs)
        if type(got) is not type(want) or np.asarray(got).dtype != np.asarray(want).dtype:
            return False
        if np.shape(got) != np.shape(want) or np.asarray(got).tobytes() != np.asarray(want).tobytes():
            return False
        if not same_state(exact.get_state(), numpy.get_state()):
            return False
    return True


def same_state(a: tuple, b: tuple) -> bool:
    """Whether two legacy ``get_state()`` tuples are equal (key words, position, cached Gaussian)."""
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2:] == b[2:]
