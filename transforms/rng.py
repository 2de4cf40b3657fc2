"""Random streams for the corruptions: the reference legacy stream, or a faster one.

Mode ``'reference'`` is the stream of ``numpy.random.RandomState(seed)`` (MT19937 with NumPy's
frozen legacy algorithms): the corruptions consume it exactly as the reference code consumes
NumPy's global stream, so outputs are comparable seed for seed with the reference (and the
fidelity tests). It is drawn by :class:`transforms.exact_rng.ExactRandomState`, the same values
and states from compiled samplers, once :func:`exact_stream_verified` has found it equal to
NumPy's in this process; otherwise by NumPy's ``RandomState`` itself.

Mode ``'fast'`` keeps every corruption's algorithm and every distribution, but draws from
NumPy's ``Generator(PCG64(seed))`` through :class:`FastRandomState`. PCG64 was chosen over the
counter-based Philox because it is the faster of the two on the corruptions' own draws (Philox
is no faster than the legacy stream there; see docs/dev/performance.md). It is deterministic per
seed, but its samples differ from the reference stream's: choose it for speed when seed-level
comparability with the reference does not matter.
"""
from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Union

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from schemas.imagenet_c import RNG_MODES  # the two random modes, declared with the build's other choices

if TYPE_CHECKING:  # imported on first use: transforms.exact_rng compiles with numba (see transforms/__init__)
    from .exact_rng import ExactRandomState

__all__ = ["RNG_MODES", "FastRandomState", "CorruptionRng", "CHECK_SEEDS", "legacy_random_state",
           "exact_stream_verified", "make_rng", "check_rng"]

_LOG = logging.getLogger(__name__)

#: Seeds of the first-use comparison of the exact stream with NumPy's (:func:`exact_stream_verified`).
CHECK_SEEDS = (0, 1, 2 ** 32 - 1)


class FastRandomState:
    """The ``RandomState`` methods the corruptions call, drawn from ``Generator(PCG64(seed))``.

    Each method has the signature and meaning of the ``RandomState`` method of the same name
    (same distribution, same half-open integer ranges, same shapes); only the underlying bit
    generator and sampling algorithms differ.

    Parameters
    ----------
    seed : int
        Non-negative seed of the PCG64 stream (any size; ``example_seed`` gives 32 bits).
    """

    __slots__ = ("generator",)

    def __init__(self, seed: int):
        self.generator = np.random.Generator(np.random.PCG64(seed))

    def __repr__(self) -> str:
        return f"FastRandomState({self.generator.bit_generator!r})"

    def randint(self, low, high=None, size=None):
        """Integers in ``[low, high)``, or ``[0, low)`` when ``high`` is None (int64)."""
        return self.generator.integers(low, high, size=size)

    def random_sample(self, size=None):
        """Floats uniform in ``[0, 1)``."""
        return self.generator.random(size)

    def uniform(self, low=0.0, high=1.0, size=None):
        """Floats uniform in ``[low, high)``."""
        return self.generator.uniform(low, high, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Gaussian floats with mean ``loc`` and standard deviation ``scale``."""
        return self.generator.normal(loc, scale, size)

    def standard_normal(self, size=None):
        """Gaussian floats with mean 0 and standard deviation 1."""
        return self.generator.standard_normal(size)

    def poisson(self, lam=1.0, size=None):
        """Poisson counts (int64) with mean ``lam`` (0 where ``lam`` is 0)."""
        return self.generator.poisson(lam, size)


#: What :func:`transforms.corrupt` accepts as ``rng``.
CorruptionRng = Union[np.random.RandomState, "ExactRandomState", FastRandomState]


class _UnusedSeedSequence(ISeedSequence):
    """A seed sequence that hands out zeros at once: the MT19937 it starts is re-seeded at once.

    The words come as a list, not an array: ``MT19937.__init__`` copies them into its state one
    index at a time, which costs a NumPy scalar per word for an array (about 150 us for the
    624 words here) and next to nothing for a list.
    """

    def generate_state(self, n_words, dtype=np.uint32):
        return [0] * n_words


_UNUSED_SEED_SEQUENCE = _UnusedSeedSequence()


def legacy_random_state(seed: int) -> np.random.RandomState:
    """``numpy.random.RandomState(seed)``, the same object in the same state, much cheaper to make.

    ``RandomState(seed)`` first seeds a fresh MT19937 from OS entropy through a ``SeedSequence``
    (most of its cost), then overwrites that whole state with the legacy seeding of ``seed``.
    Here the MT19937 starts from a trivial seed sequence instead (624 zero words, copied from a
    list), and ``RandomState.seed(seed)`` applies the same legacy seeding (all 624 words, the
    position and the cached Gaussian reset), so the stream is the one ``RandomState(seed)`` gives.

    Parameters
    ----------
    seed : int
        In [0, 2**32).

    Returns
    -------
    numpy.random.RandomState

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.rng import legacy_random_state
    >>> legacy_random_state(7).randint(100, size=4).tolist() == np.random.RandomState(7).randint(100, size=4).tolist()
    True
    """
    rng = np.random.RandomState(np.random.MT19937(_UNUSED_SEED_SEQUENCE))
    rng.seed(seed)
    return rng


@functools.cache
def exact_stream_verified() -> bool:
    """Whether :class:`ExactRandomState` draws NumPy's values here: checked once per process.

    The compiled samplers call the C library's ``log``, ``exp`` and ``sqrt`` as NumPy does, so
    their values can only differ on a machine whose library differs between the two (or where
    the samplers fail to compile). Each seed of :data:`CHECK_SEEDS` runs
    :data:`transforms.exact_rng.CHECK_CALLS` (a few thousand draws of every method) on both
    streams. On any difference, one warning line is logged and :func:`make_rng` hands out NumPy's
    ``RandomState``: outputs stay the same, only slower.

    Returns
    -------
    bool
    """
    from .exact_rng import ExactRandomState, same_draws

    try:
        verified = all(same_draws(ExactRandomState(seed), legacy_random_state(seed)) for seed in CHECK_SEEDS)
    except Exception as error:  # noqa: BLE001 - any failure of the compiled stream means NumPy's
        _LOG.warning("exact random stream unavailable (%s: %s); drawing from numpy.random.RandomState",
                     type(error).__name__, error)
        return False
    if not verified:
        _LOG.warning("exact random stream differs from numpy.random.RandomState on this machine; "
                     "drawing from numpy.random.RandomState (same outputs, slower)")
    return verified


def make_rng(seed: int, mode: str = "reference") -> CorruptionRng:
    """A fresh random stream for one output.

    Parameters
    ----------
    seed : int
        Seed, in [0, 2**32) for the reference mode (e.g. :func:`transforms.example_seed`).
    mode : str
        ``'reference'`` (the stream of ``numpy.random.RandomState(seed)``, reproduces the
        reference) or ``'fast'`` (:class:`FastRandomState`); see :data:`RNG_MODES`.

    Returns
    -------
    ExactRandomState, numpy.random.RandomState or FastRandomState
        For ``'reference'``, an :class:`ExactRandomState` when :func:`exact_stream_verified`,
        else ``RandomState(seed)``: the same values either way.

    Examples
    --------
    >>> import transforms
    >>> transforms.make_rng(0).randint(1000, size=3).tolist()
    [684, 559, 629]
    >>> type(transforms.make_rng(0, 'fast')).__name__
    'FastRandomState'
    """
    if mode == "reference":
        if not exact_stream_verified():
            return legacy_random_state(seed)
        from .exact_rng import ExactRandomState
        return ExactRandomState(seed)
    if mode == "fast":
        return FastRandomState(seed)
    raise ValueError(f"rng mode must be one of {', '.join(RNG_MODES)}; got {mode!r}")


def check_rng(rng) -> None:
    """Raise ``ValueError`` unless ``rng`` is a ``RandomState``, an :class:`ExactRandomState` or a
    :class:`FastRandomState`."""
    from .exact_rng import ExactRandomState

    if not isinstance(rng, (np.random.RandomState, ExactRandomState, FastRandomState)):
        raise ValueError("rng must be a numpy.random.RandomState, a transforms.ExactRandomState or a "
                         "transforms.FastRandomState "
                         f"(see transforms.make_rng); got {type(rng)!r}")
