"""Slow modes: when a commit's few rounds may all have landed slow (`luck`), how many rounds rule that out, and
the modes themselves (`detect`). Pure: round values in, figures out. docs/statistics.md ("Machines with modes").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from regress.core import blocks

ALPHA = 0.001  # a change needs all the slower side's rounds landing in a slow mode by luck less likely than this
SHRINK = 0.9  # a round lands "that far" above its floor from this share of the log ratio on
PRIOR = 0.5  # pseudo-counts (Jeffreys): a share from a handful of rounds is never exactly zero
MACHINE_WEIGHT = 5.0  # the run's every benchmark's rounds weigh like this many of the benchmark's own
REACH = 1.5  # a slow mode's rounds reach down to their log ratio over this, no further
MOST = 40  # the most rounds a side is asked for
FAST_ROUNDS = 2  # with modes, a floor is the fast mode's once this many rounds landed in it


def relative(groups: Iterable[Sequence[float]]) -> np.ndarray:
    """Each round's log ratio to its group's floor (a commit's rounds in one run), pooled; lone rounds left out."""
    out = [np.log(np.asarray(g, dtype=float) / min(g)) for g in groups if len(g) >= 2]
    return np.concatenate(out) if out else np.zeros(0)


def share(pool: np.ndarray, log_ratio: float, machine: np.ndarray | None = None) -> float:
    """The share of rounds landing SHRINK `log_ratio` or more above their floor, drawn toward a half by PRIOR
    and toward `machine`'s share (the run's every benchmark's rounds) by MACHINE_WEIGHT rounds' worth."""
    k = int(np.count_nonzero(pool >= SHRINK * log_ratio)) if len(pool) else 0
    if machine is None or not len(machine):
        return (k + PRIOR) / (len(pool) + 2 * PRIOR)
    seen = float(np.count_nonzero(machine >= SHRINK * log_ratio)) / len(machine)
    return (k + MACHINE_WEIGHT * seen + PRIOR) / (len(pool) + MACHINE_WEIGHT + 2 * PRIOR)


def rounds_to_rule_out(p: float) -> int:
    """The fewest rounds n with p^n < ALPHA: all of them landing in the slow mode is then unlikely."""
    if p <= 0.0:
        return 1
    if p >= 1.0:
        return MOST
    return min(MOST, max(1, math.floor(math.log(ALPHA) / math.log(p)) + 1))


@dataclass(frozen=True)
class Apart:
    """The slow-mode test's pools for sides measured by separate runs: each side's `machine` maker."""

    base: Callable[[], np.ndarray]
    head: Callable[[], np.ndarray]


@dataclass(frozen=True)
class Luck:
    """The slower side's rounds may all have landed in a slow mode: not yet a change."""

    side: str  # "base" or "head": the slower side
    rounds: int  # its rounds
    above: float  # its floor against the faster side's (> 1)
    landed: int  # rounds of the faster side at least that far (shrunk) above their floor
    seen: int  # rounds of the faster side read
    chance: float  # of all `rounds` landing there by luck
    needed: int  # rounds of the slower side that would rule it out
    machine: float | None = None  # the share of the run's every benchmark's rounds that high (`machine`)
    apart: bool = False  # separate runs: `landed` of `seen` are the slower side's run's every benchmark's rounds
    both: bool = False  # `landed` of `seen` are both sides' rounds (each against its own floor), not the faster's

    def describe(self) -> str:
        if self.apart:
            which = f"measured by a separate run, in which {self.landed} of the {self.seen} rounds of every benchmark"
        else:
            other = "both sides'" if self.both else "head's" if self.side == "base" else "base's"
            run = f" (and {self.machine * 100:.0f}% of the run's rounds of every benchmark)" if self.machine else ""
            which = f"{self.landed} of {other} {self.seen} rounds{run}"
        return (
            f"{self.side}'s {self.rounds} rounds may all have landed in a slow mode: {which} sit "
            f"{(self.above**SHRINK - 1) * 100:.0f}% or more above their own fastest, so all {self.rounds} landing "
            f"{(self.above - 1) * 100:.0f}% high has a {self.chance * 100:.1g}% chance; "
            f"{self.needed} rounds of {self.side} rule it out"
        )


def machine(*results, runs: set[str] | None = None) -> np.ndarray:
    """Every benchmark's and the reference workload's rounds of these CommitResults (of `runs`, if given),
    each against its own (benchmark, run) floor, pooled (`relative`)."""
    groups: dict[tuple, list[float]] = {}
    for c in results:
        if c is None:
            continue
        for key, samples in [(r.spec.id, r.samples) for r in c.results] + [("reference", c.reference)]:
            for s in samples:
                if runs is None or s.run in runs:
                    groups.setdefault((id(c), key, s.run), []).append(min(s.raw_times) / s.number_per_run)
    return relative(groups.values())


def _chance(own: np.ndarray, ratio: float, n: int, pool) -> tuple[float, float]:
    """The chance of all n rounds landing `ratio` high by luck, and the share landing there (`share`)."""
    p = share(own, math.log(ratio), pool)
    # All n landing high, and the lowest of them as low as the slower side's floor: a mode reaching down to it.
    high = own[own >= SHRINK * math.log(ratio)]
    reach = float(np.count_nonzero(high <= REACH * math.log(ratio))) / len(high) if len(high) else 1.0
    return p**n * (1.0 - (1.0 - reach) ** n), p


def luck(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]], pool=None) -> Luck | None:
    """Whether the slower side's floor may be a slow mode's (`Luck`), else None. `base`, `head`: round values
    by run; `pool`: `machine` (or its maker), or an `Apart`: the slower side's run's own share."""
    b = [g for g in base if len(g)]
    h = [g for g in head if len(g)]
    if not b or not h:
        return None
    b_floor, h_floor = min(min(g) for g in b), min(min(g) for g in h)
    if h_floor > b_floor:
        slower, faster, name, ratio = h, b, "head", h_floor / b_floor
    elif b_floor > h_floor:
        slower, faster, name, ratio = b, h, "base", b_floor / h_floor
    else:
        return None
    if isinstance(pool, Apart):  # separate runs: the slower side's run's own share, drawn toward nothing
        own, pool, apart = (pool.base if name == "base" else pool.head)(), None, True
    else:
        own, pool, apart = np.zeros(0), (pool() if callable(pool) else pool), False
    n = sum(len(g) for g in slower)
    # Whichever of the faster side's rounds and both sides' (no change: one machine, one distribution) makes luck
    # likelier: a slow mode the faster side's few rounds skipped a band of still counts.
    reads = [(own, False)] if len(own) else [(relative(faster), False), (relative([*faster, *slower]), True)]
    chance, p, own, both = max(((*_chance(o, ratio, n, pool), o, b) for o, b in reads), key=lambda r: r[0])
    if ALPHA <= 0 or chance < ALPHA:  # ALPHA 0: no slow-mode test
        return None
    landed = int(np.count_nonzero(own >= SHRINK * math.log(ratio)))
    run = float(np.mean(pool >= SHRINK * math.log(ratio))) if pool is not None and len(pool) else None
    return Luck(name, n, ratio, landed, len(own), chance, rounds_to_rule_out(p), run, apart, both)


@dataclass(frozen=True)
class Modes:
    """Separated modes in a benchmark's rounds: a share of them land a ratio above the fast mode."""

    ratio: float  # the slow mode's typical ratio to the fast one
    share: float  # of the rounds that landed in it
    rounds: int  # rounds read
    split: float  # log ratio to a group's floor from which a round is in the slow mode

    def describe(self) -> str:
        return f"its rounds fall in two modes, {self.share * 100:.0f}% of them about {self.ratio:.2f}x slower"

    def fast(self, values: Sequence[float]) -> list[float]:
        """The rounds of one side in its fast mode: below `split` above its floor."""
        if not len(values):
            return []
        floor = min(values)
        return [v for v in values if math.log(v / floor) < self.split]


# Two modes: a gap in the relative rounds of MODE_GAP (log) and GAP_SPREAD fast-mode IQRs, MODE_SHARE either side.
MODE_GAP = math.log(1.10)
GAP_SPREAD = 1.5
MODE_SHARE = 0.1


def detect(pool: np.ndarray) -> Modes | None:
    """The slow mode in pooled relative rounds (`relative`), when they fall in separated modes."""
    n = len(pool)
    if n < 6:
        return None
    x = np.sort(pool)
    gaps = np.diff(x)
    lo, hi = max(1, math.ceil(MODE_SHARE * n)), n - max(1, math.ceil(MODE_SHARE * n))
    if hi <= lo:
        return None
    k = lo - 1 + int(np.argmax(gaps[lo - 1 : hi - 1]))  # the widest gap with enough rounds either side
    fast, slow = x[: k + 1], x[k + 1 :]
    q1, _, q3 = blocks.quartiles(fast.tolist())  # np.percentile's to the bit, without importing numpy.ma
    if gaps[k] < max(MODE_GAP, GAP_SPREAD * (q3 - q1)):
        return None
    ratio = math.exp(blocks.quartiles(slow.tolist())[1] - blocks.quartiles(fast.tolist())[1])
    return Modes(ratio, len(slow) / n, n, float((x[k] + x[k + 1]) / 2))
