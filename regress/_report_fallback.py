"""TEMPORARY stand-ins for `regress.diff` and `regress.changepoints`.

REPLACE AT MERGE: the differ engineer builds the real modules with these
exact names and signatures; `report_data` imports them when present and
only falls back to this file otherwise. Delete this module once both land.

The heuristics here are deliberately simple (no significance test): they
exist so the report can be built and tested before the differ lands.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .model import BenchmarkId, CommitResult


@dataclass(frozen=True)
class Verdict:
    id: BenchmarkId
    verdict: str  # "regression"|"improvement"|"unchanged"|"noisy"|"new"|"missing"|"failed"
    base_median: float | None
    head_median: float | None
    base_iqr: float | None
    head_iqr: float | None
    ratio: float | None
    p_value: float | None
    reason: str


@dataclass(frozen=True)
class Step:
    id: BenchmarkId
    sha: str
    index: int
    before: float
    after: float
    ratio: float
    direction: str  # "regression"|"improvement"


def compare(base: CommitResult | None, head: CommitResult | None, *, threshold: float = 0.05) -> list[Verdict]:
    b = base.by_id() if base else {}
    h = head.by_id() if head else {}
    out = []
    for bid in sorted(set(b) | set(h)):
        br, hr = b.get(bid), h.get(bid)
        bm = br.median if br is not None and br.ok else None
        hm = hr.median if hr is not None and hr.ok else None
        biqr = (br.quartiles[2] - br.quartiles[0]) if bm is not None else None
        hiqr = (hr.quartiles[2] - hr.quartiles[0]) if hm is not None else None
        ratio = hm / bm if bm and hm is not None else None
        if hr is not None and not hr.ok:
            verdict, reason = "failed", str(hr.failure) if hr.failure else "no samples"
        elif br is None or bm is None:
            verdict, reason = ("new", "not measured at base") if hm is not None else ("failed", "no samples")
        elif hr is None:
            verdict, reason = "missing", "not measured at head"
        else:
            bq, hq = br.quartiles, hr.quartiles
            overlap = bq[0] <= hq[2] and hq[0] <= bq[2]
            if abs(ratio - 1) <= threshold:
                verdict, reason = "unchanged", f"within {threshold:.0%}"
            elif overlap:
                verdict, reason = "noisy", "interquartile ranges overlap"
            else:
                verdict = "regression" if ratio > 1 else "improvement"
                reason = f"{ratio - 1:+.1%}, interquartile ranges apart"
        out.append(Verdict(bid, verdict, bm, hm, biqr, hiqr, ratio, None, reason))
    return out


def find_steps(history: list[CommitResult], *, threshold: float = 0.05, window: int = 5) -> list[Step]:
    """Commits where a benchmark's median moves by more than `threshold` and stays there."""
    series: dict[BenchmarkId, list[tuple[int, str, float]]] = {}
    for i, cr in enumerate(history):
        for r in cr.results:
            if r.ok:
                times = sorted(t / s.number_per_run for s in r.samples for t in s.raw_times)
                series.setdefault(r.id, []).append((i, cr.commit.sha, statistics.median(times)))
    steps = []
    for bid, points in series.items():
        meds = [p[2] for p in points]
        best: tuple[float, int] | None = None
        k = window
        while k <= len(points) - window:
            before, after = meds[k - window : k], meds[k : k + window]
            lo_b, hi_b, lo_a, hi_a = min(before), max(before), min(after), max(after)
            ratio = 1.0
            if lo_a > hi_b or hi_a < lo_b:  # every point after above (or below) every point before
                ratio = statistics.median(after) / statistics.median(before)
            if abs(ratio - 1) > threshold:
                if best is None or abs(ratio - 1) > abs(best[0] - 1):
                    best = (ratio, k)
                k += 1
                continue
            if best is not None:
                steps.append(_step(bid, points, meds, best, window))
                k = best[1] + window
                best = None
                continue
            k += 1
        if best is not None:
            steps.append(_step(bid, points, meds, best, window))
    return sorted(steps, key=lambda s: (s.index, s.id))


def _step(bid, points, meds, best, window) -> Step:
    ratio, k = best
    before = statistics.median(meds[k - window : k])
    after = statistics.median(meds[k : k + window])
    index, sha, _ = points[k]
    return Step(bid, sha, index, before, after, ratio, "regression" if ratio > 1 else "improvement")
