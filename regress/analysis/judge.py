"""Judge one benchmark between two commits from its rounds, with why and what would help. docs/statistics.md
("The verdict").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from regress.analysis import detectable, modes, stats
from regress.analysis.verdict import Verdict, fields
from regress.core import blocks
from regress.core.kinds import Kind
from regress.core.records import BenchmarkResult
from regress.core.units import percent as pct


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
    if within >= blocks.IQR_WARN:
        torch = "significant environmental influence" if within >= blocks.IQR_GROSS_WARN else "system fluctuation"
        notes.append(f"IQR within a round reaches {within * 100:.0f}% of the median (torch: {torch})")
    threads = head.spec.num_threads
    if cores and threads >= cores:
        notes.append(
            f"{threads} thread{'s' if threads > 1 else ''} on a {cores}-core machine can't keep out of a neighbour's way"
        )
    elif threads > 1:
        notes.append(f"{threads} threads are easily disturbed on a shared machine")
    return notes


def _sees(
    base: BenchmarkResult, head: BenchmarkResult, threshold: float, drift: float
) -> tuple[float, int | None, str] | None:
    """What this comparison can detect: the smallest change, the rounds a side for the threshold, the clause."""
    noise = detectable.noise_of(base, head)
    if noise is None:
        return None
    have = min(len(base.samples), len(head.samples))
    seen = math.expm1(noise.detectable(have, drift))
    text = f"detects {seen * 100:.1f}% at {have} rounds a side"
    if seen <= threshold:
        return seen, have, text
    need = noise.rounds_for(threshold, drift)
    if need is None:
        return seen, None, f"{text}; no number of rounds reaches {threshold * 100:g}% here"
    return seen, need, f"{text}; {threshold * 100:g}% needs {need}"


@dataclass(frozen=True)
class Decision:
    """What the rounds of two sides decide, before any wording (`judge`'s core, and the round plan's)."""

    kind: Kind
    why: str  # FEW, MODE_SWITCH, SMALL, SLOW_MODE, CHANGE, REAL_BUT_SMALL, WITHIN, UNSTABLE
    shift: stats.Shift | None = None
    seen: modes.Modes | None = None  # the modes the rounds fall in, when they do
    fast: bool = False  # the spread allowances read the fast mode's rounds
    luck: modes.Luck | None = None
    needed: int | None = None  # rounds per side that may settle a `noisy` (None: rounds can't)

    @property
    def undecided(self) -> bool:
        """`noisy`, and more rounds may settle it: where the round plan spends rounds."""
        return self.kind == Kind.NOISY and self.needed is not None


FEW, MODE_SWITCH, SMALL, SLOW_MODE = "few", "mode switch", "small", "slow mode"
CHANGE, REAL_BUT_SMALL, WITHIN, UNSTABLE = "change", "real but small", "within", "unstable"


def decide(
    bv: Sequence[float],
    hv: Sequence[float],
    *,
    threshold: float,
    threads: int = 1,
    cores: int = 0,
    drift: float | None = None,
    b_runs: Sequence[Sequence[float]] | None = None,
    h_runs: Sequence[Sequence[float]] | None = None,
    pool=None,
) -> Decision:
    """The verdict two sides' round values give (`b_runs`, `h_runs`: grouped by run; `pool`: `modes.machine`).
    Cheap enough for the round plan to ask after every round."""
    b_runs, h_runs = b_runs or [bv], h_runs or [hv]
    have = min(len(bv), len(hv))
    if have < stats.FEWEST_ROUNDS_TO_JUDGE:
        return Decision(Kind.NOISY, FEW, needed=stats.RECOMMENDED_ROUNDS)
    if stats.mode_switching(bv, threads, cores) or stats.mode_switching(hv, threads, cores):
        return Decision(Kind.NOISY, MODE_SWITCH)
    # With modes, the spread allowances read the fast mode's rounds, where each side has enough.
    seen = modes.detect(modes.relative([*b_runs, *h_runs]))
    jb, jh = (seen.fast(bv), seen.fast(hv)) if seen is not None else (bv, hv)
    fast = seen is not None and min(len(jb), len(jh)) >= modes.FAST_ROUNDS
    if not fast:
        jb, jh = bv, hv
    s = stats.shift(jb, jh, drift=stats.drift_for(threads, cores) if drift is None else drift)
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    ratio = stats.level(hv) / stats.level(bv)
    moved = (s.low > 1.0 and s.high >= up) or (s.high < 1.0 and s.low <= down)
    more = max(2 * have, stats.RECOMMENDED_ROUNDS)
    if moved and abs(math.log(ratio)) < math.log1p(stats.MIN_ESTIMATE_SHARE * threshold):
        return Decision(Kind.NOISY, SMALL, s, seen, fast, needed=more)
    if moved:
        luck = modes.luck(b_runs, h_runs, pool=pool)
        if luck is not None:
            return Decision(Kind.NOISY, SLOW_MODE, s, seen, fast, luck, needed=luck.needed)
        return Decision(Kind.REGRESSION if s.low > 1.0 else Kind.IMPROVEMENT, CHANGE, s, seen, fast)
    if s.significant:
        return Decision(Kind.UNCHANGED, REAL_BUT_SMALL, s, seen, fast)
    if s.low >= down and s.high <= up:
        return Decision(Kind.UNCHANGED, WITHIN, s, seen, fast)
    all_cores = bool(cores) and threads >= cores  # rounds can't beat the drift between runs
    return Decision(Kind.NOISY, UNSTABLE, s, seen, fast, needed=None if all_cores else more)


def judge(
    base: BenchmarkResult,
    head: BenchmarkResult,
    *,
    threshold: float = 0.05,
    cores: int = 0,
    drift: float | None = None,
    pool=None,
) -> Verdict:
    """`decide`, worded, for a benchmark measured at both commits. `drift`: the allowance between runs, where
    the history says (`runs.allowances`); `pool`: `modes.machine`'s rounds."""
    bv, hv = stats.round_values(base), stats.round_values(head)
    b_level, h_level = stats.level(bv), stats.level(hv)
    ratio = h_level / b_level
    common = fields(head.id, bv, hv, b_level, h_level, ratio, (iqr(bv), iqr(hv)))
    spec_note = "" if base.spec == head.spec else "; note: the benchmark's definition differs between the commits"
    threads = head.spec.num_threads
    d = decide(
        bv,
        hv,
        threshold=threshold,
        threads=threads,
        cores=cores,
        drift=drift,
        b_runs=list(stats.by_run(base).values()),
        h_runs=list(stats.by_run(head).values()),
        pool=pool,
    )

    def worded(reason: str) -> Verdict:
        return Verdict(verdict=d.kind, reason=reason + spec_note, rounds_needed=d.needed, **common)

    if d.why == FEW:
        return worded(
            f"{pct(ratio)} so far, but only {len(bv)} round(s) of base and {len(hv)} of head: a level needs "
            f"{stats.FEWEST_ROUNDS_TO_JUDGE} fresh processes that agree, {stats.RECOMMENDED_ROUNDS} to catch a "
            f"{threshold * 100:g}% change reliably; take more with `regress compare BASE HEAD --measure`"
        )
    if d.why == MODE_SWITCH:
        worst = max(stats.span(bv), stats.span(hv))
        return worded(
            f"{pct(ratio)}, but can't be judged: with {threads} threads on {cores} cores the rounds of one run span "
            f"{worst:.1f}x, so the benchmark switches between a fast and a slow mode and either commit's fastest "
            "round may come from either; judge it on a machine with spare cores, or with fewer threads"
        )
    s = d.shift
    assert s is not None
    common["p_value"], common["ci_low"], common["ci_high"] = s.p_value, s.low, s.high
    sees = _sees(base, head, threshold, stats.drift_for(threads, cores) if drift is None else drift)
    if sees is not None:
        common["detectable"], common["detect_rounds"] = sees[0], sees[1]
        spec_note = f"; {sees[2]}{spec_note}"
    p_text = "p<0.001" if s.p_value < 0.001 else f"p={s.p_value:.2g}"
    evidence = f"95% interval {pct(s.low)} to {pct(s.high)}, {p_text}"
    word = "slower" if ratio > 1 else "faster"
    if d.why == SMALL:
        return worded(
            f"{pct(ratio)} {word} ({evidence}): a change, but its best estimate is under half the "
            f"{threshold * 100:g}% threshold while the interval reaches it; more rounds tell which: "
            "`regress compare BASE HEAD --measure`"
        )
    if d.why == SLOW_MODE:
        assert d.luck is not None
        modal = f"; {d.seen.describe()}" if d.seen is not None else ""
        return worded(
            f"{pct(ratio)} {word} ({evidence}), but {d.luck.describe()}{modal}: "
            f"`regress compare BASE HEAD --measure --rounds {d.needed}`"
        )
    if d.fast and d.seen is not None:
        evidence += f"; {d.seen.describe()}, so the fast mode's rounds were compared"
    if d.why == CHANGE:
        return worded(f"{pct(ratio)} {word} ({evidence})")
    if d.why == REAL_BUT_SMALL:
        word = "slower" if s.low > 1.0 else "faster"
        return worded(
            f"{pct(ratio)} {word}: a real change, but smaller than the {threshold * 100:g}% threshold ({evidence})"
        )
    if d.why == WITHIN:
        return worded(f"no change beyond ±{threshold * 100:g}% ({evidence})")
    notes = _why_noisy(base, head, s, threshold, cores)
    needed = d.needed
    gap = max(s.base_gap, s.head_gap)
    if needed is None:
        helps = (
            f"a benchmark using all {cores} cores drifts about ±{stats.DRIFT_ALL_CORES * 100:g}% between runs on a shared "
            "machine, more than rounds can average away: judge it on a machine with spare cores, or with fewer threads"
        )
    elif gap > math.log1p(threshold) or (threads > 1 and gap > math.log1p(threshold / 2)):
        helps = (
            f"more rounds may not settle it: measure on a quieter machine or with fewer threads, "
            f"or try {needed} rounds per side (`regress compare BASE HEAD --measure --rounds {needed}`)"
        )
    else:
        helps = (
            f"about {needed} rounds per side should settle it: `regress compare BASE HEAD --measure --rounds {needed}`"
        )
    return worded(
        f"{pct(ratio)}, but too unstable to judge a {threshold * 100:g}% change ({evidence})"
        + (": " + "; ".join(notes) if notes else "")
        + f"; {helps}"
    )
