"""Geometric helpers shared by several corruptions and perturbations."""
from __future__ import annotations

import functools
import math

from .jit import numba
import numpy as np

__all__ = ["linear_zoom_taps", "zoom_sum", "clipped_zoom", "displace_reflect"]


def linear_zoom_taps(in_len: int, out_len: int, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Left input tap and the two weights of ``scipy.ndimage.zoom(order=1)`` along one axis.

    For output positions ``start .. start + count - 1`` of a zoom from ``in_len`` to ``out_len``
    samples with corners aligned (``grid_mode=False``), this computes exactly what scipy's
    ``NI_ZoomShift`` does: the input coordinate ``c = k * ((in_len - 1) / (out_len - 1))``, the
    left tap ``floor(c)`` and the weights ``w0 = 1 - (c - floor(c))`` and ``w1 = 1 - w0``.
    A coordinate past the last sample (mode ``'constant'``, ``cval=0``) gets both weights 0.

    Parameters
    ----------
    in_len, out_len : int
        Input and output lengths in samples, >= 1.
    start, count : int
        First output position and number of positions, within ``[0, out_len)``.

    Returns
    -------
    taps : numpy.ndarray
        int64, shape (count,): index of the left input sample, in ``[0, in_len - 1]``.
    weights : numpy.ndarray
        float64, shape (count, 2): weights of the left and right samples (the right sample is
        clamped to the last one, where its weight is 0).
    """
    zoom = (in_len - 1) / (out_len - 1) if out_len > 1 else 1.0
    coords = np.arange(start, start + count, dtype=np.float64) * zoom
    taps = np.floor(coords)
    left = 1.0 - (coords - taps)
    weights = np.stack((left, 1.0 - left), axis=-1)
    weights[coords > in_len - 1] = 0.0
    return np.minimum(taps, in_len - 1).astype(np.int64), weights


@numba.njit(cache=True)
def _bilinear_resample(image, rows, row_weights, cols, col_weights, out):
    """``out[i, j, c]``: the four taps summed in scipy's order, ``((v * w_row) * w_col)`` each.

    The arithmetic is that of ``NI_ZoomShift`` (double accumulation from 0, taps row-major,
    the result cast to ``out``'s dtype); a channel axis of zoom 1 contributes the factor 1 and
    terms of weight 0, which leave the sum unchanged.
    """
    last_row, last_col = image.shape[0] - 1, image.shape[1] - 1
    for i in range(out.shape[0]):
        r0 = rows[i]
        r1 = min(r0 + 1, last_row)
        wr0, wr1 = row_weights[i, 0], row_weights[i, 1]
        for j in range(out.shape[1]):
            c0 = cols[j]
            c1 = min(c0 + 1, last_col)
            wc0, wc1 = col_weights[j, 0], col_weights[j, 1]
            for k in range(out.shape[2]):
                t = 0.0
                t += image[r0, c0, k] * wr0 * wc0
                t += image[r0, c1, k] * wr0 * wc1
                t += image[r1, c0, k] * wr1 * wc0
                t += image[r1, c1, k] * wr1 * wc1
                out[i, j, k] = t


@functools.lru_cache(maxsize=256)
def _zoom_window(side: int, zoom_factor: float) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Where one ``clipped_zoom`` by ``zoom_factor`` of an H x H image (H = ``side``) reads.

    Returns the top (= left) offset and side of the central crop, and the taps and weights
    (:func:`linear_zoom_taps`) of the ``side`` kept output positions, the same on both axes
    (read-only: they are kept for the next call with the same side and factor).
    """
    crop = int(math.ceil(side / zoom_factor))
    top = (side - crop) // 2
    zoomed_side = int(round(crop * zoom_factor))  # scipy's output length
    trim = (zoomed_side - side) // 2
    taps, weights = linear_zoom_taps(crop, zoomed_side, trim, side)
    taps.flags.writeable = weights.flags.writeable = False
    return top, crop, taps, weights


def _tap_runs(taps: np.ndarray) -> np.ndarray:
    """The runs of consecutive positions ``j`` whose tap ``taps[j]`` is ``j + offset``, one offset each.

    Returns int64, shape (runs, 3): first position, position after the last, offset. A zoom by a
    factor >= 1 repeats a sample now and then, so a line of taps is a few such runs, and gathering
    it is a few contiguous copies.
    """
    offsets = taps.astype(np.int64) - np.arange(len(taps))
    cuts = np.flatnonzero(np.diff(offsets)) + 1
    starts = np.concatenate(([0], cuts)).astype(np.int64)
    ends = np.concatenate((cuts, [len(taps)])).astype(np.int64)
    return np.stack((starts, ends, offsets[starts]), axis=1)


@functools.lru_cache(maxsize=64)
def _zoom_plan(side: int, factors: tuple, channels: int) -> tuple[np.ndarray, ...]:
    """The windows of :func:`_zoom_window` for every factor of a :func:`zoom_sum`, stacked.

    Returns, one row per factor: the crops' top offsets; the left taps and the right taps
    (``left + 1`` clamped to the crop) as rows; the left and right weights of the rows; the same
    weights repeated for each of ``channels`` interleaved samples of a column; the runs
    (:func:`_tap_runs`) of the left and the right column taps, padded, and their counts; and
    whether the factor leaves the image as it is (crop of the whole side, every tap on a
    sample, weights 1, 0). Read-only: they are kept for the next call.
    """
    windows = [_zoom_window(side, f) for f in factors]
    tops, crops, taps, weights = (np.stack([w[n] for w in windows]) for n in range(4))
    identity = (crops == side) & (taps == np.arange(side)).all(axis=1) & (weights[..., 0] == 1).all(axis=1) \
        & (weights[..., 1] == 0).all(axis=1)
    right = np.minimum(taps + 1, crops[:, np.newaxis] - 1)
    runs = [[_tap_runs(t) for t in lines] for lines in (taps, right)]
    width = max(len(r) for lines in runs for r in lines)
    run_table = np.zeros((2, len(factors), width, 3), dtype=np.int64)
    run_counts = np.zeros((2, len(factors)), dtype=np.int64)
    for side_index, lines in enumerate(runs):
        for f, r in enumerate(lines):
            run_table[side_index, f, :len(r)] = r
            run_counts[side_index, f] = len(r)
    plan = (tops, taps.astype(np.int64), right.astype(np.int64),
            np.ascontiguousarray(weights[..., 0]), np.ascontiguousarray(weights[..., 1]),
            np.repeat(weights[..., 0], channels, axis=1), np.repeat(weights[..., 1], channels, axis=1),
            run_table, run_counts, identity)
    for array in plan:
        array.flags.writeable = False
    return plan


@numba.njit(cache=True)
def _gather_runs(row, runs, count, channels, line):
    """``line[c j + k] = row[c (j + d) + k]`` for every run ``(j0, j1, d)`` of ``runs[:count]``, float32 -> float64."""
    for r in range(count):
        first, last, shift = runs[r, 0] * channels, runs[r, 1] * channels, runs[r, 2] * channels
        source = row[first + shift:last + shift]
        target = line[first:last]
        for m in range(last - first):
            target[m] = source[m]


@numba.njit(cache=True)
def _accumulate_zooms(image, tops, rows_left, rows_right, w_left, w_right, w_col_left, w_col_right, runs, run_counts,
                      identity, total):
    """``total = sum(clipped_zoom(image, f) for f in factors)``, in order, without the zoomed arrays.

    ``image`` and ``total`` are float32 (H, H * C): an (H, H, C) image with its channels
    interleaved in the rows. Factor ``f`` reads the crop whose top-left corner is
    ``(tops[f], tops[f])`` with the row taps ``rows_left[f]``, ``rows_right[f]`` and the column
    runs ``runs[0, f]``, ``runs[1, f]`` (left and right taps, :func:`_tap_runs`), the row weights
    ``w_left[f]``, ``w_right[f]`` and the same weights per interleaved sample ``w_col_left[f]``,
    ``w_col_right[f]``. Each value is :func:`_bilinear_resample`'s (scipy's): the four products
    ``(v * w_row) * w_col`` summed from 0 in float64 in its order (upper left, upper right,
    lower left, lower right), rounded to float32 and added to the float32 total, factor after
    factor, as the reference's ``out += clipped_zoom(x, f)`` does. An input row's samples at the
    column taps are gathered once per factor, as contiguous runs (output rows that share an
    input row reuse them), so the sums run over contiguous lines and vectorize. A factor flagged
    in ``identity`` (zoom 1: every tap on a sample, weights 1 and 0) adds ``float32(0.0 + v)``,
    what its four products sum to for finite values.
    """
    side, width = image.shape
    channels = width // side
    total[:] = 0
    lines = np.empty((4, width))
    for f in range(tops.shape[0]):
        if identity[f]:
            for i in range(side):
                source, out = image[i], total[i]
                for m in range(width):
                    out[m] += np.float32(0.0 + source[m])
            continue
        top = tops[f]
        col_left, col_right = w_col_left[f], w_col_right[f]
        runs_left, runs_right, count_left, count_right = runs[0, f], runs[1, f], run_counts[0, f], run_counts[1, f]
        upper0, upper1, lower0, lower1 = lines[0], lines[1], lines[2], lines[3]
        upper_row = lower_row = -1
        for i in range(side):
            r0, r1 = rows_left[f, i], rows_right[f, i]
            if r0 != upper_row:
                if r0 == lower_row:  # the previous lower row is this upper row
                    upper0, lower0 = lower0, upper0
                    upper1, lower1 = lower1, upper1
                    upper_row, lower_row = lower_row, upper_row
                else:
                    row = image[top + r0, top * channels:]
                    _gather_runs(row, runs_left, count_left, channels, upper0)
                    _gather_runs(row, runs_right, count_right, channels, upper1)
                    upper_row = r0
            if r1 != lower_row:
                row = image[top + r1, top * channels:]
                _gather_runs(row, runs_left, count_left, channels, lower0)
                _gather_runs(row, runs_right, count_right, channels, lower1)
                lower_row = r1
            wr0, wr1 = w_left[f, i], w_right[f, i]
            out = total[i]
            for m in range(width):
                t = 0.0 + (upper0[m] * wr0) * col_left[m]
                t += (upper1[m] * wr0) * col_right[m]
                t += (lower0[m] * wr1) * col_left[m]
                t += (lower1[m] * wr1) * col_right[m]
                out[m] += np.float32(t)


def zoom_sum(image: np.ndarray, zoom_factors) -> np.ndarray:
    """``sum(clipped_zoom(image, f) for f in zoom_factors)``, accumulated in order in float32.

    Bit for bit ``total = zeros_like(image); for f in zoom_factors: total += clipped_zoom(image, f)``
    (the reference's zoom blur), in one pass that keeps no zoomed image.

    Parameters
    ----------
    image : numpy.ndarray
        float32, shape (H, H, 3), finite values.
    zoom_factors : sequence of float
        Each >= 1.

    Returns
    -------
    numpy.ndarray
        float32, shape of ``image``.
    """
    _check_square_float(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.float32:
        raise ValueError(f"image must be a float32 (H, H, 3) array, got {image.dtype} {image.shape}")
    factors = tuple(float(f) for f in zoom_factors)
    if not all(f >= 1 for f in factors):
        raise ValueError(f"zoom factors must be >= 1, got {list(zoom_factors)!r}")
    if not factors:
        return np.zeros_like(image)
    side, channels = image.shape[0], image.shape[2]
    image = np.ascontiguousarray(image)
    total = np.empty_like(image)
    _accumulate_zooms(image.reshape(side, side * channels), *_zoom_plan(side, factors, channels),
                      total.reshape(side, side * channels))
    return total


def _check_square_float(image) -> None:
    """Raise ``ValueError`` unless ``image`` is a float32/float64 array of shape (H, H) or (H, H, C)."""
    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.shape[0] != image.shape[1]:
        raise ValueError("image must be a square array of shape (H, H) or (H, H, C), got "
                         f"{getattr(image, 'shape', type(image))}")
    if image.dtype not in (np.float32, np.float64):
        raise ValueError(f"image must be float32 or float64, got {image.dtype}")


def clipped_zoom(image: np.ndarray, zoom_factor: float) -> np.ndarray:
    """Zoom into the centre of a square image, keeping its size (the reference ``clipped_zoom``).

    The central ``ceil(H / zoom_factor)`` square is enlarged as ``scipy.ndimage.zoom``
    (bilinear, ``order=1``, corners aligned) enlarges it, then the result is trimmed back to
    H x H by the same centred offset on both axes (``docs/reference/algorithms.md``, "Clipped zoom"). Only
    the kept window is computed; the values are bit for bit those of scipy.

    Parameters
    ----------
    image : numpy.ndarray
        Shape (H, H) or (H, H, C), float32 or float64; the dtype is kept.
    zoom_factor : float
        Enlargement, >= 1.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``image``.
    """
    _check_square_float(image)
    if not zoom_factor >= 1:
        raise ValueError(f"zoom_factor must be >= 1, got {zoom_factor!r}")
    side = image.shape[0]
    top, crop, taps, weights = _zoom_window(side, zoom_factor)
    centre = image[top:top + crop, top:top + crop]
    if image.ndim == 2:
        centre = centre[..., np.newaxis]
    out = np.empty((side, side, centre.shape[2]), dtype=image.dtype)
    _bilinear_resample(centre, taps, weights, taps, weights, out)
    return out[..., 0] if image.ndim == 2 else out


@numba.njit(cache=True)
def _reflect_coordinate(c, n):
    """scipy's ``map_coordinate`` for mode 'reflect': ``c`` folded into a line of ``n`` samples.

    Half-sample symmetric (``dcba|abcd|dcba``), with scipy's guard that keeps a tiny negative
    ``c`` from landing on -1.
    """
    if n <= 1 and (c < 0 or c > n - 1):
        return 0.0
    if c < 0:
        period = 2 * n
        if c < -period:
            c = period * int(-c / period) + c
        c = c + period if c < -n else (1e-15 if c > -1e-15 else -c) - 1
    elif c > n - 1:
        period = 2 * n
        c -= period * int(c / period)
        if c >= n:
            c = period - c - 1
    return c


@numba.njit(cache=True)
def _linear_taps(c, n):
    """Input indices and weights of the two samples that linear interpolation at ``c`` combines.

    scipy's rules: left weight ``1 - (c - floor(c))``, right weight ``1`` minus that; taps
    outside the line are reflected like coordinates.
    """
    start = int(np.floor(c))
    left = 1.0 - (c - np.floor(c))
    first, second = start, start + 1
    if start < 0 or start + 1 >= n:
        first = int(_reflect_coordinate(float(first), n))
        second = int(_reflect_coordinate(float(second), n))
    return first, second, left, 1.0 - left


@numba.njit(cache=True)
def _sample_reflect(image, row_shift, col_shift, to_255, out, weights, taps, outside, samples):
    """Bilinear samples of every channel at ``(i + row_shift[i, j], j + col_shift[i, j])``.

    The operations of scipy's ``NI_GeometricTransform`` for ``order=1, mode='reflect'``: each
    coordinate is folded by :func:`_reflect_coordinate` (a result not above -1 gives ``cval``
    0), the taps are reflected at the border, and the four products ``(v * w_row) * w_col``
    are summed from 0 in row-major order, in float64. A position with both coordinates in
    ``[0, n - 1)`` needs neither folding nor reflected taps (both are the identity there).
    With ``to_255`` each sample, once stored in ``out``'s dtype, becomes
    ``min(max(v, 0), 1) * 255`` (:func:`transforms.units.clip_to_255`; the product of a float32
    and 255 is exact in float64, so rounding it once to float32 is the float32 product).

    A row of outputs is made in passes, as if every position lay inside: the taps and weights
    (the top-left tap clamped into the image, so that every read stays in it), the four
    neighbours of each channel copied into the rows of ``samples`` (scalar loads: the only
    gathers), the products and sums of the whole row, then ``to_255``'s clip and scale. All
    but the copies vectorise. The positions flagged in ``outside`` are then made again, one at
    a time, by :func:`_sample_outside`. ``weights`` (float64, (4, W)), ``taps`` (int64, (W,)),
    ``outside`` (bool, (W,)) and ``samples`` (the image's dtype, (4 C, W)) are scratch.
    """
    height, width, channels = image.shape
    last_row, last_col = height - 1, width - 1
    if height < 2 or width < 2:  # no position lies inside
        for i in range(height):
            for j in range(width):
                _sample_outside(image, float(i) + np.float64(row_shift[i, j]),
                                float(j) + np.float64(col_shift[i, j]), to_255, out[i, j])
        return
    flat = image.reshape(-1)
    row_top, col_top = float(height - 2), float(width - 2)
    for i in range(height):
        shifts_down, shifts_right, line = row_shift[i], col_shift[i], out[i].reshape(-1)
        for j in range(width):
            row = float(i) + np.float64(shifts_down[j])
            col = float(j) + np.float64(shifts_right[j])
            outside[j] = not (0.0 <= row < last_row and 0.0 <= col < last_col)
            # floor for a position inside; any other (NaN included) gets a tap in the image
            r0 = int(min(row if row > 0.0 else 0.0, row_top))
            c0 = int(min(col if col > 0.0 else 0.0, col_top))
            wr0 = 1.0 - (row - r0)
            wc0 = 1.0 - (col - c0)
            weights[0, j], weights[1, j], weights[2, j], weights[3, j] = wr0, 1.0 - wr0, wc0, 1.0 - wc0
            taps[j] = (r0 * width + c0) * channels
        if channels == 3:  # a constant count: the channel loops unroll
            _interpolate_row(flat, taps, weights, width * 3, 3, samples, line)
        else:
            _interpolate_row(flat, taps, weights, width * channels, channels, samples, line)
        if to_255:
            for m in range(line.shape[0]):
                line[m] = min(max(line[m], 0.0), 1.0) * 255
        for j in range(width):
            if outside[j]:
                _sample_outside(image, float(i) + np.float64(shifts_down[j]),
                                float(j) + np.float64(shifts_right[j]), to_255, out[i, j])


@numba.njit(cache=True, inline="always")
def _interpolate_row(flat, taps, weights, stride, channels, samples, line):
    """One row of :func:`_sample_reflect` as if inside: ``line[C j + k]`` = the four products
    ``(v * w_row) * w_col`` of channel k around position j, summed from 0 in float64, in
    ``line``'s dtype. The neighbours are first copied into ``samples``, then combined."""
    for j in range(taps.shape[0]):
        first = taps[j]
        for k in range(channels):
            samples[4 * k, j] = flat[first + k]
            samples[4 * k + 1, j] = flat[first + channels + k]
            samples[4 * k + 2, j] = flat[first + stride + k]
            samples[4 * k + 3, j] = flat[first + stride + channels + k]
    wr0, wr1, wc0, wc1 = weights[0], weights[1], weights[2], weights[3]
    for k in range(channels):
        v00, v01, v10, v11 = samples[4 * k], samples[4 * k + 1], samples[4 * k + 2], samples[4 * k + 3]
        for j in range(taps.shape[0]):
            t = 0.0
            t += v00[j] * wr0[j] * wc0[j]
            t += v01[j] * wr0[j] * wc1[j]
            t += v10[j] * wr1[j] * wc0[j]
            t += v11[j] * wr1[j] * wc1[j]
            line[channels * j + k] = t


@numba.njit(cache=True)
def _sample_outside(image, row, col, to_255, o):
    """:func:`_sample_reflect`'s value at one position: coordinates folded, taps reflected."""
    height, width, channels = image.shape
    row = _reflect_coordinate(row, height)
    col = _reflect_coordinate(col, width)
    if not (row > -1.0 and col > -1.0):
        o[:] = 0.0
        return
    r0, r1, wr0, wr1 = _linear_taps(row, height)
    c0, c1, wc0, wc1 = _linear_taps(col, width)
    p00, p01, p10, p11 = image[r0, c0], image[r0, c1], image[r1, c0], image[r1, c1]
    for k in range(channels):
        _store_sample(o, k, p00[k], p01[k], p10[k], p11[k], wr0, wr1, wc0, wc1, to_255)


@numba.njit(cache=True, inline="always")
def _store_sample(o, k, v00, v01, v10, v11, wr0, wr1, wc0, wc1, to_255):
    """``o[k]`` = the four products ``(v * w_row) * w_col`` summed from 0 in float64, in ``o``'s dtype
    (then ``min(max(., 0), 1) * 255`` with ``to_255``)."""
    t = 0.0
    t += v00 * wr0 * wc0
    t += v01 * wr0 * wc1
    t += v10 * wr1 * wc0
    t += v11 * wr1 * wc1
    o[k] = t
    if to_255:
        o[k] = min(max(o[k], 0.0), 1.0) * 255


def displace_reflect(image: np.ndarray, row_shift: np.ndarray, col_shift: np.ndarray, *,
                     to_255: bool = False) -> np.ndarray:
    """Resample an image at per-pixel shifted positions, bilinear, reflecting at the borders.

    Output pixel (i, j) is the image sampled at row ``i + row_shift[i, j]`` and column
    ``j + col_shift[i, j]``: per channel, exactly ``scipy.ndimage.map_coordinates(channel,
    (rows, cols), order=1, mode='reflect')`` with float64 coordinates (scipy >= 1.6 rules).

    Parameters
    ----------
    image : numpy.ndarray
        float32 or float64, shape (H, W, C).
    row_shift, col_shift : numpy.ndarray
        float32 or float64, shape (H, W): displacements in pixels (rows down, columns right).
    to_255 : bool
        Return ``transforms.units.clip_to_255`` of the samples (``clip(v, 0, 1) * 255`` in the
        image's dtype), computed in the same pass, bit for bit.

    Returns
    -------
    numpy.ndarray
        Shape and dtype of ``image``.

    Examples
    --------
    >>> import numpy as np
    >>> from transforms.geometry import displace_reflect
    >>> image = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    >>> half = np.full((2, 3), 0.5, np.float32)
    >>> displace_reflect(image, half * 0, half)[..., 0].tolist()   # half a pixel right; reflected at the edge
    [[1.0, 3.0, 4.0], [7.0, 9.0, 10.0]]
    >>> displace_reflect(image / 8, half * 0, half, to_255=True)[..., 0].tolist()
    [[31.875, 95.625, 127.5], [223.125, 255.0, 255.0]]
    """
    if image.ndim != 3 or row_shift.shape != image.shape[:2] or col_shift.shape != image.shape[:2]:
        raise ValueError(f"need an (H, W, C) image and two (H, W) shift fields; got {image.shape}, "
                         f"{row_shift.shape}, {col_shift.shape}")
    image = np.ascontiguousarray(image)
    height, width, channels = image.shape
    out = np.empty_like(image)
    _sample_reflect(image, row_shift, col_shift, bool(to_255), out, np.empty((4, width)), np.empty(width, np.int64),
                    np.empty(width, np.bool_), np.empty((4 * channels, width), image.dtype))
    return out
