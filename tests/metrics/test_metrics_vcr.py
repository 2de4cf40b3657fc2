"""metrics.vcr against three metric test vectors M1-M3 (printed to 6 decimals)."""
import numpy as np
import pytest
from scipy.interpolate import UnivariateSpline

from metrics.vcr import (bin_positions, bin_values, compare_curves, fit_spline, monotone_curve, performance_area,
                         performance_curve, points_function, tck_function)

PRINTED = 5e-7 + 1e-12
ORDER = ("A_m", "A_h", "A_m-h", "A_h-m", "P_m-h", "P_h-m")


def _close(result, expected):
    got = [result[k] for k in ORDER]
    np.testing.assert_allclose(got, expected, rtol=0, atol=PRINTED)


def records(p, n, seed):
    rs = np.random.RandomState(seed)
    v = rs.uniform(0, 1, n)
    ok = rs.uniform(size=n) < p(v)
    cons = rs.uniform(size=n) < np.minimum(1, p(v) + 0.05)
    transf = np.where(ok, 0, 1)
    orig = np.where(cons, transf, 2)
    return v, transf == 0, transf == orig


MODEL = records(lambda v: 0.9 - 0.8 * v, 4000, 0)
HUMAN = records(lambda v: 0.95 - 0.45 * v ** 2, 4000, 1)


def test_m1_toy_curves():
    x = [0, .2, .4, .6, .8, 1]
    model = monotone_curve(UnivariateSpline(x, [.95, .95, .90, .70, .30, .10]))
    human = monotone_curve(UnivariateSpline(x, [.80, .80, .80, .75, .60, .50]))
    result = compare_curves(model, human)
    _close(result, (0.671090, 0.718304, 0.059324, 0.106538, 0.911601, 0.851681))
    assert abs(result["HMRI"] - 0.851681) <= PRINTED and abs(result["MRSI"] - 0.088399) <= PRINTED


def test_m2_bins_splines_and_areas():
    values, counts = bin_values(MODEL[0], MODEL[1])
    np.testing.assert_allclose(values, [0.886700, 0.807487, 0.847222, 0.797030, 0.770492, 0.649770, 0.635556,
                                        0.582090, 0.602871, 0.524064, 0.468421, 0.447917, 0.434555, 0.370968,
                                        0.355670, 0.261307, 0.263682, 0.224599, 0.164948, 0.122881], atol=PRINTED)
    assert counts.sum() == 4000
    spline = fit_spline(values)
    np.testing.assert_allclose(spline(bin_positions()), [
        0.889681, 0.849537, 0.809531, 0.769642, 0.729846, 0.690123, 0.650451, 0.610808, 0.571173, 0.531524,
        0.491839, 0.452096, 0.412274, 0.372351, 0.332306, 0.292117, 0.251761, 0.211218, 0.170466, 0.129482],
        atol=PRINTED)
    human_values, _ = bin_values(HUMAN[0], HUMAN[1])
    np.testing.assert_allclose(fit_spline(human_values)(bin_positions()), [
        0.937577, 0.943237, 0.944585, 0.941894, 0.935439, 0.925493, 0.912330, 0.896225, 0.877452, 0.856285,
        0.832998, 0.807866, 0.781161, 0.753159, 0.724134, 0.694359, 0.664109, 0.633658, 0.603280, 0.573249],
        atol=PRINTED)
    model_acc, human_acc = performance_curve(MODEL[0], MODEL[1]), performance_curve(HUMAN[0], HUMAN[1])
    _close(compare_curves(model_acc["curve"], human_acc["curve"]),
           (0.490871, 0.801303, 0.000000, 0.310431, 1.000000, 0.612592))
    model_cons, human_cons = performance_curve(MODEL[0], MODEL[2]), performance_curve(HUMAN[0], HUMAN[2])
    _close(compare_curves(model_cons["curve"], human_cons["curve"]),
           (0.534378, 0.833939, 0.000000, 0.299561, 1.000000, 0.640788))
    assert abs(performance_area(values) - 0.511234) <= PRINTED
    assert abs(performance_area(spline(bin_positions())) - 0.510981) <= PRINTED
    # the fitted spline travels as (t, c, k) and evaluates to the same curve
    tck = model_acc["tck"]
    np.testing.assert_array_equal(monotone_curve(tck_function(tck["t"], tck["c"], tck["k"])), model_acc["curve"])


def test_m3_empty_bin_zero_and_drop():
    v, ok, _ = MODEL
    keep = ~((v > 0.25) & (v < 0.30))
    human = performance_curve(HUMAN[0], HUMAN[1])["curve"]
    zero = performance_curve(v[keep], ok[keep])
    assert zero["counts"][5] == 0 and np.isnan(zero["values"][5])
    _close(compare_curves(zero["curve"], human), (0.261670, 0.801303, 0.000000, 0.539633, 1.000000, 0.326556))
    dropped = performance_curve(v[keep], ok[keep], empty_bin="drop")
    assert abs(compare_curves(dropped["curve"])["A_m"] - 0.490871) < 0.01  # close to M2's, far from 0.26
    centre = performance_curve(v, ok, knots="centre")
    assert compare_curves(centre["curve"])["A_m"] != compare_curves(performance_curve(v, ok)["curve"])["A_m"]


def test_curve_helpers_and_errors():
    f = monotone_curve(points_function([0, 0.5, 1], [0.9, 1.2, 0.1]))
    assert f[0] == 0.9 and np.all(np.diff(f) <= 0) and f.min() >= 0
    assert compare_curves(np.zeros(10000), np.zeros(10000))["HMRI"] is None
    with pytest.raises(ValueError, match="non-empty bins"):
        fit_spline([np.nan] * 17 + [1, 1, 1], empty_bin="drop")
    with pytest.raises(ValueError, match="empty_bin"):
        fit_spline(np.ones(20), empty_bin="previous")
