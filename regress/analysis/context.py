"""What the commits around a comparison say: a move only one odd commit makes, between neighbours that agree, is
its luck (`blip`); a move the reference workload made too is the machine's (`machine_not_commit`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from regress.analysis import runs, stats
from regress.analysis.verdict import Verdict
from regress.core.kinds import Kind
from regress.core.records import CommitResult
from regress.core.units import percent as pct

_OPPOSITE = {Kind.REGRESSION: Kind.IMPROVEMENT, Kind.IMPROVEMENT: Kind.REGRESSION}


def may_blip(v: Verdict) -> bool:
    """Whether the neighbours can change `v` (`blip` moves only a change): the others need no neighbour read."""
    return v.verdict in _OPPOSITE


def blip(
    v: Verdict,
    base: CommitResult,
    head: CommitResult,
    before: CommitResult | None,
    after: CommitResult | None,
    threshold: float,
    cores: int,
    apart=None,
    found=None,
) -> Verdict:
    """A move made by one odd commit whose neighbours agree is that commit's luck, not a change: head is odd
    when the commit after it is level with base (and head to it is no further move the same way), base when
    the commit before it is level with head. `found(result, id)`: the result's benchmark of that id."""
    if not may_blip(v):
        return v
    found = found or (lambda x, bid: x.by_id().get(bid))

    def judged(x: CommitResult, y: CommitResult) -> Verdict | None:
        rx, ry = found(x, v.id), found(y, v.id)
        if rx is None or ry is None or not rx.ok or not ry.ok:
            return None
        return runs.judge_together(rx, ry, threshold=threshold, cores=cores, apart=apart)

    for odd, x, y in ((head, base, after), (base, before, head)):  # the odd commit's neighbour against the other side
        if x is None or y is None:
            continue
        level = judged(x, y)
        undone = judged(head, y) if odd is head else judged(x, base)  # the odd commit against its neighbour
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


# A neighbour is level with the other side of a move when its comparison rules out this share of the move.
LEVEL_SHARE = 0.5


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


# The reference workload must move at least this share of the threshold for the machine to be blamed.
MACHINE_SHARE = 0.5


def machine_shift(base: CommitResult | None, head: CommitResult | None, *, threshold: float) -> stats.Shift | None:
    """How much slower (or faster) the machine was while head was measured, by the reference workload
    timed in the same rounds; None when it did not move beyond MACHINE_SHARE of the threshold, or either
    commit has too few reference rounds."""
    if base is None or head is None:
        return None
    b = [stats.round_value(s) for s in base.reference]
    h = [stats.round_value(s) for s in head.reference]
    # Measured together: the machine of the runs both sides share is the one that matters.
    common = {s.run for s in base.reference} & {s.run for s in head.reference} - {""}
    if common:
        bc = [stats.round_value(s) for s in base.reference if s.run in common]
        hc = [stats.round_value(s) for s in head.reference if s.run in common]
        if min(len(bc), len(hc)) >= stats.FEWEST_ROUNDS_TO_JUDGE:
            b, h = bc, hc
    if len(b) < stats.FEWEST_ROUNDS_TO_JUDGE or len(h) < stats.FEWEST_ROUNDS_TO_JUDGE:
        return None
    s = stats.shift(b, h)
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
