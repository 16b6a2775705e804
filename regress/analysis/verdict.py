"""A verdict on one benchmark between two commits, and the one order verdicts are listed in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

from regress.core.kinds import Kind
from regress.core.records import BenchmarkId


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
    # The smallest change this comparison could catch (a fraction: 0.031 is 3.1%), from its own rounds'
    # noise at its rounds and allowance (`analysis/detectable.py`); None where it has no such figure.
    detectable: float | None = None
    # Rounds a side that would catch a change of the threshold: its own rounds where it already can; None
    # where no number of rounds can (the allowance between runs, or threads on a shared machine) or unknown.
    detect_rounds: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Kind(self.verdict))

    @property
    def change(self) -> float | None:
        """ratio - 1: +0.10 is 10% slower."""
        return None if self.ratio is None else self.ratio - 1.0


class _Levels(TypedDict):
    id: BenchmarkId
    base_level: float | None
    head_level: float | None
    base_iqr: float | None
    head_iqr: float | None
    ratio: float | None
    p_value: float | None
    base_rounds: int
    head_rounds: int


class VerdictFields(_Levels, total=False):
    """The `Verdict` fields that a way of judging gathers before it settles the kind and the reason:
    `Verdict(verdict=..., reason=..., **fields)`."""

    ci_low: float | None
    ci_high: float | None
    detectable: float | None
    detect_rounds: int | None


def order_key(v: Verdict) -> tuple:
    ratio = v.ratio if v.ratio is not None and math.isfinite(v.ratio) else 0.0
    return (v.id.label, v.id.num_threads, Kind(v.verdict).rank, -ratio, v.id.sub_label, v.id.description)


def any_regression(verdicts: list[Verdict]) -> bool:
    return any(v.verdict == Kind.REGRESSION for v in verdicts)
