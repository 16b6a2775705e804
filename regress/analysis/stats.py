"""The statistics behind `compare` and `regressions`: a round is read as its fastest block, a commit's level is
its fastest round (the floor), and a shift's interval is the exact percentile bootstrap widened by floor gaps,
busyness and an allowance for drift. docs/statistics.md ("The level", "The verdict"). Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from regress.core import blocks
from regress.core.records import BenchmarkResult, Sample

ALPHA = 0.05  # two-sided: the interval is 1 - ALPHA, and p < ALPHA exactly when it excludes 1
MIN_ESTIMATE_SHARE = 0.5  # a change's estimate is at least this share of the threshold (besides its interval)
FEWEST_ROUNDS_TO_JUDGE = 3  # below it a side has no trustworthy floor (the gap needs three)
RECOMMENDED_ROUNDS = 10  # per commit: the documented error rates on a shared 2-core machine
# Drift of the floor (one standard deviation, log scale) that rounds of one run can't show: between commits of
# one run; for a benchmark using every core (it can't get out of a neighbour's way); between separate runs
# while the history holds no same-code pairs to measure it by (`diff.allowances`).
DRIFT = 0.01
DRIFT_ALL_CORES = 0.05
DRIFT_APART = 0.015
MODE_SPAN = 2.0  # a benchmark using every core whose rounds in one run span more switches between modes
# How much of each side's floor gap (fastest to third-fastest round) and busyness counts as extra uncertainty.
GAP_WEIGHT = 0.25
BUSY_WEIGHT = 0.05

# The two-sided critical value at ALPHA, and the normal's 0.75 quantile: scipy.special.ndtri(1 - ALPHA / 2)
# and ndtri(0.75) (tests/unit/test_normal.py).
Z = 1.959963984540054
Z_75 = 0.6744897501960817


def round_value(sample: Sample) -> float:
    """One round's reading: its fastest block, per run (seconds)."""
    return min(sample.raw_times) / sample.number_per_run


def round_values(result: BenchmarkResult) -> tuple[float, ...]:
    return tuple(round_value(s) for s in result.samples)


def by_run(result: BenchmarkResult) -> dict[str, list[float]]:
    """A benchmark's round values at one commit, by the run that took them."""
    out: dict[str, list[float]] = {}
    for s in result.samples:
        out.setdefault(s.run, []).append(round_value(s))
    return out


def level(values) -> float:
    """A benchmark's level at a commit: its fastest round (the floor)."""
    return float(min(values))


def _ordered(values) -> list[float]:
    return np.sort(np.asarray(values, dtype=float), axis=None).tolist()


def _gap(ordered: list[float]) -> float:
    return math.log(ordered[min(2, len(ordered) - 1)] / ordered[0])


def _middle(ordered: list[float]) -> float:
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def floor_gap(values) -> float:
    """log(third-fastest / fastest) round: how well the rounds agree on the floor."""
    return _gap(_ordered(values)) if len(values) >= 2 else math.inf


def median(values) -> float:
    """np.median of finite values to the bit (the middle value, or the mean of the two middle ones)."""
    if not len(values):
        raise ValueError("median of no values")
    return _middle(_ordered(values))


def span(values) -> float:
    """Slowest round / fastest round."""
    return float(max(values) / min(values)) if len(values) else 1.0


def mode_switching(values, num_threads: int, cores: int) -> bool:
    """True when a benchmark that uses every core jumped between modes within one run."""
    return bool(cores) and num_threads >= cores and len(values) >= 2 and span(values) > MODE_SPAN


def spread(values) -> tuple[float, float] | None:
    """Quartiles of the round values (None below 2 rounds)."""
    if len(values) < 2:
        return None
    q1, _, q3 = blocks.quartiles(sorted(float(v) for v in values))
    return q1, q3


@dataclass(frozen=True)
class Shift:
    """How head's floor differs from base's."""

    ratio: float  # head level / base level
    low: float  # 1 - ALPHA interval of the ratio
    high: float
    p_value: float  # two-sided; < ALPHA exactly when the interval excludes 1
    base_gap: float  # floor_gap of each side
    head_gap: float

    @property
    def significant(self) -> bool:
        return self.low > 1.0 or self.high < 1.0


def _min_distribution(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact distribution of a bootstrap resample's minimum: the j-th smallest or above, ((n - j + 1) / n) ** n."""
    x = np.sort(logs)
    n = len(x)
    at_least = ((n - np.arange(n)) / n) ** n
    return x, at_least - np.append(at_least[1:], 0.0)


def floor_diff_interval(base_logs, head_logs, level: float = 1 - ALPHA) -> tuple[float, float]:
    """Percentile-bootstrap interval of min(head) - min(base), computed exactly."""
    hx, hp = _min_distribution(np.asarray(head_logs, dtype=float))
    bx, bp = _min_distribution(np.asarray(base_logs, dtype=float))
    values = (hx[:, None] - bx[None, :]).ravel()
    weights = (hp[:, None] * bp[None, :]).ravel()
    order = np.argsort(values, kind="stable")
    cdf, ordered = np.cumsum(weights[order]), values[order]
    tail = (1 - level) / 2
    low = ordered[min(int(np.searchsorted(cdf, tail)), len(cdf) - 1)]
    high = ordered[min(int(np.searchsorted(cdf, 1 - tail)), len(cdf) - 1)]
    return float(low), float(high)


def cores_of(commits) -> int:
    """The fewest cores of these CommitResults' machines (None left out), 0 where none is known."""
    known = [c.fingerprint.cores for c in commits if c is not None and c.fingerprint.cores]
    return min(known) if known else 0


def drift_for(num_threads: int, cores: int, *, apart: bool = False) -> float:
    """The drift allowance for a benchmark on a machine with `cores` (0: unknown); `apart`: the sides were
    measured by separate runs and the history can't say by how much those differ."""
    if cores and num_threads >= cores:
        return DRIFT_ALL_CORES
    return DRIFT_APART if apart else DRIFT


def shift(base, head, *, drift: float = DRIFT) -> Shift:
    """head/base, with the exact bootstrap interval of the difference of log floors widened in quadrature by
    each side's floor gap and busyness and the drift allowance."""
    b = np.log(np.asarray(base, dtype=float))
    h = np.log(np.asarray(head, dtype=float))
    if len(b) < 2 or len(h) < 2:
        raise ValueError("shift needs at least two rounds on each side")
    d = float(h.min() - b.min())
    low, high = floor_diff_interval(b, h)
    bo, ho = _ordered(base), _ordered(head)
    b_gap, h_gap = _gap(bo), _gap(ho)
    b_busy, h_busy = math.log(_middle(bo) / bo[0]), math.log(_middle(ho) / ho[0])
    extra = Z * math.sqrt(
        drift**2
        + (GAP_WEIGHT * b_gap) ** 2
        + (GAP_WEIGHT * h_gap) ** 2
        + (BUSY_WEIGHT * b_busy) ** 2
        + (BUSY_WEIGHT * h_busy) ** 2
    )
    below = math.hypot(max(d - low, 0.0), extra)
    above = math.hypot(max(high - d, 0.0), extra)
    toward_one = below if d > 0 else above
    p = 2 * normal_cdf(-abs(d) / (toward_one / Z)) if toward_one > 0 else (0.0 if d else 1.0)
    return Shift(math.exp(d), math.exp(d - below), math.exp(d + above), min(1.0, p), b_gap, h_gap)


# -- the normal CDF, and the Mann-Whitney test as scipy.stats.mannwhitneyu's "auto" method step by step (without
# importing scipy.stats: tests/unit/test_ranktest.py).


def normal_cdf(a: float) -> float:
    """P(N(0, 1) <= a), by the C library's erfc: scipy.special.ndtr's value to 2e-14 where it is above 1e-20."""
    return 0.5 * math.erfc(-float(a) / math.sqrt(2))


EXACT_UP_TO = 8  # scipy's "auto": the exact distribution up to this smaller sample (and no ties)


def mann_whitney_p(x, y) -> float:
    """Two-sided p-value of the Mann-Whitney U test of samples x and y (nonempty, no NaN)."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    n1, n2 = len(x), len(y)
    ranks, ties = _ranks(np.concatenate([x, y]))
    u1 = float(np.sum(ranks[:n1])) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if min(n1, n2) <= EXACT_UP_TO and not (ties > 1).any():
        # P(U >= u) under the null (u >= n1 n2 / 2): by symmetry P(U <= n1 n2 - u), summed as scipy does.
        k = n1 * n2 - int(u)
        p = float(np.cumsum(_arrangements(min(n1, n2), max(n1, n2), k) / _binom(n1 + n2, min(n1, n2)))[k])
    else:
        n = n1 + n2
        tie_term = float(np.sum(ties**3 - ties))
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / s if s > 0 else math.copysign(math.inf, u - n1 * n2 / 2 - 0.5)
        p = normal_cdf(-z) if not math.isnan(z) else math.nan
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


def unique(values: np.ndarray, *, inverse: bool = False, counts: bool = False):
    """np.unique of integers: the values sorted, with `inverse` each one's index among them, with `counts` how
    often each occurs (in that order after the values). The same arrays, without numpy 2.3's hashing: by
    marks over the values' span where it is small, else by a sort."""
    if not len(values):
        extra = [np.zeros(0, dtype=np.intp)] * (inverse + counts)
        return (values.copy(), *extra) if extra else values.copy()
    lo = int(values.min())
    span = int(values.max()) - lo + 1
    if span <= 4 * len(values) + 4096:
        present = np.zeros(span, dtype=bool)
        present[values - lo] = True
        found = (np.flatnonzero(present) + lo).astype(values.dtype, copy=False)
        index = (np.cumsum(present) - 1)[values - lo] if inverse else None
        count = np.bincount(values - lo, minlength=span)[present] if counts else None
    else:
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        first = np.ones(len(ordered), dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        found = ordered[first]
        index = None
        if inverse:
            index = np.empty(len(values), dtype=np.intp)
            index[order] = np.cumsum(first) - 1
        count = np.diff(np.append(np.flatnonzero(first), len(ordered))) if counts else None
    out = [found, *(x for x in (index, count) if x is not None)]
    return out[0] if len(out) == 1 else tuple(out)
