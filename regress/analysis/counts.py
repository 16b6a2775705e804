"""Verdicts on instruction counts: exact figures, judged without a significance test."""

from __future__ import annotations

import math

import numpy as np

from regress.analysis import pairing
from regress.analysis.verdict import Verdict, VerdictFields, order_key
from regress.core.kinds import Kind, Metric
from regress.core.metric_specs import spec
from regress.core.records import BenchmarkResult, CommitResult
from regress.core.units import percent as pct

# Counts are nearly deterministic (repeated runs agree exactly), so a far
# smaller change is real than with wall times: the spec's default.
_THRESHOLD = spec(Metric.INSTRUCTIONS).threshold


def _count_values(r: BenchmarkResult) -> tuple[int, ...]:
    return tuple(c.value for c in r.counts)


def judge_counts(base: BenchmarkResult, head: BenchmarkResult, *, threshold: float = _THRESHOLD) -> Verdict:
    """Instruction counts of two commits: the median of each side's callgrind runs.

    No significance test: callgrind has no timing noise. What can still move a
    count is the interpreter's state, so a side whose own runs disagree by more
    than half the threshold is `noisy` rather than judged.
    """
    b, h = _count_values(base), _count_values(head)
    b_level, h_level = float(np.median(b)), float(np.median(h))
    spread = {side: (max(v) - min(v)) / min(v) if min(v) > 0 else 0.0 for side, v in (("base", b), ("head", h))}
    ratio = h_level / b_level if b_level > 0 else math.inf
    common: VerdictFields = dict(
        id=head.id,
        base_level=b_level,
        head_level=h_level,
        base_iqr=None,
        head_iqr=None,
        ratio=ratio,
        p_value=None,
        base_rounds=len(b),
        head_rounds=len(h),
    )
    unstable = [
        f"{side}'s callgrind runs disagree by {gap * 100:.2f}%" for side, gap in spread.items() if gap > threshold / 2
    ]
    if unstable:
        return Verdict(
            verdict=Kind.NOISY,
            reason="; ".join(unstable) + "; look for state the benchmark carries between calls",
            **common,
        )
    if ratio > 1 + threshold:
        return Verdict(verdict=Kind.REGRESSION, reason=f"{pct(ratio)} instructions per call", **common)
    if ratio < 1 / (1 + threshold):
        return Verdict(verdict=Kind.IMPROVEMENT, reason=f"{pct(ratio)} instructions per call", **common)
    return Verdict(verdict=Kind.UNCHANGED, reason=f"{pct(ratio)}, within {threshold * 100:g}%", **common)


COUNTS = pairing.Figures(
    "instruction counts",
    lambda r: r.counted,
    lambda r: pairing.Side(float(np.median(_count_values(r))), None, len(r.counts)),
    "; run `regress run --mode instructions` on it",
)


def compare_counts(
    base: CommitResult | None, head: CommitResult | None, *, threshold: float = _THRESHOLD
) -> list[Verdict]:
    """Like `compare`, on instruction counts (`regress run --mode instructions`)."""
    b, h = (c.by_id() if c is not None else {} for c in (base, head))
    verdicts = pairing.pair_all(b, h, base, head, COUNTS, lambda br, hr: judge_counts(br, hr, threshold=threshold))
    return sorted(verdicts, key=order_key)
