"""The statistics behind `compare` and `regressions`: rounds as evidence, floors as levels.

A round is one blocked_autorange in one fresh worker process (a `Sample`).
Noise only ever adds time, so a round is read as its fastest block, and a
commit's level is its fastest round: the floor. The gap from the fastest
round to the third fastest widens the interval, and a fixed allowance
(DRIFT) covers drift between runs. The interval is the percentile
bootstrap's exact limit (no resampling), so a comparison always gives the
same answer. docs/statistics.md ("The level", "The verdict"). Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from regress.analysis import normal
from regress.core import blocks
from regress.core.records import BenchmarkResult, Sample

# Two-sided level: the interval is 1 - ALPHA, and p < ALPHA exactly when it excludes 1.
ALPHA = 0.05
# A regression or improvement needs its estimate to be at least this share of the threshold, besides an
# interval that excludes no change and reaches the threshold: on a busy machine a small shift (2-3%) with a
# wide interval was the one kind of A/A false alarm interleaved rounds still gave.
MIN_ESTIMATE_SHARE = 0.5
# Below this many rounds a side has no trustworthy floor (the gap needs three).
FEWEST_ROUNDS_TO_JUDGE = 3
# Rounds per commit that meet the documented error rates on a shared 2-core machine.
RECOMMENDED_ROUNDS = 10
# Drift of the floor between separate runs that rounds of one run can't show
# (one standard deviation, log scale); measured on a shared 2-core machine.
DRIFT = 0.01
# The same for a benchmark that uses every core: it can't get out of a
# neighbour's way (2-thread floors moved 3-6% between runs on 2 cores).
DRIFT_ALL_CORES = 0.05
# Between commits measured by separate runs, while the history holds no
# same-code pairs to measure the shift between runs by (`runs.allowance`):
# one-thread A/A levels of separate default runs here spread by a scaled MAD
# of 1.4% (231 pairs, docs/statistics.md). Every-core benchmarks keep 5%.
DRIFT_APART = 0.015
# A benchmark using every core whose rounds in one run span more than this is
# switching between a fast and a slow mode (2-thread floors on 2 busy cores
# landed up to 3.5x apart between runs): its floor can't be trusted.
MODE_SPAN = 2.0
# How much of each side's floor gap (fastest to third-fastest round) counts as
# extra uncertainty of its floor.
GAP_WEIGHT = 0.25
# How much of each side's busyness counts as extra uncertainty of its floor:
# when most rounds were slowed, the fastest may have been slowed too.
BUSY_WEIGHT = 0.05
# torch's Measurement warns above these IQR/median ratios (core/blocks.py: a light copy keeps what they read).
IQR_WARN, IQR_GROSS_WARN = blocks.IQR_WARN, blocks.IQR_GROSS_WARN
quartiles = blocks.quartiles

# The two-sided critical value at ALPHA: scipy.special.ndtri(1 - ALPHA / 2) (tests/unit/test_normal.py).
Z = normal.Z_975


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
    """A benchmark's level at a commit: its fastest round."""
    return float(min(values))


def floor_gap(values) -> float:
    """log(third-fastest / fastest) round: how well the rounds agree on the floor."""
    if len(values) < 2:
        return math.inf
    low = sorted(float(v) for v in values)
    return math.log(low[min(2, len(low) - 1)] / low[0])


def median(values) -> float:
    """np.median of finite values to the bit (the middle value, or the mean of the two middle ones)."""
    if isinstance(values, np.ndarray):
        ordered = np.sort(values, axis=None).tolist()
    else:
        ordered = sorted(float(v) for v in values)
    n = len(ordered)
    if not n:
        raise ValueError("median of no values")
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def busyness(values) -> float:
    """log(median round / fastest round): how much of the run the machine was busy."""
    return math.log(median(values) / min(float(v) for v in values)) if len(values) else 0.0


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
    q1, _, q3 = quartiles(sorted(float(v) for v in values))
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
    """Exact distribution of the minimum of a bootstrap resample of `logs`.

    A resample of n values drawn with replacement has its minimum at or above
    the j-th smallest value with probability ((n - j + 1) / n) ** n; this is
    the limit a resampling bootstrap approaches, with no resampling noise.
    """
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
    cdf = np.cumsum(weights[order])
    tail = (1 - level) / 2
    low = values[order][min(int(np.searchsorted(cdf, tail)), len(cdf) - 1)]
    high = values[order][min(int(np.searchsorted(cdf, 1 - tail)), len(cdf) - 1)]
    return float(low), float(high)


def drift_for(num_threads: int, cores: int, *, apart: bool = False) -> float:
    """The drift allowance for a benchmark on a machine with `cores` (0: unknown).

    `apart`: the two sides were measured by separate runs and the history can't say by how much those differ.
    """
    if cores and num_threads >= cores:
        return DRIFT_ALL_CORES
    return DRIFT_APART if apart else DRIFT


def shift(base, head, *, drift: float = DRIFT) -> Shift:
    """Estimate head/base with an interval honest about noise between and within runs: the exact
    percentile bootstrap of the difference of log floors (`floor_diff_interval`), with each side's floor
    gap and busyness and the drift allowance (`drift_for`) added in quadrature on either side."""
    b = np.log(np.asarray(base, dtype=float))
    h = np.log(np.asarray(head, dtype=float))
    if len(b) < 2 or len(h) < 2:
        raise ValueError("shift needs at least two rounds on each side")
    d = float(h.min() - b.min())
    low, high = floor_diff_interval(b, h)
    b_gap, h_gap = floor_gap(base), floor_gap(head)
    b_busy, h_busy = busyness(base), busyness(head)
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
    p = 2 * normal.cdf(-abs(d) / (toward_one / Z)) if toward_one > 0 else (0.0 if d else 1.0)
    return Shift(
        ratio=math.exp(d),
        low=math.exp(d - below),
        high=math.exp(d + above),
        p_value=min(1.0, p),
        base_gap=b_gap,
        head_gap=h_gap,
    )
