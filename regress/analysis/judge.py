"""A verdict on one benchmark between two commits: the record, the order verdicts are listed in, the pairing
rule for every metric (`pair`), and the judgement of its rounds, with why and what would help.
docs/statistics.md ("The verdict"). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from regress.analysis import detectable, modes, stats
from regress.core import blocks
from regress.core.kinds import FailureKind, Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult, Failure
from regress.core.units import percent as pct


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
    the history says (`diff.allowances`); `pool`: `modes.machine`'s rounds."""
    bv, hv = stats.round_values(base), stats.round_values(head)
    b_level, h_level = stats.level(bv), stats.level(hv)
    ratio = h_level / b_level
    common = fields(head.id, bv, hv, b_level, h_level, ratio, (iqr(bv), iqr(hv)))
    spec_note = "" if base.spec == head.spec else "; note: the benchmark's definition differs between the commits"
    threads = head.spec.num_threads
    drift = stats.drift_for(threads, cores) if drift is None else drift
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
    sees = _sees(base, head, threshold, drift)
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
