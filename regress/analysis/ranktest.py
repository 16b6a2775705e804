"""The two-sided Mann-Whitney U test, as scipy.stats.mannwhitneyu computes it, without importing scipy.stats.

scipy's default ("auto") step by step: the exact null distribution when the
smaller sample has at most 8 values and nothing ties, else the normal
approximation with the tie and continuity corrections (`normal.cdf`). The
exact branch counts and divides in scipy's arithmetic, so the p-values are
scipy's (tests/unit/test_ranktest.py). Pure.
"""

from __future__ import annotations

import math

import numpy as np

from regress.analysis import normal

# scipy's "auto": the exact distribution while the smaller sample is at most this long (and no ties).
EXACT_UP_TO = 8


def p_value(x, y) -> float:
    """Two-sided p-value of the Mann-Whitney U test of samples x and y (nonempty, no NaN)."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    n1, n2 = len(x), len(y)
    ranks, ties = _ranks(np.concatenate([x, y]))
    u1 = float(np.sum(ranks[:n1])) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if min(n1, n2) <= EXACT_UP_TO and not (ties > 1).any():
        p = _exact_sf(int(u), min(n1, n2), max(n1, n2))
    else:
        n = n1 + n2
        tie_term = float(np.sum(ties**3 - ties))
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / s if s > 0 else math.copysign(math.inf, u - n1 * n2 / 2 - 0.5)
        p = normal.cdf(-z) if not math.isnan(z) else math.nan
    return min(max(2 * p, 0.0), 1.0)


def _ranks(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) of v, and the size of every group of equal values."""
    order = np.argsort(v, kind="mergesort")
    s = v[order]
    first = np.r_[True, s[1:] != s[:-1]]
    starts = np.flatnonzero(first)
    counts = np.diff(np.r_[starts, len(v)]).astype(float)
    average = starts + (counts + 1) / 2  # the mean of ranks start+1 .. start+count
    ranks = np.empty(len(v))
    ranks[order] = np.repeat(average, counts.astype(np.int64))
    return ranks, counts


def _exact_sf(u: int, n1: int, n2: int) -> float:
    """P(U >= u) under the null, u >= n1 n2 / 2: by symmetry P(U <= n1 n2 - u), summed as scipy does."""
    k = n1 * n2 - u
    total = _binom(n1 + n2, n1)
    return float(np.cumsum(_arrangements(n1, n2, k) / total)[k])


def _arrangements(n1: int, n2: int, upto: int) -> np.ndarray:
    """Number of orderings of n1 values among n2 others (n1 <= n2) with U = 0..upto, by Loeffler's
    recurrence u f(u) = sum_i sigma(i) f(u - i), sigma(i) the sum of i's divisors up to n1 less
    those above n2. In scipy's arithmetic: uint64 counts, each new one a float dot product (which
    rounds above 2^53, as scipy's does), floats once a count passes 2^64."""
    sigma = np.zeros(upto + 1, dtype=int)
    for d in range(1, n1 + 1):
        sigma[d::d] += d
    for d in range(n2 + 1, n1 + n2 + 1):
        sigma[d::d] -= d
    counts = np.zeros(upto + 1, dtype=np.uint64)
    counts[0] = 1
    exact, most = True, np.iinfo(np.uint64).max
    for u in range(1, upto + 1):
        value = np.dot(counts[:u], sigma[u:0:-1]) / u
        if exact and value > most:
            counts, exact = counts.astype(float), False
        counts[u] = value
    return counts


def _binom(n: int, k: int) -> float:
    """scipy.special.binom for integer n and small k, in its own float loop (so the division matches)."""
    if k > n / 2 and n > 0:
        k = n - k
    num = den = 1.0
    for i in range(1, k + 1):
        num *= i + n - k
        den *= i
        if abs(num) > 1e50:
            num /= den
            den = 1.0
    return num / den
