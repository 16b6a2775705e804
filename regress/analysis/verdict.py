"""A verdict on one benchmark between two commits, the order verdicts are listed in, and the pairing rule
for every metric (`pair`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from regress.core.kinds import FailureKind, Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult, Failure


@dataclass(frozen=True)
class Verdict:
    id: BenchmarkId
    verdict: Kind
    # Seconds per run (instructions per call for counts): each commit's level (`stats.level`).
    base_level: float | None
    head_level: float | None
    base_iqr: float | None  # IQR of the round values (None below 2 rounds)
    head_iqr: float | None
    ratio: float | None  # head_level / base_level
    p_value: float | None
    reason: str
    base_rounds: int = 0
    head_rounds: int = 0
    ci_low: float | None = None  # 95% interval of the ratio
    ci_high: float | None = None
    rounds_needed: int | None = None  # per side, when more rounds may settle a noisy verdict
    # The smallest change this comparison could catch (a fraction), at its rounds and allowance (`detectable`).
    detectable: float | None = None
    # Rounds a side that would catch a change of the threshold (None: no number can, or unknown).
    detect_rounds: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Kind(self.verdict))


def fields(
    bid: BenchmarkId, b, h, b_level: float, h_level: float, ratio: float | None, iqrs=(None, None)
) -> dict[str, Any]:
    """The `Verdict` fields a way of judging gathers first of sides with values `b` and `h` (no p-value yet):
    `Verdict(verdict=..., reason=..., **fields)`."""
    return {
        "id": bid,
        "base_level": b_level,
        "head_level": h_level,
        "base_iqr": iqrs[0],
        "head_iqr": iqrs[1],
        "ratio": ratio,
        "p_value": None,
        "base_rounds": len(b),
        "head_rounds": len(h),
    }


def order_key(v: Verdict) -> tuple:
    ratio = v.ratio if v.ratio is not None and math.isfinite(v.ratio) else 0.0
    return (v.id.label, v.id.num_threads, Kind(v.verdict).rank, -ratio, v.id.sub_label, v.id.description)


def any_regression(verdicts: list[Verdict]) -> bool:
    return any(v.verdict == Kind.REGRESSION for v in verdicts)


@dataclass(frozen=True)
class Side:
    """What a verdict shows of one side: its level, spread and rounds."""

    level: float | None
    iqr: float | None = None
    rounds: int = 0


@dataclass(frozen=True)
class Figures:
    """One metric's figures in a result, as pairing needs them."""

    what: str  # what a side without them lacks: "samples", "instruction counts", "bytes allocated per call"
    has: Callable[[BenchmarkResult], bool]  # has figures, and its latest attempt did not fail
    side: Callable[[BenchmarkResult], Side]  # what a verdict shows of a result that has them
    hint: str = ""  # how to get them at a commit without them ("; run `regress run --mode instructions` on it")


def commit_failure_for(result: BenchmarkResult, commit: CommitResult) -> Failure | None:
    """The commit-wide failure (build, checkout, suite file) that explains a benchmark's absence."""
    origin_file = result.origin.split(":", 1)[0]
    for f in commit.failures:
        if f.kind in (FailureKind.BUILD, FailureKind.CHECKOUT):
            return f
        if f.kind == FailureKind.SUITE and origin_file and f.where.split(":", 1)[0] == origin_file:
            return f
    return None


def one_sided(bid: BenchmarkId, kind: Kind, reason: str, shown: Side | None = None, at: str = "base") -> Verdict:
    """A verdict with figures of one side at most (`at`: which)."""
    s, none = shown or Side(None), Side(None)
    b, h = (s, none) if at == "base" else (none, s)
    return Verdict(bid, kind, b.level, h.level, b.iqr, h.iqr, None, None, reason, b.rounds, h.rounds)


def pair(
    bid: BenchmarkId,
    b: BenchmarkResult | None,
    h: BenchmarkResult | None,
    base: CommitResult | None,
    head: CommitResult | None,
    figures: Figures,
) -> Verdict | None:
    """The verdict of a benchmark that a side lacks or failed at; None when both sides have figures to judge."""
    shown_b = figures.side(b) if b is not None and figures.has(b) else None
    if h is not None and h.failure is not None:
        # A skip (say, a CUDA benchmark on a machine without a GPU) is not a failure.
        skipped = h.failure.kind == FailureKind.SKIPPED
        kind = Kind.MISSING if skipped else Kind.FAILED
        return one_sided(bid, kind, f"{'skipped' if skipped else 'failed'} at head: {h.failure}", shown_b)
    if h is None or not figures.has(h):
        if shown_b is None:
            why = (
                f"failed at base: {b.failure}" if b is not None and b.failure else f"no {figures.what} at either commit"
            )
            return one_sided(bid, Kind.MISSING, why)
        if head is None:
            return one_sided(bid, Kind.MISSING, "head was not measured", shown_b)
        assert b is not None  # shown_b is its figures
        failure = commit_failure_for(b, head)
        if failure is not None:
            return one_sided(bid, Kind.FAILED, f"failed at head: {failure}", shown_b)
        if not head.complete:
            why = "not measured at head: that run was interrupted; `regress run --skip-existing` measures the rest"
        elif h is not None:
            why = f"no {figures.what} at head{figures.hint}"
        elif head.settings.bench_filter:
            why = f"not measured at head (--bench {head.settings.bench_filter!r} left it out)"
        else:
            why = "not measured at head: the benchmark no longer exists there"
        return one_sided(bid, Kind.MISSING, why, shown_b)
    if shown_b is None:
        if b is not None and b.failure is not None:
            why = f"failed at base ({b.failure}); measured at head"
        elif base is None:
            why = "base was not measured"
        elif b is not None:
            why = f"no {figures.what} at base{figures.hint}"
        else:
            why = "not measured at base"
        return one_sided(bid, Kind.NEW, why, figures.side(h), at="head")
    return None


def pair_all(
    b: dict[BenchmarkId, BenchmarkResult],
    h: dict[BenchmarkId, BenchmarkResult],
    base: CommitResult | None,
    head: CommitResult | None,
    figures: Figures,
    judge: Callable[[BenchmarkResult, BenchmarkResult], Verdict],
) -> list[Verdict]:
    """Every benchmark of either side: paired, or judged by `judge` where both have figures."""
    out = []
    for bid in {**b, **h}:
        br, hr = b.get(bid), h.get(bid)
        v = pair(bid, br, hr, base, head, figures)
        if v is None:
            assert br is not None and hr is not None  # `pair` leaves only benchmarks both sides have
            v = judge(br, hr)
        out.append(v)
    return out
