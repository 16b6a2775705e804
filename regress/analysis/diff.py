"""Judge every benchmark between two commits: regression, improvement, unchanged, noisy, new, missing, failed.

The verdict needs two things at once: evidence that the level moved (its
interval excludes no change, see `stats`), and a move that can be as large as
the threshold (the interval reaches it). A real change shown to be smaller
than the threshold is `unchanged` (its size is in the reason); an interval so
wide that a threshold-sized change could hide in it is `noisy`, with why and
what would help. docs/statistics.md has the reasoning and the measured error
rates. Pure: CommitResults in, Verdicts out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from regress.analysis import stats
from regress.core.kinds import FailureKind, Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult, Failure



@dataclass(frozen=True)
class Verdict:
    id: BenchmarkId
    verdict: Kind
    # Seconds per run (instructions per call for counts): the levels the verdict
    # is based on, each commit's fastest round, a round being its fastest block
    # (see `stats` and docs/statistics.md).
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Kind(self.verdict))

    @property
    def change(self) -> float | None:
        """ratio - 1: +0.10 is 10% slower."""
        return None if self.ratio is None else self.ratio - 1.0


# A regression or improvement needs its estimate to be at least this share of
# the threshold, besides an interval that excludes no change and reaches the
# threshold: on a busy machine a small shift (2-3%) with a wide interval was the
# one kind of A/A false alarm interleaved rounds still gave.
MIN_ESTIMATE_SHARE = 0.5


def _iqr(values) -> float | None:
    q = stats.spread(values)
    return None if q is None else q[1] - q[0]


def pct(ratio: float) -> str:
    """+4.2% / -3.0% for a ratio."""
    return f"{(ratio - 1) * 100:+.1f}%"


def _within_round_iqr(result: BenchmarkResult) -> float:
    """The worst IQR/median of a single round: what torch's Measurement warns about."""
    worst = 0.0
    for s in result.samples:
        times = s.times
        if len(times) >= 4:
            q1, q2, q3 = np.percentile(times, [25, 50, 75])
            worst = max(worst, (q3 - q1) / q2 if q2 > 0 else 0.0)
    return worst


def _why_noisy(base: BenchmarkResult, head: BenchmarkResult, shift: stats.Shift, threshold: float, cores: int) -> list[str]:
    """What the samples say about the instability."""
    notes = []
    for side, gap in (("base", shift.base_gap), ("head", shift.head_gap)):
        if gap > math.log1p(threshold / 2):
            notes.append(f"the fastest rounds of {side} disagree by {math.expm1(gap) * 100:.0f}%")
    within = max(_within_round_iqr(base), _within_round_iqr(head))
    if within >= stats.IQR_GROSS_WARN:
        notes.append(f"IQR within a round reaches {within * 100:.0f}% of the median (torch: significant environmental influence)")
    elif within >= stats.IQR_WARN:
        notes.append(f"IQR within a round reaches {within * 100:.0f}% of the median (torch: system fluctuation)")
    threads = head.spec.num_threads
    if cores and threads >= cores:
        notes.append(f"{threads} thread{'s' if threads > 1 else ''} on a {cores}-core machine can't keep out of a neighbour's way")
    elif threads > 1:
        notes.append(f"{threads} threads are easily disturbed on a shared machine")
    return notes


def judge(base: BenchmarkResult, head: BenchmarkResult, *, threshold: float = 0.05, cores: int = 0) -> Verdict:
    """Verdict for one benchmark measured successfully at both commits.

    `cores`: the machine's core count (0 if unknown); a benchmark that uses
    all of them gets a wider allowance for drift between runs.
    """
    bv, hv = stats.round_values(base), stats.round_values(head)
    b_level, h_level = stats.level(bv), stats.level(hv)
    ratio = h_level / b_level
    common = dict(
        id=head.id,
        base_level=b_level,
        head_level=h_level,
        base_iqr=_iqr(bv),
        head_iqr=_iqr(hv),
        ratio=ratio,
        base_rounds=len(bv),
        head_rounds=len(hv),
    )
    spec_note = "" if base.spec == head.spec else "; note: the benchmark's definition differs between the commits"
    have = min(len(bv), len(hv))
    if have < stats.MIN_ROUNDS:
        return Verdict(
            verdict=Kind.NOISY,
            p_value=None,
            reason=(
                f"{pct(ratio)} so far, but only {len(bv)} round(s) of base and {len(hv)} of head: a level needs "
                f"{stats.MIN_ROUNDS} fresh processes that agree, {stats.RECOMMENDED_ROUNDS} to catch a "
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
    s = stats.shift(bv, hv, drift=stats.drift_for(threads, cores))
    common.update(p_value=s.p_value, ci_low=s.low, ci_high=s.high)
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    p_text = "p<0.001" if s.p_value < 0.001 else f"p={s.p_value:.2g}"
    evidence = f"95% interval {pct(s.low)} to {pct(s.high)}, {p_text}"
    small = abs(math.log(ratio)) < math.log1p(MIN_ESTIMATE_SHARE * threshold)
    if (s.low > 1.0 and s.high >= up or s.high < 1.0 and s.low <= down) and small:
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
    elif gap > math.log1p(threshold) or head.spec.num_threads > 1 and gap > math.log1p(threshold / 2):
        helps = (
            f"more rounds may not settle it: measure on a quieter machine or with fewer threads, "
            f"or try {needed} rounds per side (`regress compare BASE HEAD --measure --rounds {needed}`)"
        )
    else:
        helps = f"about {needed} rounds per side should settle it: `regress compare BASE HEAD --measure --rounds {needed}`"
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


def _commit_failure_for(result: BenchmarkResult, commit: CommitResult) -> Failure | None:
    """The commit-wide failure (build, suite file) that explains a benchmark's absence."""
    origin_file = result.origin.split(":", 1)[0]
    for f in commit.failures:
        if f.kind == FailureKind.BUILD:
            return f
        if f.kind == FailureKind.SUITE and origin_file and f.where.split(":", 1)[0] == origin_file:
            return f
    return None


def _only(r: BenchmarkResult, verdict: str, reason: str, side: str) -> Verdict:
    values = stats.round_values(r) if r.ok else ()
    level = stats.level(values) if values else None
    return Verdict(
        id=r.id,
        verdict=verdict,
        base_level=level if side == "base" else None,
        head_level=level if side == "head" else None,
        base_iqr=_iqr(values) if side == "base" else None,
        head_iqr=_iqr(values) if side == "head" else None,
        ratio=None,
        p_value=None,
        reason=reason,
        base_rounds=len(values) if side == "base" else 0,
        head_rounds=len(values) if side == "head" else 0,
    )


def _pair(bid: BenchmarkId, b: BenchmarkResult | None, h: BenchmarkResult | None,
          base: CommitResult | None, head: CommitResult | None, threshold: float, cores: int) -> Verdict:
    if h is not None and h.failure is not None:
        # A skip (say, a CUDA benchmark on a machine without a GPU) is not a failure.
        verdict = "missing" if h.failure.kind == FailureKind.SKIPPED else "failed"
        reason = f"{'skipped' if verdict == 'missing' else 'failed'} at head: {h.failure}"
        if b is None or not b.ok:
            return Verdict(bid, verdict, None, None, None, None, None, None, reason)
        return replace(_only(b, verdict, "", "base"), reason=reason)
    if h is None or not h.samples:
        if b is None or not b.ok:
            why = f"failed at base: {b.failure}" if b is not None and b.failure else "no samples at either commit"
            return Verdict(bid, Kind.MISSING, None, None, None, None, None, None, why)
        if head is None:
            return _only(b, Kind.MISSING, "head was not measured", "base")
        failure = _commit_failure_for(b, head)
        if failure is not None:
            return _only(b, Kind.FAILED, f"failed at head: {failure}", "base")
        if not head.complete:
            why = "not measured at head: that run was interrupted; `regress run --skip-existing` measures the rest"
        elif head.settings.bench_filter:
            why = f"not measured at head (--bench {head.settings.bench_filter!r} left it out)"
        else:
            why = "not measured at head: the benchmark no longer exists there"
        return _only(b, Kind.MISSING, why, "base")
    if b is None or not b.ok:
        if b is not None and b.failure is not None:
            why = f"failed at base ({b.failure}); measured at head"
        elif base is None:
            why = "base was not measured"
        else:
            why = "not measured at base"
        return _only(h, Kind.NEW, why, "head")
    return judge(b, h, threshold=threshold, cores=cores)


def _order(v: Verdict) -> tuple:
    ratio = v.ratio if v.ratio is not None and math.isfinite(v.ratio) else 0.0
    return (v.id.label, v.id.num_threads, Kind(v.verdict).rank, -ratio, v.id.sub_label, v.id.description)


def compare(
    base: CommitResult | None,
    head: CommitResult | None,
    *,
    threshold: float = 0.05,
    before: CommitResult | None = None,
    after: CommitResult | None = None,
) -> list[Verdict]:
    """Every benchmark of either commit, grouped by label then threads, worst first.

    `before` / `after`: the measured commits next to base and head in the
    history, when there are any: a move that only one odd commit makes,
    between neighbours that agree, is a blip (`_blip`), not a verdict.
    """
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    b = base.by_id() if base is not None else {}
    h = head.by_id() if head is not None else {}
    known = [c.fingerprint.cores for c in (base, head) if c is not None and c.fingerprint.cores]
    cores = min(known) if known else 0
    verdicts = [_pair(bid, b.get(bid), h.get(bid), base, head, threshold, cores) for bid in {**b, **h}]
    machine = machine_shift(base, head, threshold=threshold)
    if machine is not None:
        verdicts = [_machine_not_commit(v, machine, threshold) for v in verdicts]
    if base is not None and head is not None and (before is not None or after is not None):
        verdicts = [_blip(v, base, head, before, after, threshold, cores) for v in verdicts]
    return sorted(verdicts, key=_order)


_OPPOSITE = {Kind.REGRESSION: Kind.IMPROVEMENT, Kind.IMPROVEMENT: Kind.REGRESSION}


def _blip(v: Verdict, base: CommitResult, head: CommitResult, before: CommitResult | None, after: CommitResult | None,
          threshold: float, cores: int) -> Verdict:
    """A move made by one odd commit whose neighbours agree is that commit's luck, not a change.

    Measured here: identical code at two commits of one interleaved run can
    sit 3-7% apart, every round of each agreeing (with forked and with fresh
    interpreters alike), so rounds alone can't rule it out; the history can.
    Head is odd when the commit after it is level with base (and head to it is
    not a further move the same way); base is odd when the commit before it
    is level with head.
    """
    if v.verdict not in _OPPOSITE:
        return v

    def judged(x: CommitResult, y: CommitResult) -> str | None:
        rx, ry = x.by_id().get(v.id), y.by_id().get(v.id)
        if rx is None or ry is None or not rx.ok or not ry.ok:
            return None
        return judge(rx, ry, threshold=threshold, cores=cores).verdict

    for odd, pair, neighbour in ((head, (base, after), after), (base, (before, head), before)):
        if neighbour is None:
            continue
        level = judged(*pair)
        undone = judged(head, after) if odd is head else judged(before, base)
        # The move did not last (the neighbour is level with the other side) and was
        # not carried further: the odd commit's own luck.
        if level == Kind.UNCHANGED and undone is not None and undone != v.verdict:
            return replace(
                v,
                verdict=Kind.NOISY,
                reason=(
                    f"{pct(v.ratio)}, but a blip: {odd.commit.short} alone differs, while {pair[0].commit.short} and "
                    f"{pair[1].commit.short} on either side of it agree (a commit's measurement can sit a few percent "
                    "off its neighbours however many rounds it gets); the history calls it no change"
                ),
                rounds_needed=None,
            )
    return v


# The reference workload must move at least this share of the threshold for
# the machine to be blamed.
MACHINE_SHARE = 0.5


def machine_shift(base: CommitResult | None, head: CommitResult | None, *, threshold: float) -> stats.Shift | None:
    """How much slower (or faster) the machine was while head was measured, when it clearly was.

    Judged from the reference workload (`reference.py`) timed in the same
    rounds as the benchmarks; None when it did not move beyond half the
    threshold, or either commit has too few reference rounds.
    """
    if base is None or head is None:
        return None
    b = [stats.round_value(s) for s in base.reference]
    h = [stats.round_value(s) for s in head.reference]
    if len(b) < stats.MIN_ROUNDS or len(h) < stats.MIN_ROUNDS:
        return None
    s = stats.shift(b, h)
    if s.significant and abs(math.log(s.ratio)) >= math.log1p(MACHINE_SHARE * threshold):
        return s
    return None


def _machine_not_commit(v: Verdict, machine: stats.Shift, threshold: float) -> Verdict:
    """A move no bigger than the machine's own (by the threshold) is the machine's, not the commit's."""
    if v.verdict not in (Kind.REGRESSION, Kind.IMPROVEMENT) or v.ratio is None:
        return v
    slower = machine.ratio > 1
    if (v.verdict == Kind.REGRESSION) != slower:
        return v
    beyond = abs(math.log(v.ratio)) - abs(math.log(machine.ratio))
    if beyond >= math.log1p(threshold):
        return v
    word = "slower" if slower else "faster"
    return replace(
        v,
        verdict=Kind.NOISY,
        reason=(
            f"{pct(v.ratio)}, but the machine itself was {pct(machine.ratio)} {word} while head was measured "
            f"(the reference workload timed in the same rounds, 95% interval {pct(machine.low)} to {pct(machine.high)}): "
            "the machine moved, not the code; measure both in one run with `regress compare BASE HEAD --measure`"
        ),
        rounds_needed=None,
    )


def judge_one(base: CommitResult, head: CommitResult, bid: BenchmarkId, *, threshold: float = 0.05) -> Verdict:
    """`compare`'s verdict for one benchmark, with the same rules (the machine's included)."""
    known = [c.fingerprint.cores for c in (base, head) if c.fingerprint.cores]
    v = _pair(bid, base.by_id().get(bid), head.by_id().get(bid), base, head, threshold, min(known) if known else 0)
    machine = machine_shift(base, head, threshold=threshold)
    return v if machine is None else _machine_not_commit(v, machine, threshold)


def any_regression(verdicts: list[Verdict]) -> bool:
    return any(v.verdict == Kind.REGRESSION for v in verdicts)


# -- instruction counts ------------------------------------------------------

# Counts are nearly deterministic (repeated runs agree exactly here), so a far
# smaller change is real than with wall times.
COUNT_THRESHOLD = 0.01


def _count_values(r: BenchmarkResult) -> tuple[int, ...]:
    return tuple(c.value for c in r.counts)


def judge_counts(base: BenchmarkResult, head: BenchmarkResult, *, threshold: float = COUNT_THRESHOLD) -> Verdict:
    """Instruction counts of two commits: the median of each side's callgrind runs.

    No significance test: callgrind has no timing noise. What can still move a
    count is the interpreter's state, so a side whose own runs disagree by more
    than half the threshold is `noisy` rather than judged.
    """
    b, h = _count_values(base), _count_values(head)
    b_level, h_level = float(np.median(b)), float(np.median(h))
    spread = {side: (max(v) - min(v)) / min(v) if min(v) > 0 else 0.0 for side, v in (("base", b), ("head", h))}
    ratio = h_level / b_level if b_level > 0 else math.inf
    common = dict(
        id=head.id, base_level=b_level, head_level=h_level, base_iqr=None, head_iqr=None, ratio=ratio,
        p_value=None, base_rounds=len(b), head_rounds=len(h),
    )
    unstable = [f"{side}'s callgrind runs disagree by {gap * 100:.2f}%" for side, gap in spread.items() if gap > threshold / 2]
    if unstable:
        return Verdict(verdict=Kind.NOISY, reason="; ".join(unstable) + "; look for state the benchmark carries between calls", **common)
    if ratio > 1 + threshold:
        return Verdict(verdict=Kind.REGRESSION, reason=f"{pct(ratio)} instructions per call", **common)
    if ratio < 1 / (1 + threshold):
        return Verdict(verdict=Kind.IMPROVEMENT, reason=f"{pct(ratio)} instructions per call", **common)
    return Verdict(verdict=Kind.UNCHANGED, reason=f"{pct(ratio)}, within {threshold * 100:g}%", **common)


def compare_counts(base: CommitResult | None, head: CommitResult | None, *, threshold: float = COUNT_THRESHOLD) -> list[Verdict]:
    """Like `compare`, on instruction counts (`regress run --mode instructions`)."""
    b = {bid: r for bid, r in (base.by_id() if base else {}).items()}
    h = {bid: r for bid, r in (head.by_id() if head else {}).items()}
    verdicts = []
    for bid in {**b, **h}:
        br, hr = b.get(bid), h.get(bid)
        if hr is not None and hr.failure is not None and hr.failure.kind != FailureKind.SKIPPED:
            verdicts.append(Verdict(bid, Kind.FAILED, None, None, None, None, None, None, f"failed at head: {hr.failure}"))
        elif hr is None or not hr.counted:
            why = "not counted at head" + ("" if head is None else "; run `regress run --mode instructions` on it")
            verdicts.append(Verdict(bid, Kind.MISSING, None, None, None, None, None, None, why))
        elif br is None or not br.counted:
            verdicts.append(Verdict(bid, Kind.NEW, None, float(np.median(_count_values(hr))), None, None, None, None,
                                    "not counted at base"))
        else:
            verdicts.append(judge_counts(br, hr, threshold=threshold))
    return sorted(verdicts, key=_order)
