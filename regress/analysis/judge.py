"""Judge one benchmark between two commits from its rounds.

The verdict needs two things at once: evidence that the level moved (its
interval excludes no change, see `stats`), and a move that can be as large as
the threshold (the interval reaches it). A real change shown to be smaller
than the threshold is `unchanged` (its size is in the reason); an interval so
wide that a threshold-sized change could hide in it is `noisy`, with why and
what would help. docs/statistics.md has the reasoning and the measured error
rates.
"""

from __future__ import annotations

import math

from regress.analysis import stats
from regress.analysis.verdict import Verdict
from regress.core import blocks
from regress.core.kinds import Kind
from regress.core.records import BenchmarkResult
from regress.core.units import percent as pct

# A regression or improvement needs its estimate to be at least this share of
# the threshold, besides an interval that excludes no change and reaches the
# threshold: on a busy machine a small shift (2-3%) with a wide interval was the
# one kind of A/A false alarm interleaved rounds still gave.
MIN_ESTIMATE_SHARE = 0.5


def iqr(values) -> float | None:
    q = stats.spread(values)
    return None if q is None else q[1] - q[0]


def _why_noisy(
    base: BenchmarkResult, head: BenchmarkResult, shift: stats.Shift, threshold: float, cores: int
) -> list[str]:
    """What the samples say about the instability."""
    notes = []
    for side, gap in (("base", shift.base_gap), ("head", shift.head_gap)):
        if gap > math.log1p(threshold / 2):
            notes.append(f"the fastest rounds of {side} disagree by {math.expm1(gap) * 100:.0f}%")
    within = max(blocks.worst_round_iqr(base.samples), blocks.worst_round_iqr(head.samples))
    if within >= stats.IQR_GROSS_WARN:
        notes.append(
            f"IQR within a round reaches {within * 100:.0f}% of the median (torch: significant environmental influence)"
        )
    elif within >= stats.IQR_WARN:
        notes.append(f"IQR within a round reaches {within * 100:.0f}% of the median (torch: system fluctuation)")
    threads = head.spec.num_threads
    if cores and threads >= cores:
        notes.append(
            f"{threads} thread{'s' if threads > 1 else ''} on a {cores}-core machine can't keep out of a neighbour's way"
        )
    elif threads > 1:
        notes.append(f"{threads} threads are easily disturbed on a shared machine")
    return notes


def judge(
    base: BenchmarkResult,
    head: BenchmarkResult,
    *,
    threshold: float = 0.05,
    cores: int = 0,
    drift: float | None = None,
) -> Verdict:
    """Verdict for one benchmark measured successfully at both commits.

    `cores`: the machine's core count (0 if unknown); a benchmark that uses
    all of them gets a wider allowance for drift between runs. `drift`: the
    allowance for the shift between runs, when the history says (`runs.allowance`).
    """
    bv, hv = stats.round_values(base), stats.round_values(head)
    b_level, h_level = stats.level(bv), stats.level(hv)
    ratio = h_level / b_level
    common = dict(
        id=head.id,
        base_level=b_level,
        head_level=h_level,
        base_iqr=iqr(bv),
        head_iqr=iqr(hv),
        ratio=ratio,
        base_rounds=len(bv),
        head_rounds=len(hv),
    )
    spec_note = "" if base.spec == head.spec else "; note: the benchmark's definition differs between the commits"
    have = min(len(bv), len(hv))
    if have < stats.FEWEST_ROUNDS_TO_JUDGE:
        return Verdict(
            verdict=Kind.NOISY,
            p_value=None,
            reason=(
                f"{pct(ratio)} so far, but only {len(bv)} round(s) of base and {len(hv)} of head: a level needs "
                f"{stats.FEWEST_ROUNDS_TO_JUDGE} fresh processes that agree, {stats.RECOMMENDED_ROUNDS} to catch a "
                f"{threshold * 100:g}% change reliably; take more with `regress compare BASE HEAD --measure`{spec_note}"
            ),
            rounds_needed=stats.RECOMMENDED_ROUNDS,
            **common,
        )
    threads = head.spec.num_threads
    if stats.mode_switching(bv, threads, cores) or stats.mode_switching(hv, threads, cores):
        worst = max(stats.span(bv), stats.span(hv))
        return Verdict(
            verdict=Kind.NOISY,
            p_value=None,
            reason=(
                f"{pct(ratio)}, but can't be judged: with {threads} threads on {cores} cores the rounds of one run span "
                f"{worst:.1f}x, so the benchmark switches between a fast and a slow mode and either commit's fastest "
                "round may come from either; judge it on a machine with spare cores, or with fewer threads"
                f"{spec_note}"
            ),
            **common,
        )
    s = stats.shift(bv, hv, drift=stats.drift_for(threads, cores) if drift is None else drift)
    common.update(p_value=s.p_value, ci_low=s.low, ci_high=s.high)
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    p_text = "p<0.001" if s.p_value < 0.001 else f"p={s.p_value:.2g}"
    evidence = f"95% interval {pct(s.low)} to {pct(s.high)}, {p_text}"
    small = abs(math.log(ratio)) < math.log1p(MIN_ESTIMATE_SHARE * threshold)
    if ((s.low > 1.0 and s.high >= up) or (s.high < 1.0 and s.low <= down)) and small:
        word = "slower" if s.low > 1.0 else "faster"
        return Verdict(
            verdict=Kind.NOISY,
            reason=(
                f"{pct(ratio)} {word} ({evidence}): a change, but its best estimate is under half the "
                f"{threshold * 100:g}% threshold while the interval reaches it; more rounds tell which: "
                f"`regress compare BASE HEAD --measure`{spec_note}"
            ),
            rounds_needed=max(2 * have, stats.RECOMMENDED_ROUNDS),
            **common,
        )
    if s.low > 1.0 and s.high >= up:
        return Verdict(verdict=Kind.REGRESSION, reason=f"{pct(ratio)} slower ({evidence}){spec_note}", **common)
    if s.high < 1.0 and s.low <= down:
        return Verdict(verdict=Kind.IMPROVEMENT, reason=f"{pct(ratio)} faster ({evidence}){spec_note}", **common)
    if s.significant:
        word = "slower" if s.low > 1.0 else "faster"
        return Verdict(
            verdict=Kind.UNCHANGED,
            reason=f"{pct(ratio)} {word}: a real change, but smaller than the {threshold * 100:g}% threshold ({evidence}){spec_note}",
            **common,
        )
    if s.low >= down and s.high <= up:
        return Verdict(
            verdict=Kind.UNCHANGED,
            reason=f"no change beyond ±{threshold * 100:g}% ({evidence}){spec_note}",
            **common,
        )
    notes = _why_noisy(base, head, s, threshold, cores)
    needed = max(2 * have, stats.RECOMMENDED_ROUNDS)
    gap = max(s.base_gap, s.head_gap)
    all_cores = bool(cores) and head.spec.num_threads >= cores
    if all_cores:
        needed = None  # rounds can't beat the drift between runs
        helps = (
            f"a benchmark using all {cores} cores drifts about ±{stats.DRIFT_ALL_CORES * 100:g}% between runs on a shared "
            "machine, more than rounds can average away: judge it on a machine with spare cores, or with fewer threads"
        )
    elif gap > math.log1p(threshold) or (head.spec.num_threads > 1 and gap > math.log1p(threshold / 2)):
        helps = (
            f"more rounds may not settle it: measure on a quieter machine or with fewer threads, "
            f"or try {needed} rounds per side (`regress compare BASE HEAD --measure --rounds {needed}`)"
        )
    else:
        helps = (
            f"about {needed} rounds per side should settle it: `regress compare BASE HEAD --measure --rounds {needed}`"
        )
    return Verdict(
        verdict=Kind.NOISY,
        reason=(
            f"{pct(ratio)}, but too unstable to judge a {threshold * 100:g}% change ({evidence})"
            + (": " + "; ".join(notes) if notes else "")
            + f"; {helps}{spec_note}"
        ),
        rounds_needed=needed,
        **common,
    )
