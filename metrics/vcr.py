"""VCR's curves and metrics: performance against Delta v, areas, HMRI and MRSI (pure NumPy / SciPy).

The recipe of VCR's analysis (``docs/reference/algorithms.md``, "VCR analysis"):

1. Bin the records by Delta v: bin i holds ``i/n < delta_v < (i+1)/n`` (strict; values on a
   boundary, <= 0 or >= 1 are dropped); a bin's value is the mean of the outcome (correct, or
   consistent with the clean prediction).
2. Fit ``scipy.interpolate.UnivariateSpline(x, y, k=3, s=0.04)`` without weights, ``x_i = i/n``
   (the bins' left edges). An empty bin counts as 0 (VCR's code).
3. Evaluate on ``t_j = j/10000``, j = 0..9999, clip to [0, 1] and take the running minimum: the
   non-increasing curve ``f``.
4. Areas by the trapezoid rule on ``t``: ``A = int f``; against a human curve ``f_h``:
   ``A_m-h = int max(f_m - f_h, 0)``, ``A_h-m = int max(f_h - f_m, 0)``,
   ``P_m-h = 1 - A_m-h / A_m``, ``P_h-m = 1 - A_h-m / A_h``; HMRI = P_h-m, MRSI = A_m-h / A_m.

Two deviations are offered and recorded, never silent: ``empty_bin='drop'`` (leave empty bins out
of the fit) and ``knots='centre'`` (``x_i = (i + 0.5)/n``).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
from scipy.interpolate import UnivariateSpline, splev

from schemas.vcr import BINS, CURVE_POINTS, EMPTY_BIN_MODES, KNOT_MODES, SMOOTHING, SPLINE_DEGREE

__all__ = ["curve_grid", "bin_values", "bin_positions", "fit_spline", "monotone_curve", "tck_function",
           "points_function", "area", "compare_curves", "performance_area", "performance_curve"]


def curve_grid(points: int = CURVE_POINTS) -> np.ndarray:
    """``t_j = j / points``, j = 0..points-1: the grid the curves live on (stops short of 1)."""
    return np.arange(points) / points


def bin_values(delta_v, outcome, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """Mean outcome per Delta v bin.

    Parameters
    ----------
    delta_v : array_like of float
        Delta v of each record.
    outcome : array_like of bool or float
        1 / True where the record counts (correct, consistent), per record.
    bins : int
        Number of bins n over [0, 1].

    Returns
    -------
    values : numpy.ndarray
        float64 (n,): the mean outcome of bin i (records with ``i/n < delta_v < (i+1)/n``); NaN
        where the bin is empty.
    counts : numpy.ndarray
        int64 (n,): records per bin.

    Examples
    --------
    >>> from metrics.vcr import bin_values
    >>> values, counts = bin_values([0.05, 0.1, 0.3, 0.35, 0.9], [1, 1, 1, 0, 0], bins=4)
    >>> values.tolist(), counts.tolist()
    ([1.0, 0.5, nan, 0.0], [2, 2, 0, 1])
    """
    delta_v = np.asarray(delta_v, dtype=np.float64)
    outcome = np.asarray(outcome, dtype=np.float64)
    if delta_v.shape != outcome.shape or delta_v.ndim != 1:
        raise ValueError(f"delta_v and outcome must be 1-D of one length; got {delta_v.shape} and {outcome.shape}")
    values, counts = np.full(bins, np.nan), np.zeros(bins, dtype=np.int64)
    for i in range(bins):
        inside = (delta_v > i / bins) & (delta_v < (i + 1) / bins)
        counts[i] = int(inside.sum())
        if counts[i]:
            values[i] = outcome[inside].mean()
    return values, counts


def bin_positions(bins: int = BINS, knots: str = "left") -> np.ndarray:
    """Delta v of each bin in the fit: ``i/n`` (``left``, VCR's code) or ``(i + 0.5)/n`` (``centre``)."""
    if knots not in KNOT_MODES:
        raise ValueError(f"knots must be one of {', '.join(KNOT_MODES)}; got {knots!r}")
    return (np.arange(bins) + (0.5 if knots == "centre" else 0.0)) / bins


def fit_spline(values, *, smoothing: float = SMOOTHING, empty_bin: str = "zero", knots: str = "left",
               degree: int = SPLINE_DEGREE) -> UnivariateSpline:
    """The unweighted smoothing spline through the bin values.

    Parameters
    ----------
    values : array_like of float
        Bin values (NaN for an empty bin), as :func:`bin_values` returns them.
    smoothing : float
        ``s`` of ``UnivariateSpline`` (>= 0).
    empty_bin : str
        ``zero``: an empty bin is the point (x_i, 0), as VCR's code; ``drop``: it is left out.
    knots : str
        See :func:`bin_positions`.
    degree : int
        Spline degree k.

    Raises
    ------
    ValueError
        On an unknown mode, or fewer than k + 1 usable bins.
    """
    if empty_bin not in EMPTY_BIN_MODES:
        raise ValueError(f"empty_bin must be one of {', '.join(EMPTY_BIN_MODES)}; got {empty_bin!r}")
    y = np.asarray(values, dtype=np.float64)
    x = bin_positions(len(y), knots)
    empty = np.isnan(y)
    if empty_bin == "zero":
        y = np.where(empty, 0.0, y)
    else:
        x, y = x[~empty], y[~empty]
    if len(y) < degree + 1:
        raise ValueError(f"a degree-{degree} spline needs at least {degree + 1} non-empty bins; got {len(y)}")
    return UnivariateSpline(x, y, k=degree, s=smoothing)


def monotone_curve(function: Callable[[np.ndarray], np.ndarray], points: int = CURVE_POINTS) -> np.ndarray:
    """``f_j = min_{j' <= j} clip(function(t_j'), 0, 1)`` on :func:`curve_grid`: non-increasing, in [0, 1]."""
    return np.minimum.accumulate(np.clip(np.asarray(function(curve_grid(points)), dtype=np.float64), 0.0, 1.0))


def tck_function(t, c, k) -> Callable[[np.ndarray], np.ndarray]:
    """A FITPACK B-spline ``(t, c, k)`` as a function, evaluated with ``splev`` (ext 0: extrapolate)."""
    tck = (np.asarray(t, dtype=np.float64), np.asarray(c, dtype=np.float64), int(k))
    return lambda x: splev(x, tck, ext=0)


def points_function(v, y) -> Callable[[np.ndarray], np.ndarray]:
    """Piecewise-linear through ascending ``(v, y)``; constant beyond the first and last points."""
    v, y = np.asarray(v, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return lambda x: np.interp(x, v, y)


def area(curve: np.ndarray) -> float:
    """Trapezoid integral of a curve on :func:`curve_grid` (its length sets the grid)."""
    return float(np.trapezoid(curve, curve_grid(len(curve))))


def compare_curves(model: np.ndarray, human: Optional[np.ndarray] = None) -> dict:
    """Areas of a model curve, and against a human curve when given.

    Returns
    -------
    dict
        ``A_m``; with ``human`` also ``A_h``, ``A_m-h``, ``A_h-m``, ``P_m-h``, ``P_h-m``, ``HMRI``
        (= P_h-m) and ``MRSI`` (= A_m-h / A_m). A ratio whose denominator is 0 is None.

    Examples
    --------
    >>> import numpy as np
    >>> from metrics.vcr import compare_curves, curve_grid
    >>> v = curve_grid()
    >>> model, human = np.clip(1 - v, 0, 1), np.clip(1 - v / 2, 0, 1)
    >>> {k: None if x is None else round(x, 3) for k, x in compare_curves(model, human).items()}
    {'A_m': 0.5, 'A_h': 0.75, 'A_m-h': 0.0, 'A_h-m': 0.25, 'P_m-h': 1.0, 'P_h-m': 0.667, 'HMRI': 0.667, 'MRSI': 0.0}
    """
    result = {"A_m": area(model)}
    if human is None:
        return result
    if human.shape != model.shape:
        raise ValueError(f"model and human curves differ in length: {model.shape} vs {human.shape}")
    a_m, a_h = result["A_m"], area(human)
    above = area(np.maximum(model - human, 0.0))
    below = area(np.maximum(human - model, 0.0))

    def ratio(a, b):
        return None if b == 0 else a / b

    p_mh = None if a_m == 0 else 1 - above / a_m
    p_hm = None if a_h == 0 else 1 - below / a_h
    result.update({"A_h": a_h, "A_m-h": above, "A_h-m": below, "P_m-h": p_mh, "P_h-m": p_hm,
                   "HMRI": p_hm, "MRSI": ratio(above, a_m)})
    return result


def performance_area(values) -> float:
    """VCR's ``performance_area``: trapezoid of bin values against ``linspace(0, 1, n)``, NaNs skipped."""
    values = np.asarray(values, dtype=np.float64)
    x = np.linspace(0, 1, len(values))
    keep = ~np.isnan(values)
    return float(np.trapezoid(values[keep], x[keep]))


def performance_curve(delta_v, outcome, *, bins: int = BINS, smoothing: float = SMOOTHING,
                      empty_bin: str = "zero", knots: str = "left") -> dict:
    """Bin, fit and make monotone: everything of one performance property of one corruption.

    Returns
    -------
    dict
        ``values`` and ``counts`` per bin, the ``spline`` (``UnivariateSpline``), its ``tck``
        (t, c, k lists) and the monotone ``curve`` (numpy array on :func:`curve_grid`).

    Examples
    --------
    >>> import numpy as np
    >>> from metrics.vcr import performance_curve
    >>> rng = np.random.RandomState(0)
    >>> delta_v = rng.uniform(0, 1, 400)
    >>> correct = rng.uniform(0, 1, 400) > delta_v  # accuracy falls as Delta v grows
    >>> result = performance_curve(delta_v, correct)
    >>> result['curve'].shape, bool(np.all(np.diff(result['curve']) <= 0))
    ((10000,), True)
    >>> round(float(result['curve'][0]), 2), round(float(result['curve'][-1]), 2)
    (1.0, 0.0)
    """
    values, counts = bin_values(delta_v, outcome, bins)
    spline = fit_spline(values, smoothing=smoothing, empty_bin=empty_bin, knots=knots)
    t, c, k = spline._eval_args
    return {"values": values, "counts": counts, "spline": spline,
            "tck": {"t": [float(a) for a in t], "c": [float(a) for a in c], "k": int(k)},
            "curve": monotone_curve(spline)}
