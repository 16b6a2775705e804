"""analysis.stats.normal_cdf is scipy.special.ndtr bit for bit: every p-value compare stores and prints depends on it."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from regress.analysis import stats


def test_the_cdf_is_scipys_exactly():
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 1.0, -1.0, math.sqrt(2), -math.sqrt(2), 8 * math.sqrt(2), -8 * math.sqrt(2), 1e-300, -1e-300]
    edges += [
        -37.5,
        -38.5,
        -40.0,
        40.0,
        math.inf,
        -math.inf,
        np.nextafter(math.sqrt(2), 0),
        -np.nextafter(8 * math.sqrt(2), 0),
    ]
    x = np.concatenate([rng.normal(0, 3, 150_000), rng.uniform(-40, 40, 50_000), rng.uniform(-1.5, 1.5, 50_000), edges])
    want = special.ndtr(x)
    got = np.array([stats.normal_cdf(float(v)) for v in x])
    assert np.array_equal(got, want), x[got != want][:5]
    assert math.isnan(stats.normal_cdf(math.nan))


def test_the_quantiles_are_scipys():
    assert stats.Z == float(special.ndtri(0.975)) == float(special.ndtri(1 - stats.ALPHA / 2))
    assert float(special.ndtri(0.75)) == stats.Z_75
    assert stats.normal_cdf(stats.Z) == float(special.ndtr(stats.Z))
