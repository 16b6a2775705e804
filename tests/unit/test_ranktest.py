"""analysis.stats.mann_whitney_p is scipy's (to the bit on the exact branch, to 1e-13 on the normal one), and
the change points' numpy median filter and noise scale are scipy's to the bit: the change points' tests and clipping depend
on them, and a site build no longer imports scipy.stats."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from scipy.ndimage import median_filter

from regress.analysis import changepoints, levels
from regress.analysis import stats as ours


def _samples(rng, n1: int, n2: int, tied: bool):
    x, y = rng.normal(0, 1, n1), rng.normal(rng.normal(0, 1.5), 1, n2)
    return (np.round(x, 1), np.round(y, 1)) if tied else (x, y)


@pytest.mark.parametrize("tied", [False, True])
def test_the_p_value_is_scipys(tied):
    rng = np.random.default_rng(11 + tied)
    # Both of scipy's branches: the exact distribution (the smaller sample at most 8, no ties), the
    # normal approximation; samples long enough that the exact counts pass 2^53 (scipy's float dot).
    shapes = [(int(rng.integers(1, 12)), int(rng.integers(1, 40))) for _ in range(600)]
    shapes += [(8, 900), (3, 1000), (9, 9), (8, 8), (1, 1), (2, 500), (12, 700)]
    for n1, n2 in shapes:
        x, y = _samples(rng, n1, n2, tied)
        for a, b in ((x, y), (y, x)):
            want = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
            got = ours.mann_whitney_p(a, b)
            exact = min(len(a), len(b)) <= ours.EXACT_UP_TO and len(set(a) | set(b)) == len(a) + len(b)
            assert got == want if exact else math.isclose(got, want, rel_tol=1e-13), (len(a), len(b), tied)


def test_extremes_match_scipy():
    cases = [([1.0, 2.0], [3.0, 4.0]), ([1.0] * 5, [1.0] * 7), ([0.5], [0.5, 0.7]), (list(range(20)), [100.0] * 3)]
    for a, b in cases:
        want = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
        got = ours.mann_whitney_p(a, b)
        assert math.isclose(got, want, rel_tol=1e-13) or (math.isnan(got) and math.isnan(want)), (a, b, got, want)


def test_running_median_and_noise_scale_are_scipys():
    rng = np.random.default_rng(5)
    for n in [*range(3, 30), 200, 1000]:
        for x in (np.log(rng.lognormal(0, 0.05, n)), np.round(rng.normal(0, 1, n), 1)):
            assert np.array_equal(
                changepoints.running_median(x), median_filter(x, size=changepoints.WINDOW, mode="mirror")
            )
            d = np.diff(x[: levels.CALIBRATION])
            want = max(float(stats.median_abs_deviation(d, scale="normal")) / math.sqrt(2), levels.MIN_NOISE)
            assert levels.history_scale(x) == want


def test_change_points_import_no_scipy_stats():
    code = (
        "import sys, numpy as np; from regress.analysis import changepoints, levels, stats;"
        "changepoints.robust(np.linspace(0, 1, 50), levels.history_scale(np.linspace(0, 1, 50)));"
        "stats.mann_whitney_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);"
        "print(sorted(m for m in ('scipy.stats', 'scipy.ndimage') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
