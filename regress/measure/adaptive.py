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
depends on it. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from regress.analysis import stats
from regress.core.config import DEFAULT, Config
from regress.core.records import Settings

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

    @classmethod
    def for_threshold(cls, threshold: float, **fields) -> Budget:
        return cls(settle=SETTLE_SHARE * threshold, threshold=threshold, **fields)

    def __post_init__(self) -> None:
        if self.min_rounds < 1 or self.max_rounds < self.min_rounds:
            raise ValueError("need 1 <= min_rounds <= max_rounds")


def settled(values, budget: Budget) -> bool:
    """The rounds agree on a floor: the third-fastest is within `settle` of the fastest."""
    return len(values) >= stats.FEWEST_ROUNDS_TO_JUDGE and stats.floor_gap(values) <= math.log1p(budget.settle)


# Level differences between neighbouring commits worth more rounds, as shares
# of the threshold: below the low end compare calls them unchanged anyway, above
# the high end no plausible noise makes them go away.
CONTESTED_LOW = 0.5
CONTESTED_HIGH = 4.0


def contested(values, neighbours, budget: Budget) -> bool:
    """Whether this level and a neighbouring commit's differ by an amount a verdict hinges on."""
    if len(values) == 0:
        return False
    mine = math.log(stats.level(values))
    low, high = math.log1p(CONTESTED_LOW * budget.threshold), math.log1p(CONTESTED_HIGH * budget.threshold)
    return any(low < abs(mine - math.log(stats.level(other))) < high for other in neighbours if len(other))


def wants_round(values, budget: Budget, spent: float, neighbours=()) -> bool:
    """Whether a benchmark with these round values gets another round at its commit.

    `neighbours`: the same benchmark's round values at the neighbouring commits.
    """
    n = len(values)
    if n < budget.min_rounds:
        return True
    if n >= budget.max_rounds or spent >= budget.seconds:
        return False
    return not settled(values, budget) or contested(values, neighbours, budget)


def budget_for(cfg: Config, mode: str = "time", **overrides) -> Budget:
    """The configured round plan; instruction counts are deterministic and take one round."""
    if mode == "instructions":
        return Budget(min_rounds=1, max_rounds=1, seconds=0.0)
    fields = dict(min_rounds=cfg.min_rounds, max_rounds=cfg.max_rounds, seconds=cfg.budget)
    fields.update({k: v for k, v in overrides.items() if v is not None})
    fields["max_rounds"] = max(fields["max_rounds"], fields["min_rounds"])
    return Budget.for_threshold(cfg.threshold, **fields)


def with_plan(settings: Settings, budget: Budget) -> Settings:
    return replace(settings, min_rounds=budget.min_rounds, max_rounds=budget.max_rounds, budget=budget.seconds)
