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


def find_steps(history: list[CommitResult], *, threshold: float = 0.05, window: int = 3) -> list[Step]:
    """Commits where a benchmark's median moves by more than `threshold` and stays there:
    the `window` medians after are all above (or all below) the `window` before."""
    series: dict[BenchmarkId, list[tuple[int, str, float]]] = {}
    for i, cr in enumerate(history):
        for r in cr.results:
            if r.ok:
                times = sorted(t / s.number_per_run for s in r.samples for t in s.raw_times)
                series.setdefault(r.id, []).append((i, cr.commit.sha, statistics.median(times)))
    steps = []
    for bid, points in series.items():
        meds = [p[2] for p in points]
        last = len(meds) - window

        def separation(k: int, meds=meds) -> float:
            before, after = meds[k - window : k], meds[k : k + window]
            return max(min(after) / max(before), min(before) / max(after))

        k = window
        while k <= last:
            if separation(k) > 1:
                k = max(range(k, min(k + window, last + 1)), key=separation)
                before = statistics.median(meds[k - window : k])
                after = statistics.median(meds[k : k + window])
                if abs(after / before - 1) > threshold:
                    index, sha, _ = points[k]
                    direction = "regression" if after > before else "improvement"
                    steps.append(Step(bid, sha, index, before, after, after / before, direction))
                    k += window
                    continue
            k += 1
    return sorted(steps, key=lambda s: (s.index, s.id))
