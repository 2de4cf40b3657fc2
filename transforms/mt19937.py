"""MT19937 and NumPy's legacy samplers, compiled: the kernels of :class:`transforms.exact_rng.ExactRandomState`.

The stream's state lives in three NumPy arrays that every kernel takes and updates in place:

- ``words``: uint32, shape (2, 624): row 0 the Mersenne Twister's state (``key``), row 1 the
  same words tempered (what the generator outputs; made from row 0 by each kernel and each twist);
- ``counters``: int64, shape (2,): ``[position in the words (0..624), has_gauss (0 or 1)]``;
- ``gauss``: float64, shape (1,): the cached second value of the polar method (0.0 when none).

Row 0 and the rest are the fields of ``RandomState.get_state()``. Each kernel consumes the words and leaves the
state exactly as NumPy's ``RandomState`` does for the same call, with the same arithmetic:

- 53-bit doubles from two words, ``((w1 >> 5) * 2**26 + (w2 >> 6)) / 2**53``;
- ``uniform``: ``low + (high - low) * u``;
- Gaussians: Marsaglia's polar method on pairs of doubles, the second value of a pair cached;
- Poisson: the multiplication method below a mean of 10, Hoermann's PTRS at 10 and above, with
  NumPy's log-gamma series (SPECFUN);
- bounded integers: a 32-bit word masked to the smallest all-ones mask above the range, redrawn
  while it exceeds the range.

The results depend on the C library's ``log``, ``exp`` and ``sqrt`` being the ones NumPy calls;
:func:`transforms.rng.exact_stream_verified` compares the two at first use.

The samplers read a block's words at a time: the doubles from the position to the end of the block
of 624 words are made in one vectorised pass (:func:`_fill_doubles`), and a kernel keeps how many it
used, so the position it writes back is the one after the last word consumed. The position and the
cached Gaussian are local variables of each kernel's loop, threaded through small inlined helpers
and written back at the end. The kernels that take arrays are compiled
without numba's reference counting (``_nrt=False``; they allocate nothing): with it, each helper
call that passes the words array costs an atomic increment and decrement, several times the cost
of the word itself.
"""
from __future__ import annotations

import math

from .jit import numba
import numpy as np

__all__ = ["STATE_WORDS", "SCRATCH_SHAPE", "legacy_seed", "fill_random_sample", "fill_uniform", "fill_standard_normal",
           "fill_normal", "POISSON_TABLE_SLOTS", "log_factorial_table", "fill_poisson", "fill_bounded"]

#: Words in the state of MT19937.
STATE_WORDS = 624
#: Shape of the float64 scratch the Gaussian and Poisson kernels take: a block's doubles (row 0),
#: and the polar method's accepted candidates (rows 1-4, see :func:`_polar_fill`).
SCRATCH_SHAPE = (5, STATE_WORDS // 2)
_SHIFT = 397
_MATRIX_A = np.uint64(0x9908B0DF)
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_WORD = np.uint64(0xFFFFFFFF)
_ONE = np.uint64(1)
_SEED_MULTIPLIER = np.uint64(1812433253)
_TEMPER_B = np.uint32(0x9D2C5680)
_TEMPER_C = np.uint32(0xEFC60000)
#: NumPy's log-gamma series coefficients, highest power last.
_LOGGAM_SERIES = np.array([8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
                           -5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
                           6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
                           -1.39243221690590e+00])
_LOG_2PI = 1.8378770664093453


@numba.njit(cache=True)
def legacy_seed(words, counters, gauss, seed):
    """In place: the state of ``RandomState(seed)`` (Knuth's linear recurrence, no cached Gaussian).

    Parameters
    ----------
    words, counters, gauss : numpy.ndarray
        The state arrays (see the module docstring), overwritten.
    seed : int
        In [0, 2**32).
    """
    word = np.uint64(seed) & _WORD
    words[0, 0] = word
    for i in range(1, STATE_WORDS):
        word = (_SEED_MULTIPLIER * (word ^ (word >> np.uint64(30))) + np.uint64(i)) & _WORD
        words[0, i] = word
    counters[0] = STATE_WORDS
    counters[1] = 0
    gauss[0] = 0.0


@numba.njit(cache=True, inline="always")
def _twisted(word, following, far):
    """One word of the twist: the top bit of ``word`` and the low 31 of ``following``, mixed into ``far``."""
    y = (np.uint64(word) & _UPPER) | (np.uint64(following) & _LOWER)
    return np.uint64(far) ^ (y >> _ONE) ^ ((y & _ONE) * _MATRIX_A)


@numba.njit(cache=True, _nrt=False)
def _twist(words):
    """In place: the next 624 words of the state (row 0), then their tempered copy (row 1).

    The twist runs in three blocks, each free of dependences within itself; the tempering is
    one loop over independent words. Both vectorise.
    """
    key = words[0]
    gap = STATE_WORDS - _SHIFT  # 227
    for i in range(gap):  # reads the old words i + 397
        key[i] = _twisted(key[i], key[i + 1], key[i + _SHIFT])
    for i in range(gap, 2 * gap):  # reads the new words of the first block
        key[i] = _twisted(key[i], key[i + 1], key[i - gap])
    for i in range(2 * gap, STATE_WORDS - 1):  # reads the new words of the second block
        key[i] = _twisted(key[i], key[i + 1], key[i - gap])
    key[STATE_WORDS - 1] = _twisted(key[STATE_WORDS - 1], key[0], key[_SHIFT - 1])
    _temper(words)


@numba.njit(cache=True, _nrt=False)
def _temper(words):
    """In place: row 1 of ``words`` = the tempered words of row 0 (MT19937's output transform)."""
    for i in range(STATE_WORDS):
        y = words[0, i]
        y ^= y >> np.uint32(11)
        y ^= (y << np.uint32(7)) & _TEMPER_B
        y ^= (y << np.uint32(15)) & _TEMPER_C
        words[1, i] = y ^ (y >> np.uint32(18))


@numba.njit(cache=True, inline="always")
def _next_word(words, position):
    """The next output word (as uint64) and the position after it, twisting at 624."""
    if position >= STATE_WORDS:
        _twist(words)
        position = 0
    return np.uint64(words[1, position]), position + 1


@numba.njit(cache=True, inline="always")
def _next_double(words, position):
    """A double in [0, 1) from two words (27 + 26 bits), and the position after them."""
    a, position = _next_word(words, position)
    b, position = _next_word(words, position)
    return _double(a, b), position


@numba.njit(cache=True, inline="always")
def _double(a, b):
    """The double in [0, 1) of two output words (27 + 26 bits)."""
    # the shifted words (below 2**27) as 32-bit signed integers: their conversion vectorises
    # (AVX2 has no 64-bit one), and every step is exact, so the doubles are the same
    return (np.float64(np.int32(np.uint32(a) >> np.uint32(5))) * 67108864.0
            + np.float64(np.int32(np.uint32(b) >> np.uint32(6)))) / 9007199254740992.0


@numba.njit(cache=True, inline="always")
def _fill_doubles(words, position, buffer):
    """The doubles of the words from ``position`` to the end of the block, into ``buffer``.

    Returns ``(count, base)``: the words of ``buffer[t]`` start at ``base + 2 t``, so once ``k``
    of them are used the stream's position is ``base + 2 k``. Twists first at the end of a
    block; a double whose two words straddle a twist is made alone (count 1, base -1).
    ``buffer`` holds at least ``STATE_WORDS // 2`` doubles.
    """
    if position >= STATE_WORDS:
        _twist(words)
        position = 0
    if position == STATE_WORDS - 1:  # a double across a twist
        buffer[0], _ = _next_double(words, position)
        return 1, -1
    count = (STATE_WORDS - position) // 2
    pairs = words[1, position:position + 2 * count]
    for t in range(count):  # vectorises: no branch per word
        buffer[t] = _double(pairs[2 * t], pairs[2 * t + 1])
    return count, position


@numba.njit(cache=True, inline="always")
def _uniform_fill(words, counters, low, span, out):
    """``out[i] = low + span * u``, u the stream's doubles, a block's words at a time."""
    _temper(words)  # row 1 from the state as it was set
    position = counters[0]
    tempered = words[1]
    i = 0
    while i < out.size:
        if position == STATE_WORDS - 1:  # a double across a twist
            u, position = _next_double(words, position)
            out[i] = low + span * u
            i += 1
            continue
        if position >= STATE_WORDS:
            _twist(words)
            position = 0
        count = min((STATE_WORDS - position) // 2, out.size - i)
        pairs, values = tempered[position:position + 2 * count], out[i:i + count]
        for t in range(count):  # vectorises: no branch per word
            values[t] = low + span * _double(pairs[2 * t], pairs[2 * t + 1])
        i += count
        position += 2 * count
    counters[0] = position


@numba.njit(cache=True, _nrt=False)
def fill_random_sample(words, counters, out):
    """In place: ``out`` (float64, 1-D) filled with doubles in [0, 1), in order.

    ``0.0 + 1.0 * u`` is ``u`` for every double in [0, 1), so this is :func:`fill_uniform` on [0, 1).
    """
    _uniform_fill(words, counters, 0.0, 1.0, out)


@numba.njit(cache=True, _nrt=False)
def fill_uniform(words, counters, low, span, out):
    """In place: ``out`` (float64, 1-D) filled with ``low + span * u``, u in [0, 1) (``span = high - low``)."""
    _uniform_fill(words, counters, low, span, out)


@numba.njit(cache=True, inline="always")
def _polar_fill(words, counters, gauss, loc, scale, standard, out, scratch):
    """Gaussians by Marsaglia's polar method, ``g`` (``standard``) or ``loc + scale * g``, into ``out``.

    Every candidate takes the next two doubles, accepted or not, so the candidates of a block
    are known before any is judged. Each batch therefore (1) makes a block's doubles, (2) keeps
    the accepted candidates in order, without a branch per candidate, (3) takes the logarithm,
    root and quotient of those it needs. The stream's position is that after the last candidate
    used. A pair returns ``f * x2`` and caches ``f * x1`` as NumPy does; a cached value is used first.

    ``scratch`` is float64, shape (5, ``STATE_WORDS // 2``): the block's doubles, then the accepted
    candidates' x1, x2, radius squared and index.
    """
    _temper(words)  # row 1 from the state as it was set
    buffer, first, second, radius2, index = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    has_gauss, cached = counters[1] != 0, gauss[0]
    n = out.size
    i = 0
    if has_gauss and n > 0:
        out[0] = cached if standard else loc + scale * cached
        i, has_gauss, cached = 1, False, 0.0
    base, k, m = counters[0], 0, 0
    while i < n:
        if k >= m:
            m, base = _fill_doubles(words, base + 2 * k, buffer)
            k = 0
        need = (n - i + 1) // 2  # pairs still needed
        accepted = 0
        if m - k == 1:  # a candidate across two blocks
            u1 = buffer[k]
            m, base = _fill_doubles(words, base + 2 * m, buffer)
            k = 1
            x1, x2 = 2.0 * u1 - 1.0, 2.0 * buffer[0] - 1.0
            r2 = x1 * x1 + x2 * x2
            first[0], second[0], radius2[0] = x1, x2, r2
            accepted = np.int64((r2 < 1.0) & (r2 != 0.0))
        else:
            candidates = (m - k) // 2
            pairs = buffer[k:k + 2 * candidates]
            for t in range(candidates):
                x1, x2 = 2.0 * pairs[2 * t] - 1.0, 2.0 * pairs[2 * t + 1] - 1.0
                r2 = x1 * x1 + x2 * x2
                first[accepted], second[accepted], radius2[accepted], index[accepted] = x1, x2, r2, t
                accepted += np.int64((r2 < 1.0) & (r2 != 0.0))
            if accepted >= need:
                k += 2 * (np.int64(index[need - 1]) + 1)
            else:
                k += 2 * candidates
        used = min(accepted, need)
        for q in range(used):
            r2 = radius2[q]
            f = math.sqrt(-2.0 * math.log(r2) / r2)
            first[q] *= f
            second[q] *= f
        values = min(n - i, 2 * used)
        for q in range(values // 2):
            g1, g2 = second[q], first[q]
            out[i + 2 * q] = g1 if standard else loc + scale * g1
            out[i + 2 * q + 1] = g2 if standard else loc + scale * g2
        if values % 2:
            g1 = second[values // 2]
            out[i + values - 1] = g1 if standard else loc + scale * g1
            has_gauss, cached = True, first[values // 2]
        i += values
    counters[0], counters[1], gauss[0] = base + 2 * k, has_gauss, cached


@numba.njit(cache=True, _nrt=False)
def fill_standard_normal(words, counters, gauss, out, scratch):
    """In place: ``out`` (float64, 1-D) filled with standard Gaussians, in order (``scratch``: see
    :func:`_polar_fill`)."""
    _polar_fill(words, counters, gauss, 0.0, 1.0, True, out, scratch)


@numba.njit(cache=True, _nrt=False)
def fill_normal(words, counters, gauss, loc, scale, out, scratch):
    """In place: ``out`` (float64, 1-D) filled with ``loc + scale * g``, g standard Gaussians in order
    (``scratch``: see :func:`_polar_fill`)."""
    _polar_fill(words, counters, gauss, loc, scale, False, out, scratch)


@numba.njit(cache=True)
def _loggam(x):
    """NumPy's ``random_loggam``: log Gamma(x) for x >= 1 (here x = k + 1, k a count)."""
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7.0 - x) if x < 7.0 else 0
    x0 = x + n
    inverse = 1.0 / x0
    x2 = inverse * inverse
    series = _LOGGAM_SERIES[9]
    for k in range(8, -1, -1):
        series *= x2
        series += _LOGGAM_SERIES[k]
    result = series / x0 + 0.5 * _LOG_2PI + (x0 - 0.5) * math.log(x0) - x0
    for _ in range(n):
        result -= math.log(x0 - 1.0)
        x0 -= 1.0
    return result


@numba.njit(cache=True, inline="always")
def _poisson_multiplication(words, base, k, m, buffer, limit):
    """Poisson count of a mean in (0, 10), uniforms multiplied until at most ``limit`` = exp(-mean):
    ``(count, base, k, m)`` (the block of doubles of :func:`_fill_doubles`, after the count's draws).

    Four doubles are multiplied at a time while the block has them: the partial products never
    grow (each factor is below 1), so the count is the number of them above ``limit``, and one
    branch decides four factors.
    """
    count = 0
    product = 1.0
    while True:
        if k + 4 <= m:
            p1 = product * buffer[k]
            p2 = p1 * buffer[k + 1]
            p3 = p2 * buffer[k + 2]
            p4 = p3 * buffer[k + 3]
            if p4 > limit:
                count += 4
                k += 4
                product = p4
                continue
            above = np.int64(p1 > limit) + np.int64(p2 > limit) + np.int64(p3 > limit)
            return count + above, base, k + above + 1, m
        if k >= m:
            m, base = _fill_doubles(words, base + 2 * k, buffer)
            k = 0
        product *= buffer[k]
        k += 1
        if product > limit:
            count += 1
        else:
            return count, base, k, m


@numba.njit(cache=True, inline="always")
def _ptrs_constants(lam):
    """The constants of PTRS for mean ``lam`` >= 10: ``(log(lam), b, a, log(1 / alpha), vr)``."""
    b = 0.931 + 2.53 * math.sqrt(lam)
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    return math.log(lam), b, a, math.log(invalpha), 0.9277 - 3.6224 / (b - 2)


@numba.njit(cache=True, inline="always")
def _poisson_ptrs(words, base, k, m, buffer, lam, constants, log_factorials):
    """Poisson count of mean ``lam`` >= 10 by transformed rejection with squeeze (PTRS), given
    :func:`_ptrs_constants` and a :func:`log_factorial_table`: ``(count, base, k, m)`` as
    :func:`_poisson_multiplication`.

    The candidate count stays a double (the ``floor``): C's conversions of it to an integer and
    back are exact wherever they matter, and a negative candidate is rejected first.
    """
    loglam, b, a, log_invalpha, vr = constants
    while True:
        if k >= m:
            m, base = _fill_doubles(words, base + 2 * k, buffer)
            k = 0
        u = buffer[k]
        k += 1
        if k >= m:
            m, base = _fill_doubles(words, base + 2 * k, buffer)
            k = 0
        v = buffer[k]
        k += 1
        u -= 0.5
        us = 0.5 - abs(u)
        count = math.floor((2 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return np.int64(count), base, k, m
        if count < 0 or (us < 0.013 and v > us):
            continue
        log_factorial = log_factorials[np.int64(count)] if count < log_factorials.size else _loggam(count + 1.0)
        if (math.log(v) + log_invalpha - math.log(a / (us * us) + b)) <= (-lam + count * loglam - log_factorial):
            return np.int64(count), base, k, m


@numba.njit(cache=True)
def log_factorial_table(size):
    """NumPy's ``random_loggam(k + 1)`` for k in [0, size) (float64): PTRS's log k!, computed once."""
    table = np.empty(size)
    for k in range(size):
        table[k] = _loggam(k + 1.0)
    return table


#: Slots of the table of per-mean constants in :func:`fill_poisson` (a power of two).
POISSON_TABLE_SLOTS = 1024


@numba.njit(cache=True, _nrt=False)
def fill_poisson(words, counters, lam, out, means, constants, log_factorials, buffer):
    """In place: ``out`` (int64, 1-D) filled with Poisson counts of means ``lam`` (float64, same size).

    Parameters
    ----------
    words, counters : numpy.ndarray
        The state arrays (see the module docstring).
    lam : numpy.ndarray
        float64, 1-D: the means.
    out : numpy.ndarray
        int64, the size of ``lam``.
    means, constants : numpy.ndarray
        A direct-mapped table of the per-mean constants (exp(-mean) below 10, those of PTRS at 10
        and above): float64, shapes (:data:`POISSON_TABLE_SLOTS`,) (NaN: empty) and
        (POISSON_TABLE_SLOTS, 5). Images hold few distinct means, so each is computed about once;
        the values are those computed per draw.
    log_factorials : numpy.ndarray
        :func:`log_factorial_table` (any size; counts beyond it are computed).
    buffer : numpy.ndarray
        float64, at least ``STATE_WORDS // 2`` values: scratch for a block's doubles.

    Returns
    -------
    bool
        False, with nothing drawn, if a mean is outside [0, 1e15] or NaN (left to NumPy).
    """
    for i in range(lam.size):
        if not 0.0 <= lam[i] <= 1e15:
            return False
    _temper(words)  # row 1 from the state as it was set
    base, k, m = counters[0], 0, 0  # the block of doubles: position base + 2 k
    for i in range(lam.size):
        mean = lam[i]
        if mean == 0.0:
            out[i] = 0
            continue
        slot = np.int64(mean * 1021.0) & (POISSON_TABLE_SLOTS - 1)
        if means[slot] != mean:
            means[slot] = mean
            if mean >= 10.0:
                (constants[slot, 0], constants[slot, 1], constants[slot, 2], constants[slot, 3],
                 constants[slot, 4]) = _ptrs_constants(mean)
            else:
                constants[slot, 0] = math.exp(-mean)
        if mean >= 10.0:
            ptrs = (constants[slot, 0], constants[slot, 1], constants[slot, 2], constants[slot, 3], constants[slot, 4])
            out[i], base, k, m = _poisson_ptrs(words, base, k, m, buffer, mean, ptrs, log_factorials)
        else:
            out[i], base, k, m = _poisson_multiplication(words, base, k, m, buffer, constants[slot, 0])
    counters[0] = base + 2 * k
    return True


@numba.njit(cache=True, _nrt=False)
def fill_bounded(words, counters, low, span, out):
    """In place: ``out`` (int64, 1-D) filled with integers in ``[low, low + span]`` (inclusive).

    Parameters
    ----------
    low : int
        Offset (int64).
    span : int
        ``high - 1 - low``, in [0, 2**32): one masked 32-bit word per try, none when 0.
        When ``span + 1`` is a power of two no try fails, and a block's words are masked at once;
        otherwise every try is written and the position moves on past the successes only, so a
        failed try costs no branch.
    """
    _temper(words)  # row 1 from the state as it was set
    limit = np.uint64(span)
    mask = limit
    for shift in (1, 2, 4, 8, 16):
        mask |= mask >> np.uint64(shift)
    if not limit:  # one possible value: no word drawn
        for i in range(out.size):
            out[i] = low
        return
    position = counters[0]
    tempered = words[1]
    i = 0
    while i < out.size:
        if position >= STATE_WORDS:
            _twist(words)
            position = 0
        if mask == limit:  # one word per value
            count = min(STATE_WORDS - position, out.size - i)
            drawn, values = tempered[position:position + count], out[i:i + count]
            for t in range(count):  # vectorises: no branch per word
                values[t] = low + np.int64(np.uint64(drawn[t]) & mask)
            i += count
            position += count
        else:
            while position < STATE_WORDS and i < out.size:
                value = np.uint64(tempered[position]) & mask
                position += 1
                out[i] = low + np.int64(value)
                i += np.int64(value <= limit)
    counters[0] = position
