"""Every benchmark of two commits paired and judged, then what the reference workload (the machine moving) and
the neighbouring commits (`with_neighbours`: a blip) say applied. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace

from regress.analysis import modes, runs, stats
from regress.analysis.judge import Figures, Side, Verdict, any_regression, iqr, order_key, pair  # noqa: F401 - re-exported
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult
from regress.core.units import percent as pct


def _side(r: BenchmarkResult) -> Side:
    values = stats.round_values(r)
    return Side(stats.level(values), iqr(values), len(values))


TIMES = Figures("samples", lambda r: r.ok, _side)


def _pair(
    bid: BenchmarkId,
    b: BenchmarkResult | None,
    h: BenchmarkResult | None,
    base: CommitResult | None,
    head: CommitResult | None,
    threshold: float,
    cores: int,
    apart=None,
    same_code: str = "",
    machine=None,
) -> Verdict:
    unpaired = pair(bid, b, h, base, head, TIMES)
    if unpaired is not None:
        return unpaired
    assert b is not None and h is not None  # `pair` leaves only benchmarks both sides have
    v = runs.judge_together(b, h, threshold=threshold, cores=cores, apart=apart, machine=machine)
    if same_code and v.verdict != Kind.UNCHANGED:
        return replace(v, verdict=Kind.UNCHANGED, reason=_same(same_code, v), rounds_needed=None)
    return replace(v, reason=_same(same_code, v)) if same_code else v


def machine_of(base: CommitResult | None, head: CommitResult | None):
    """runs -> `modes.machine` of both commits' rounds of those runs, made once per set of runs."""
    made: dict[tuple[str, ...], object] = {}

    def of(run_ids: tuple[str, ...]):
        if run_ids not in made:
            made[run_ids] = modes.machine(base, head, runs=set(run_ids) if run_ids else None)
        return made[run_ids]

    return of


def _same(sha: str, v: Verdict) -> str:
    measured = f"measured {v.ratio - 1:+.1%}, " if v.ratio is not None else ""
    return (
        f"same code as {sha[:10]} (the measured code's git trees are identical), so no change is possible; "
        f"{measured}which is the shift between the two measurements"
    )


def compare(
    base: CommitResult | None,
    head: CommitResult | None,
    *,
    threshold: float = 0.05,
    before: CommitResult | None = None,
    after: CommitResult | None = None,
    apart=None,
    same_code: str = "",
    only: Collection[BenchmarkId] | None = None,
) -> list[Verdict]:
    """Every benchmark of either commit (or of `only`), by label then threads, worst first. `before` / `after`:
    the commits next to base and head (the blip rule: `with_neighbours`); `apart`: BenchmarkId -> runs.Allowance; `same_code`: base's sha
    where both hold identical code."""
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    b = base.by_id() if base is not None else {}
    h = head.by_id() if head is not None else {}
    cores = stats.cores_of((base, head))
    machine = machine_of(base, head)
    verdicts = [
        _pair(bid, b.get(bid), h.get(bid), base, head, threshold, cores, apart, same_code, machine)
        for bid in {**b, **h}
        if only is None or bid in only
    ]
    machine = None if same_code else machine_shift(base, head, threshold=threshold)
    if machine is not None:
        verdicts = [machine_not_commit(v, machine, threshold) for v in verdicts]
    if same_code or base is None or head is None:
        return sorted(verdicts, key=order_key)
    return with_neighbours(verdicts, base, head, before, after, threshold=threshold, apart=apart)


def with_neighbours(
    verdicts: list[Verdict],
    base: CommitResult,
    head: CommitResult,
    before: CommitResult | None,
    after: CommitResult | None,
    *,
    threshold: float,
    apart=None,
) -> list[Verdict]:
    """What `compare(base, head, before=before, after=after, apart=apart)` gives, from `compare(base, head,
    apart=apart)`'s verdicts: only the blip rule is added, so no benchmark is judged twice. A move made by one
    odd commit whose neighbours agree is that commit's luck, not a change: head is odd when the commit after it
    is level with base (and head to it is no further move the same way), base when the commit before it is
    level with head."""
    if before is None and after is None:
        return sorted(verdicts, key=order_key)
    cores = stats.cores_of((base, head))
    index = {id(r): r.by_id() for r in (base, head, before, after) if r is not None}  # each indexed once

    def judged(x: CommitResult, y: CommitResult, bid: BenchmarkId) -> Verdict | None:
        rx, ry = index[id(x)].get(bid), index[id(y)].get(bid)
        if rx is None or ry is None or not rx.ok or not ry.ok:
            return None
        return runs.judge_together(rx, ry, threshold=threshold, cores=cores, apart=apart)

    def blip(v: Verdict) -> Verdict:
        if not may_blip(v):
            return v
        for odd, x, y in ((head, base, after), (base, before, head)):  # the odd one's neighbour against the other side
            if x is None or y is None:
                continue
            level = judged(x, y, v.id)
            undone = (
                judged(head, y, v.id) if odd is head else judged(x, base, v.id)
            )  # the odd one against its neighbour
            # The move did not last and was not carried further: the odd commit's own luck.
            if _level(level, v) and undone is not None and undone.verdict != v.verdict:
                return replace(
                    v,
                    verdict=Kind.NOISY,
                    reason=runs.with_basis(
                        f"{pct(v.ratio)}, but a blip: {odd.commit.short} alone differs, while {x.commit.short} and "
                        f"{y.commit.short} on either side of it agree (a commit's measurement can sit a few percent "
                        "off its neighbours however many rounds it gets); the history calls it no change",
                        v.reason,
                    ),
                    rounds_needed=None,
                )
        return v

    return sorted(map(blip, verdicts), key=order_key)


def judge_one(
    base: CommitResult, head: CommitResult, bid: BenchmarkId, *, threshold: float = 0.05, apart=None
) -> Verdict:
    """`compare`'s verdict for one benchmark, with the same rules (the machine's included)."""
    cores = stats.cores_of((base, head))
    b, h = base.by_id().get(bid), head.by_id().get(bid)
    v = _pair(bid, b, h, base, head, threshold, cores, apart, machine=machine_of(base, head))
    machine = machine_shift(base, head, threshold=threshold)
    return v if machine is None else machine_not_commit(v, machine, threshold)


_OPPOSITE = {Kind.REGRESSION: Kind.IMPROVEMENT, Kind.IMPROVEMENT: Kind.REGRESSION}


def may_blip(v: Verdict) -> bool:
    """Whether the neighbours can change `v` (the blip rule moves only a change): the others need no neighbour read."""
    return v.verdict in _OPPOSITE


LEVEL_SHARE = 0.5  # a neighbour is level with a move's other side when it rules out this share of the move


def _level(w: Verdict | None, move: Verdict) -> bool:
    """`w` (the neighbour against the other side) says they are level: unchanged, or, where a side's floor
    is unsettled (`noisy`), an estimate within LEVEL_SHARE of `move`'s size."""
    if w is None:
        return False
    if w.verdict == Kind.UNCHANGED:
        return True
    if w.verdict != Kind.NOISY or w.ratio is None or move.ratio is None:
        return False
    return abs(math.log(w.ratio)) <= LEVEL_SHARE * abs(math.log(move.ratio))


MACHINE_SHARE = 0.5  # the reference workload must move this share of the threshold for the machine to be blamed


def machine_shift(base: CommitResult | None, head: CommitResult | None, *, threshold: float) -> stats.Shift | None:
    """How the machine moved while head was measured, by the reference workload of the same rounds; None within
    MACHINE_SHARE of the threshold, or with too few reference rounds."""
    if base is None or head is None:
        return None
    b, h = base.reference, head.reference
    # Measured together: the machine of the runs both sides share is the one that matters.
    common = {s.run for s in b} & {s.run for s in h} - {""}
    bc, hc = tuple(s for s in b if s.run in common), tuple(s for s in h if s.run in common)
    if min(len(bc), len(hc)) >= stats.FEWEST_ROUNDS_TO_JUDGE:
        b, h = bc, hc
    if min(len(b), len(h)) < stats.FEWEST_ROUNDS_TO_JUDGE:
        return None
    s = stats.shift([stats.round_value(x) for x in b], [stats.round_value(x) for x in h])
    if s.significant and abs(math.log(s.ratio)) >= math.log1p(MACHINE_SHARE * threshold):
        return s
    return None


def machine_not_commit(v: Verdict, machine: stats.Shift, threshold: float) -> Verdict:
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
        reason=runs.with_basis(
            f"{pct(v.ratio)}, but the machine itself was {pct(machine.ratio)} {word} while head was measured "
            f"(the reference workload timed in the same rounds, 95% interval {pct(machine.low)} to {pct(machine.high)}): "
            "the machine moved, not the code; measure both in one run with `regress compare BASE HEAD --measure`",
            v.reason,
        ),
        rounds_needed=None,
    )
