"""How many rounds a benchmark gets at a commit: a few always, more where they disagree.

A round is cheap (a fork of a warm server), but a suite is many benchmarks
and a range many commits, so rounds go where they buy evidence. Every
benchmark gets `min_rounds`; beyond that, one whose fastest rounds already
agree (its floor gap within `settle`) needs no more, and one whose rounds
disagree gets more, one round at a time, until they agree, it reaches
`max_rounds`, or its commit has spent `seconds` of measuring.

Agreement within a commit is not enough: on a shared machine a commit's few
rounds can all land in the same slow mode (a neighbour on the sibling
hyperthread for a minute) and agree on a wrong floor. So a benchmark whose
level differs from a neighbouring commit's by an amount the verdict hinges
on (`contested`: more than half the threshold, less than four thresholds)
also gets more rounds, on both commits: evidence goes where a verdict
depends on it. And on a machine with modes, a commit whose rounds all sit
above a neighbour's floor by a ratio the neighbour's own rounds often reach
gets rounds until all of them landing in the slow mode is unlikely
(`analysis/modes.py`), beyond `max_rounds` if it must: the verdict waits for them. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from regress.analysis import judge, modes, stats
from regress.core.config import DEFAULT, Config
from regress.core.kinds import Kind
from regress.core.records import Settings
from regress.suite import machine

# Floor agreement that needs no more rounds, as a share of the threshold:
# a quarter of a 5% threshold is 1.25% between the fastest and third-fastest round.
SETTLE_SHARE = 0.25


@dataclass(frozen=True)
class Budget:
    """The round plan of one `regress run` (per commit); its defaults are `Config`'s
    (min_rounds, max_rounds, budget), chosen on a shared 2-core runner (docs/statistics.md)."""

    min_rounds: int = DEFAULT.min_rounds
    max_rounds: int = DEFAULT.max_rounds
    seconds: float = DEFAULT.budget  # of measuring per commit, after which only min_rounds are taken
    settle: float = SETTLE_SHARE * DEFAULT.threshold  # floor gap (relative) at which a benchmark's rounds agree
    threshold: float = DEFAULT.threshold  # compare's: neighbours' levels this far apart are worth more rounds
    cores: int = 0  # the machine's (0: unknown): a benchmark using every core is judged as compare judges it

    @classmethod
    def for_threshold(cls, threshold: float, **fields) -> Budget:
        return cls(settle=SETTLE_SHARE * threshold, threshold=threshold, **fields)

    def __post_init__(self) -> None:
        if self.min_rounds < 1 or self.max_rounds < self.min_rounds:
            raise ValueError("need 1 <= min_rounds <= max_rounds")


def settled(values, budget: Budget) -> bool:
    """The rounds agree on a floor: the third-fastest is within `settle` of the fastest."""
    return len(values) >= stats.FEWEST_ROUNDS_TO_JUDGE and stats.floor_gap(values) <= math.log1p(budget.settle)


def wants_round(values, budget: Budget, spent: float, neighbours=(), threads: int = 1, pool=None) -> bool:
    """Whether a benchmark with these round values gets another round at its commit.

    `neighbours`: the same benchmark's round values at the neighbouring commits; `threads`: its threads;
    `pool`: every benchmark's rounds of this run against their floors (`modes.machine`), or what makes them.
    Beyond `min_rounds`, within `max_rounds` and the budget: on a machine with modes, until the commit has
    `modes.FAST_ROUNDS` rounds in the fast one (`analysis/modes.py`); then, with neighbours, while the
    verdict against one of them is undecided (`hinges`); without, until its rounds agree on a floor.
    Beyond `max_rounds` (up to `modes.MOST`, within the budget; not where min_rounds = max_rounds): while
    a verdict waits on this side's rounds ruling out a slow mode (`awaits_luck`).
    """
    n = len(values)
    if n < budget.min_rounds:
        return True
    fixed = budget.min_rounds == budget.max_rounds  # a count asked for is exactly that
    if n >= (budget.max_rounds if fixed else max(budget.max_rounds, modes.MOST)) or spent >= budget.seconds:
        return False
    # A neighbour without a level yet decides nothing: it takes its own rounds, and this commit is asked again.
    others = [o for o in neighbours if len(o) >= stats.FEWEST_ROUNDS_TO_JUDGE]
    if n >= budget.max_rounds:  # beyond the plan only for the rounds a slow-mode test asks of this side
        return any(awaits_luck(values, other, budget, threads, pool) for other in others)
    # With modes, the rounds agree on a floor when the fast mode's do (the slow ones say nothing of it).
    seen = modes.detect(modes.relative([values, *others]))
    fast = seen.fast(values) if seen is not None else values
    if len(fast) < modes.FAST_ROUNDS:
        return True
    if not others:
        return not settled(fast, budget)
    return any(hinges(values, other, budget, threads, pool) for other in others)


def hinges(values, other, budget: Budget, threads: int = 1, pool=None) -> bool:
    """Whether compare's verdict between this commit's rounds and a neighbour's still hinges on rounds
    (`judge.decide`): undecided and more rounds may decide it, or a change called while either side's floor
    is unsettled (a change is confirmed on floors that agree). `unchanged`, or a change on settled floors, or
    a verdict rounds can't help: none."""
    lo, hi = (other, values) if stats.level(other) <= stats.level(values) else (values, other)
    d = judge.decide(list(lo), list(hi), threshold=budget.threshold, threads=threads, cores=budget.cores, pool=pool)
    if d.undecided:
        return True
    if d.kind not in (Kind.REGRESSION, Kind.IMPROVEMENT):
        return False
    fast = d.seen.fast if d.seen is not None and d.fast else list
    return not (settled(fast(values), budget) and settled(fast(other), budget))


def awaits_luck(values, other, budget: Budget, threads: int = 1, pool=None) -> bool:
    """Whether the rounds fall in separated modes (`modes.detect`) and the verdict against `other` is `noisy`
    only because this side's rounds may all have landed in the slow one (`modes.luck`), and the rounds that
    would rule it out are more than it has."""
    mine_higher = stats.level(other) <= stats.level(values)
    lo, hi = (other, values) if mine_higher else (values, other)
    d = judge.decide(list(lo), list(hi), threshold=budget.threshold, threads=threads, cores=budget.cores, pool=pool)
    if d.luck is None or d.seen is None:  # no separated modes: rounds that disagree, which max_rounds bounds
        return False
    return (d.luck.side == "head") == mine_higher and d.luck.needed > len(values)


def budget_for(cfg: Config, mode: str = "time", **overrides) -> Budget:
    """The configured round plan; instruction counts are deterministic and take one round."""
    if mode == "instructions":
        return Budget(min_rounds=1, max_rounds=1, seconds=0.0)
    fields = dict(min_rounds=cfg.min_rounds, max_rounds=cfg.max_rounds, seconds=cfg.budget, cores=machine.cores())
    fields.update({k: v for k, v in overrides.items() if v is not None})
    fields["max_rounds"] = max(fields["max_rounds"], fields["min_rounds"])
    return Budget.for_threshold(cfg.threshold, **fields)


def with_plan(settings: Settings, budget: Budget) -> Settings:
    return replace(settings, min_rounds=budget.min_rounds, max_rounds=budget.max_rounds, budget=budget.seconds)
