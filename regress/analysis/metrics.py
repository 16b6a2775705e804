"""Verdicts on the metrics beyond wall time, each by its rule (`metric_specs`): exact ones against a small
threshold, time-like ones by the interval test of wall times. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import overload

import numpy as np

from regress.analysis import diff, stats
from regress.analysis.judge import Figures, Side, Verdict, fields, order_key, pair_all
from regress.analysis.table import values
from regress.core.kinds import COUNTED, Kind, Metric
from regress.core.metric_specs import spec
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult
from regress.core.units import percent as pct


def carries(r: BenchmarkResult, metric: Metric) -> bool:
    """Does this benchmark have (or, failed, would have had) figures of `metric`?"""
    if metric == Metric.TRACKED:
        return r.is_tracked
    if metric in (Metric.ALLOCATED, Metric.PEAK, Metric.TIME, Metric.INSTRUCTIONS):
        return not r.is_tracked
    return bool(r.compiled) or (r.failure is not None and not r.is_tracked)


def judge(base: BenchmarkResult, head: BenchmarkResult, metric: Metric, *, threshold: float) -> Verdict:
    """One benchmark measured at both commits."""
    b, h = values(base, metric), values(head, metric)
    higher = spec(metric).better == "own" and bool(head.tracked) and head.tracked[-1].better == "higher"
    exact = spec(metric).exact or (metric == Metric.TRACKED and len(set(b)) == 1 and len(set(h)) == 1)
    if metric in COUNTED:
        threshold = 0.0
    b_level, h_level = statistics.median(b), statistics.median(h)
    what = spec(metric).what
    if b_level == h_level:
        ratio = 1.0
    elif b_level > 0:
        ratio = h_level / b_level
    else:
        ratio = math.inf if h_level > b_level else 0.0
    common = fields(head.id, b, h, b_level, h_level, ratio if math.isfinite(ratio) else None)
    change = f"{b_level:g} -> {h_level:g} {what}"

    def verdict(kind: Kind, reason: str, needed: int | None = None) -> Verdict:
        return Verdict(verdict=kind, reason=reason, rounds_needed=needed, **common)

    if exact or min(b_level, h_level) <= 0:
        if b_level == h_level:
            return verdict(Kind.UNCHANGED, f"identical {what} ({h_level:g})")
        up = h_level > b_level and (ratio > 1 + threshold)
        down = h_level < b_level and (ratio < 1 / (1 + threshold))
        if not (up or down):
            return verdict(Kind.UNCHANGED, f"{change}, within {threshold * 100:g}%")
        return verdict(Kind.REGRESSION if up != higher else Kind.IMPROVEMENT, change)
    if min(len(b), len(h)) < stats.FEWEST_ROUNDS_TO_JUDGE:
        few = f"varies between rounds and has {len(b)} and {len(h)}; take {stats.FEWEST_ROUNDS_TO_JUDGE} or more"
        return verdict(Kind.NOISY, f"{change}, but it {few}", stats.RECOMMENDED_ROUNDS)
    s = stats.shift(b, h)
    common["p_value"], common["ci_low"], common["ci_high"], common["ratio"] = s.p_value, s.low, s.high, s.ratio
    evidence = f"95% interval {pct(s.low)} to {pct(s.high)}"
    if (s.low > 1.0 and s.high >= 1 + threshold) or (s.high < 1.0 and s.low <= 1 / (1 + threshold)):
        return verdict(Kind.REGRESSION if (s.low > 1.0) != higher else Kind.IMPROVEMENT, f"{change} ({evidence})")
    if s.significant or (s.low >= 1 / (1 + threshold) and s.high <= 1 + threshold):
        return verdict(Kind.UNCHANGED, f"{change}, within {threshold * 100:g}% ({evidence})")
    return verdict(Kind.NOISY, f"{change}, too unstable to judge ({evidence})", stats.RECOMMENDED_ROUNDS)


def figures(metric: Metric) -> Figures:
    """`metric`'s figures in a result, for pairing: each round's figure, the median shown."""

    def side(r: BenchmarkResult) -> Side:
        got = values(r, metric)
        return Side(statistics.median(got), None, len(got))

    return Figures(spec(metric).what, lambda r: r.failure is None and bool(values(r, metric)), side)


def compare(
    base: CommitResult | None, head: CommitResult | None, metric: Metric, *, threshold: float
) -> list[diff.Verdict]:
    """Every benchmark of either commit that carries `metric`, as `diff.compare` orders them."""
    if metric == Metric.TIME:
        return diff.compare(only(base, metric), only(head, metric), threshold=threshold)
    b = {r.id: r for r in (base.results if base else ()) if carries(r, metric)}
    h = {r.id: r for r in (head.results if head else ()) if carries(r, metric)}
    if spec(metric).field == "compiled":
        # A failed benchmark counts for compile metrics only where the other side compiled it.
        b = {k: r for k, r in b.items() if r.compiled or (k in h and h[k].compiled)}
        h = {k: r for k, r in h.items() if r.compiled or (k in b and b[k].compiled)}
    if metric == Metric.INSTRUCTIONS:
        judged = pair_all(b, h, base, head, COUNTS, lambda br, hr: judge_counts(br, hr, threshold=threshold))
    else:
        judged = pair_all(b, h, base, head, figures(metric), lambda br, hr: judge(br, hr, metric, threshold=threshold))
    return sorted(judged, key=order_key)


@overload
def only(result: CommitResult, metric: Metric) -> CommitResult: ...
@overload
def only(result: None, metric: Metric) -> None: ...
def only(result: CommitResult | None, metric: Metric) -> CommitResult | None:
    if result is None:
        return None
    return replace(result, results=tuple(r for r in result.results if carries(r, metric)))


def steps(history: list[CommitResult], metric: Metric, *, threshold: float) -> list:
    """Change points of an exact-by-rule series: neighbouring measured commits whose verdict is a change."""
    from regress.analysis.changepoints import Step

    last: dict[BenchmarkId, BenchmarkResult] = {}
    out = []
    for i, commit in enumerate(history):
        for r in commit.results:
            if r.failure is not None or not carries(r, metric) or not values(r, metric):
                continue
            before = last.get(r.id)
            last[r.id] = r
            if before is None:
                continue
            v = judge(before, r, metric, threshold=threshold)
            if v.verdict in (Kind.REGRESSION, Kind.IMPROVEMENT):
                ratio = v.ratio if v.ratio is not None else math.inf
                assert v.base_level is not None and v.head_level is not None  # medians: `judge` always has them
                sha = commit.commit.sha
                out.append(Step(r.id, sha, i, v.base_level, v.head_level, ratio, v.verdict, end_sha=sha))
    return out


# -- instruction counts: nearly deterministic, judged without a significance test.


def judge_counts(base: BenchmarkResult, head: BenchmarkResult, *, threshold: float) -> Verdict:
    """Instruction counts of two commits: the medians of their callgrind runs; runs disagreeing by more than
    half the threshold are `noisy`."""
    b, h = values(base, Metric.INSTRUCTIONS), values(head, Metric.INSTRUCTIONS)
    b_level, h_level = float(np.median(b)), float(np.median(h))
    spread = {side: (max(v) - min(v)) / min(v) if min(v) > 0 else 0.0 for side, v in (("base", b), ("head", h))}
    ratio = h_level / b_level if b_level > 0 else math.inf
    common = fields(head.id, b, h, b_level, h_level, ratio)
    unstable = [
        f"{side}'s callgrind runs disagree by {gap * 100:.2f}%" for side, gap in spread.items() if gap > threshold / 2
    ]
    if unstable:
        why = "; ".join(unstable) + "; look for state the benchmark carries between calls"
        return Verdict(verdict=Kind.NOISY, reason=why, **common)
    if ratio > 1 + threshold or ratio < 1 / (1 + threshold):
        kind = Kind.REGRESSION if ratio > 1 else Kind.IMPROVEMENT
        return Verdict(verdict=kind, reason=f"{pct(ratio)} instructions per call", **common)
    return Verdict(verdict=Kind.UNCHANGED, reason=f"{pct(ratio)}, within {threshold * 100:g}%", **common)


COUNTS = Figures(
    "instruction counts",
    lambda r: r.counted,
    lambda r: Side(float(np.median(values(r, Metric.INSTRUCTIONS))), None, len(r.counts)),
    "; run `regress run --mode instructions` on it",
)
