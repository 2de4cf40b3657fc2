"""ExactRandomState against numpy.random.RandomState: values, types and states, call after call.

The property test runs every method and argument pattern the corruptions and perturbations use on
10,000 seeds; the long comparison of 10**8 normal and Poisson values runs by hand:
``IMAGENET_CP_LONG_CHECKS=1 python -m pytest -m benchmark tests/transforms/test_exact_rng.py``.
"""
import logging
import os
import re
import time

import numpy as np
import pytest

from transforms import rng as rng_module
from transforms.exact_rng import CHECK_CALLS, ExactRandomState, same_draws, same_state
from transforms.rng import legacy_random_state, make_rng

SEEDS = 10_000


def _same(got, want) -> bool:
    return (type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
            and np.shape(got) == np.shape(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes())


def _shape(chooser: np.random.RandomState):
    """A size as the callers pass it: a tuple of 1..3 dimensions (the empty one included), or an int."""
    if chooser.random_sample() < 0.2:
        return int(chooser.randint(0, 700))
    dims = chooser.randint(1, 4)
    return tuple(int(d) for d in chooser.randint(0 if chooser.random_sample() < 0.05 else 1, 24, dims))


def _lam(chooser: np.random.RandomState) -> np.ndarray:
    """Means as shot noise makes them (pixels / 255 * scale, zeros included), any of the three regimes."""
    pixels = chooser.randint(0, 256, _shape(chooser) if chooser.random_sample() < 0.5 else (7, 5, 3))
    return pixels / 255.0 * chooser.choice([0.5, 3.0, 12.0, 30.0, 60.0, 500.0])


def _calls(chooser: np.random.RandomState) -> list:
    """A random programme of the call patterns of transforms/ (see the callers' ``rng.`` uses)."""
    patterns = [
        lambda: ("random_sample", (_shape(chooser),), {}),
        lambda: ("random_sample", (), {}),
        lambda: ("uniform", (-1, 1), {"size": _shape(chooser)}),
        lambda: ("uniform", (-float(chooser.random_sample()), float(chooser.random_sample()), _shape(chooser)), {}),
        lambda: ("uniform", (-45, 45), {}),
        lambda: ("uniform", (float(chooser.uniform(-5, 0)), float(chooser.uniform(0, 5))), {}),
        lambda: ("normal", (), {"size": _shape(chooser), "scale": float(chooser.uniform(0, 0.6))}),
        lambda: ("normal", (float(chooser.uniform(-1, 1)), float(chooser.uniform(0, 1)), _shape(chooser)), {}),
        lambda: ("normal", (), {}),
        lambda: ("standard_normal", (_shape(chooser),), {}),
        lambda: ("standard_normal", (), {}),
        lambda: ("poisson", (_lam(chooser),), {}),
        lambda: ("poisson", (float(chooser.choice([0.0, 0.7, 9.5, 10.0, 42.0])),), {}),
        lambda: ("randint", (-int(chooser.randint(1, 9)), int(chooser.randint(1, 9))),
                 {"size": (int(chooser.randint(0, 400)), 2)}),
        lambda: ("randint", (int(chooser.randint(1, 1001)),), {}),
        lambda: ("randint", (0, int(chooser.randint(1, 3000))), {}),
        lambda: ("randint", (int(chooser.randint(-9, 9)), int(chooser.randint(10, 2 ** 32 + 9))), {}),
    ]
    return [patterns[i]() for i in chooser.randint(0, len(patterns), chooser.randint(2, 7))]


def test_every_call_pattern_matches_numpy_on_10000_seeds():
    """Values (type, dtype, shape, bytes) and the whole state after every call, 10,000 seeds."""
    chooser = np.random.RandomState(20261207)
    covered = set()
    for seed in chooser.randint(0, 2 ** 32, SEEDS, dtype=np.uint64).tolist():
        exact, numpy = ExactRandomState(seed), legacy_random_state(seed)
        for method, args, kwargs in _calls(chooser):
            got, want = getattr(exact, method)(*args, **kwargs), getattr(numpy, method)(*args, **kwargs)
            assert _same(got, want), (seed, method, args, kwargs)
            assert same_state(exact.get_state(), numpy.get_state()), (seed, method, args, kwargs)
            covered.add(method)
    assert covered == {"random_sample", "uniform", "normal", "standard_normal", "poisson", "randint"}


@pytest.mark.parametrize("seed", [0, 7, 2 ** 32 - 1])
def test_the_startup_calls_match_numpy(seed):
    assert same_draws(ExactRandomState(seed), np.random.RandomState(seed), CHECK_CALLS)


def test_state_round_trips_and_cached_gaussians():
    numpy = np.random.RandomState(11)
    numpy.standard_normal(3)  # leaves a cached Gaussian
    exact = ExactRandomState(0)
    exact.set_state(numpy.get_state())
    assert same_state(exact.get_state(), numpy.get_state()) and exact.get_state()[3] == 1
    assert _same(exact.normal(size=4), numpy.normal(size=4))
    as_dict = exact.get_state(legacy=False)
    assert as_dict["state"]["pos"] == numpy.get_state(legacy=False)["state"]["pos"]
    again = ExactRandomState(3)
    again.set_state(as_dict)
    assert same_state(again.get_state(), numpy.get_state())
    again.seed(123)
    assert same_state(again.get_state(), np.random.RandomState(123).get_state())
    with pytest.raises(ValueError, match="Seed must be between"):
        ExactRandomState(2 ** 32)


@pytest.mark.parametrize("method,args", [
    ("random_sample", ()), ("uniform", (-2.0, 3.0)), ("normal", (0.5, 0.1)), ("standard_normal", ()),
    ("poisson", (2.5,)), ("poisson", (31.0,)), ("randint", (-3, 3)), ("randint", (-2, 2)),
])
def test_draws_across_the_end_of_a_block_from_every_position(method, args):
    """The samplers work a block of 624 words at a time: start at each of the block's last words
    (even and odd), with and without a cached Gaussian, and draw through the twist."""
    for position in range(612, 625):
        for cached in (False, True):
            numpy = np.random.RandomState(5)
            numpy.set_state(("MT19937", numpy.get_state()[1], position, int(cached), 0.25 if cached else 0.0))
            exact = ExactRandomState(0)
            exact.set_state(numpy.get_state())
            for size in (1, 2, 3, 7, 330, 700):
                got, want = getattr(exact, method)(*args, size=size), getattr(numpy, method)(*args, size=size)
                assert _same(got, want), (method, position, cached, size)
                assert same_state(exact.get_state(), numpy.get_state()), (method, position, cached, size)


@pytest.mark.parametrize("method,args,kwargs", [
    ("normal", (np.zeros(5), np.arange(5.0)), {}),  # array loc and scale
    ("poisson", (np.full(4, 3.0),), {"size": (2, 4)}),  # array means with a size
    ("randint", (0, 200), {"size": 9, "dtype": np.uint8}),
    ("randint", (0, 2 ** 40), {"size": 3}),  # a 64-bit range
    ("randint", (5,), {"dtype": np.int64}),
    ("uniform", (np.zeros(3), 1.0), {}),
    ("rand", (3, 2), {}),
    ("choice", (10, 4), {}),
    ("permutation", (12,), {}),
    ("binomial", (10, 0.3, 5), {}),
])
def test_other_patterns_are_left_to_numpy_in_the_same_state(method, args, kwargs):
    exact, numpy = ExactRandomState(5), np.random.RandomState(5)
    for rng in (exact, numpy):
        rng.standard_normal(3)
    assert _same(getattr(exact, method)(*args, **kwargs), getattr(numpy, method)(*args, **kwargs))
    assert same_state(exact.get_state(), numpy.get_state())
    assert _same(exact.normal(size=3), numpy.normal(size=3))


@pytest.mark.parametrize("method,args", [
    ("poisson", (-1.0,)), ("poisson", (np.array([1.0, np.nan]),)), ("normal", (0.0, -1.0)),
    ("normal", (0.0, -0.0)), ("randint", (5, 5)), ("uniform", (0.0, np.inf)),
])
def test_invalid_arguments_raise_numpy_errors_and_keep_the_state(method, args):
    exact, numpy = ExactRandomState(9), np.random.RandomState(9)
    with pytest.raises((ValueError, OverflowError)) as raised:
        getattr(numpy, method)(*args)
    with pytest.raises(raised.type, match=re.escape(str(raised.value))):
        getattr(exact, method)(*args)
    assert same_state(exact.get_state(), numpy.get_state())


def test_unknown_attributes_are_errors():
    with pytest.raises(AttributeError):
        ExactRandomState(0).generator  # noqa: B018


@pytest.fixture
def fresh_verdict():
    rng_module.exact_stream_verified.cache_clear()
    yield
    rng_module.exact_stream_verified.cache_clear()


def test_a_stream_that_differs_falls_back_to_numpy_with_one_warning(monkeypatch, caplog, fresh_verdict):
    """As on a machine whose C library gives other logarithms: the check finds a difference."""
    import transforms.exact_rng as exact_rng

    class OffByOneUlp(ExactRandomState):
        __slots__ = ()

        def poisson(self, lam=1.0, size=None):
            return np.asarray(super().poisson(lam, size)) + 1

    monkeypatch.setattr(exact_rng, "ExactRandomState", OffByOneUlp)
    with caplog.at_level(logging.WARNING, logger="transforms.rng"):
        streams = [make_rng(seed) for seed in (4, 5)]
    assert [type(s) for s in streams] == [np.random.RandomState] * 2
    assert _same(streams[0].poisson(np.full(6, 20.0)), np.random.RandomState(4).poisson(np.full(6, 20.0)))
    assert len(caplog.records) == 1 and "differs from numpy.random.RandomState" in caplog.records[0].getMessage()


def test_a_stream_that_fails_falls_back_to_numpy(monkeypatch, caplog, fresh_verdict):
    import transforms.exact_rng as exact_rng

    def broken(seed):
        raise RuntimeError("no compiler")

    monkeypatch.setattr(exact_rng, "ExactRandomState", broken)
    with caplog.at_level(logging.WARNING, logger="transforms.rng"):
        assert type(make_rng(4)) is np.random.RandomState
    assert len(caplog.records) == 1 and "unavailable" in caplog.records[0].getMessage()


def test_the_reference_mode_draws_from_the_exact_stream(fresh_verdict):
    assert type(make_rng(4)) is ExactRandomState


@pytest.mark.benchmark
@pytest.mark.skipif(not os.environ.get("IMAGENET_CP_LONG_CHECKS"), reason="10**8 values: IMAGENET_CP_LONG_CHECKS=1")
def test_10_to_the_8_normal_and_poisson_values_match_numpy():
    """10**8 values each of ``normal`` and ``poisson`` (means 0..60 as shot noise draws them), in
    calls of 150,528 values (one 224 x 224 x 3 image) over fresh seeds; timed on both streams."""
    total, chunk = 10 ** 8, 224 * 224 * 3
    lam = np.random.RandomState(1).randint(0, 256, chunk) / 255.0 * 60.0
    seconds = {"exact": 0.0, "numpy": 0.0}
    for method, args, kwargs in (("normal", (), {"scale": 0.08}), ("poisson", (lam,), {})):
        done, seed = 0, 0
        while done < total:
            exact, numpy = ExactRandomState(seed), legacy_random_state(seed)
            sized = dict(kwargs, size=chunk) if method == "normal" else kwargs
            start = time.perf_counter()
            got = getattr(exact, method)(*args, **sized)
            middle = time.perf_counter()
            want = getattr(numpy, method)(*args, **sized)
            seconds["exact"] += middle - start
            seconds["numpy"] += time.perf_counter() - middle
            assert got.tobytes() == want.tobytes() and same_state(exact.get_state(), numpy.get_state()), seed
            done, seed = done + chunk, seed + 1
        print(f"{method}: {done} values equal; exact {seconds['exact']:.1f} s, numpy {seconds['numpy']:.1f} s")
        seconds = {"exact": 0.0, "numpy": 0.0}


#: The per-method timing of the note (docs/dev/performance.md): the calls the corruptions make on a
#: 224 x 224 x 3 image, shot noise's means at its five severities' photon counts.
_IMAGE = (224, 224, 3)
_PIXELS = np.random.RandomState(2).randint(0, 256, _IMAGE) / 255.0
SPEED_CALLS = {
    "random_sample": ("random_sample", (_IMAGE,), {}),
    "uniform": ("uniform", (-1, 1), {"size": _IMAGE}),
    "normal": ("normal", (), {"size": _IMAGE, "scale": 0.08}),
    "standard_normal": ("standard_normal", (_IMAGE,), {}),
    **{f"poisson, means 0..{c}": ("poisson", (_PIXELS * c,), {}) for c in (60, 25, 12, 5, 3)},
    "randint": ("randint", (-2, 2), {"size": (224 * 224, 2)}),
}


@pytest.mark.benchmark
@pytest.mark.skipif(not os.environ.get("IMAGENET_CP_LONG_CHECKS"), reason="timing: IMAGENET_CP_LONG_CHECKS=1")
def test_ns_per_value_of_each_method():
    """CPU time per value of each call on both streams, the best of 25 fresh-seeded calls each,
    the two streams alternating (a shared machine slows both alike)."""
    print(f"\n{'call':26}{'NumPy ns':>10}{'exact ns':>10}{'speed-up':>10}")
    for label, (method, args, kwargs) in SPEED_CALLS.items():
        best = {"numpy": np.inf, "exact": np.inf}
        for seed in range(25):
            for stream, make in (("numpy", legacy_random_state), ("exact", ExactRandomState)):
                rng = make(seed)
                start = time.process_time()
                values = getattr(rng, method)(*args, **kwargs)
                best[stream] = min(best[stream], time.process_time() - start)
        ns = {stream: seconds * 1e9 / values.size for stream, seconds in best.items()}
        print(f"{label:26}{ns['numpy']:10.1f}{ns['exact']:10.1f}{ns['numpy'] / ns['exact']:9.2f}x")
