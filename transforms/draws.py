"""The random draws of one corruption, recorded and replayed: what the random numbers alone cost.

In the reference mode the legacy samplers (Poisson, normal, bounded integers, uniform) are a floor
that no faster corruption code can remove. :func:`record_draws` runs a corruption once on a
:class:`DrawRecorder` (a ``RandomState`` that logs each call), and :func:`draw_ms` times replaying
exactly those calls, with the same arguments, on a fresh stream: the stream a mode draws from
(the reference mode's :class:`transforms.exact_rng.ExactRandomState`), or NumPy's own
``RandomState`` (``'numpy'``, the same values drawn by NumPy: the floor as it was).
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, NamedTuple

import numpy as np

from schemas.edition import DEFAULT_EDITION

from .corruptions import corrupt
from .rng import RNG_MODES, legacy_random_state, make_rng

__all__ = ["DRAW_METHODS", "DRAW_STREAMS", "Draw", "DrawRecorder", "record_draws", "replay_draws", "draw_stream",
           "draw_ms"]

#: The ``RandomState`` methods the corruptions call (all of them draw).
DRAW_METHODS = ("normal", "poisson", "randint", "random_sample", "standard_normal", "uniform")

#: The streams draws can be replayed on: each random mode's, and ``'numpy'``, NumPy's own
#: ``RandomState`` (the reference mode's values, drawn by NumPy's samplers).
DRAW_STREAMS = (*RNG_MODES, "numpy")


class Draw(NamedTuple):
    """One call on the stream: ``getattr(rng, method)(*args, **kwargs)``."""

    method: str
    args: tuple
    kwargs: dict


class DrawRecorder(np.random.RandomState):
    """A ``numpy.random.RandomState`` that appends every call of :data:`DRAW_METHODS` to ``draws``.

    Its samples are those of ``RandomState(seed)``, so a corruption run on it gives its usual
    output. Calls of other sampling methods raise ``ValueError`` (they would go unrecorded).
    """

    def __init__(self, seed: int):
        super().__init__(seed)
        self.draws: list[Draw] = []

    def __getattribute__(self, name):
        attribute = super().__getattribute__(name)
        if name in DRAW_METHODS:
            draws = super().__getattribute__("draws")

            def recorded(*args, **kwargs):
                draws.append(Draw(name, args, kwargs))
                return attribute(*args, **kwargs)
            return recorded
        if callable(attribute) and not name.startswith("_") and name not in ("get_state", "set_state", "seed"):
            raise ValueError(f"RandomState.{name} is not one of the recorded draw methods {DRAW_METHODS}")
        return attribute


def record_draws(image: np.ndarray, name: str, severity: int, seed: int,
                 edition: str = DEFAULT_EDITION) -> tuple[Draw, ...]:
    """The stream calls of ``corrupt(image, name, severity, RandomState(seed), edition=edition)``, in order.

    Parameters
    ----------
    image : numpy.ndarray
        uint8, shape (N, N, 3), N the edition's side (as for :func:`transforms.corrupt`).
    name : str
        Corruption name.
    severity : int
        1..5.
    seed : int
        Seed in [0, 2**32); the arguments of later draws may depend on earlier samples (frost's
        crop range depends on the texture drawn).
    edition : str
        One of :data:`transforms.EDITIONS`.

    Returns
    -------
    tuple of Draw
        Empty for the deterministic corruptions. Array arguments (Poisson means) are kept.
    """
    recorder = DrawRecorder(seed)
    corrupt(image, name, severity, recorder, edition=edition)
    return tuple(recorder.draws)


def replay_draws(draws, rng) -> None:
    """Make the calls ``draws`` on ``rng`` (a ``RandomState`` or a ``FastRandomState``), in order."""
    for method, args, kwargs in draws:
        getattr(rng, method)(*args, **kwargs)


def draw_stream(seed: int, stream: str):
    """A fresh stream of :data:`DRAW_STREAMS`: ``make_rng(seed, stream)``, or ``RandomState(seed)`` for ``'numpy'``."""
    if stream == "numpy":
        return legacy_random_state(seed)
    return make_rng(seed, stream)


def draw_ms(image: np.ndarray, name: str, severity: int, seed: int, repeats: int = 5,
            mode: str = "reference", clock: Callable[[], float] = time.perf_counter,
            edition: str = DEFAULT_EDITION) -> float:
    """Median time in milliseconds of the random draws alone of one corruption.

    Parameters
    ----------
    image, name, severity, seed
        As for :func:`record_draws` (the draws are recorded once, on the reference stream).
    repeats : int
        Timed replays, >= 1, each on a fresh ``draw_stream(seed, mode)``; the median is returned.
    mode : str
        Stream the replays draw from, one of :data:`DRAW_STREAMS` (a random mode, or
        ``'numpy'``); the recorded arguments are replayed as they are.
    clock : callable
        Seconds now: ``time.perf_counter`` (wall time, default) or ``time.process_time``
        (this process's CPU time, steadier on a shared machine).
    edition : str
        The edition whose corruption draws (as for :func:`record_draws`).

    Returns
    -------
    float
        Milliseconds; 0.0 for a corruption that draws nothing.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    draws = record_draws(image, name, severity, seed, edition)
    if not draws:
        return 0.0
    times = []
    for _ in range(repeats):
        rng = draw_stream(seed, mode)
        start = clock()
        replay_draws(draws, rng)
        times.append(clock() - start)
    return 1000.0 * statistics.median(times)
