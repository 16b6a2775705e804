"""analysis.stats.normal_cdf is scipy.special.ndtr to the digits a p-value shows, and the critical values are
scipy's quantiles."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from regress.analysis import stats


def test_the_cdf_is_scipys_to_a_p_values_digits():
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 1.0, -1.0, math.sqrt(2), -math.sqrt(2), 8 * math.sqrt(2), -8 * math.sqrt(2), 1e-300, -1e-300]
    edges += [-37.5, -38.5, -40.0, 40.0, math.inf, -math.inf]
    x = np.concatenate([rng.normal(0, 3, 150_000), rng.uniform(-40, 40, 50_000), rng.uniform(-1.5, 1.5, 50_000), edges])
    want = special.ndtr(x)
    got = np.array([stats.normal_cdf(float(v)) for v in x])
    shown = want > 1e-20  # a p-value that small prints as p<0.001 all the same
    assert np.allclose(got[shown], want[shown], rtol=2e-14, atol=0), x[shown][~np.isclose(got[shown], want[shown])][:5]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-300)
    assert stats.normal_cdf(-math.inf) == 0.0 and stats.normal_cdf(math.inf) == 1.0 and stats.normal_cdf(0.0) == 0.5
    assert math.isnan(stats.normal_cdf(math.nan))


def test_the_quantiles_are_scipys():
    assert stats.Z == float(special.ndtri(0.975)) == float(special.ndtri(1 - stats.ALPHA / 2))
    assert float(special.ndtri(0.75)) == stats.Z_75
    assert math.isclose(stats.normal_cdf(stats.Z), 0.975, rel_tol=1e-15)
