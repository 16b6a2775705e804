"""What `explain` and `bisect` found: plain records the renderers read (no I/O, nothing measured here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from regress.analysis.diff import Verdict
from regress.analysis.opdiff import OpDiff
from regress.core.kinds import Kind, ProbeState
from regress.core.records import BenchmarkId, CommitInfo


@dataclass(frozen=True)
class Explanation:
    """One benchmark's operators at base and head, and the verdict that asked for it."""

    id: BenchmarkId
    verdict: Verdict | None
    diff: OpDiff | None
    base_trace: Path | None = None  # the Chrome traces, where they are kept
    head_trace: Path | None = None
    failure: str = ""  # why one side could not be profiled


@dataclass(frozen=True)
class Explained:
    base: CommitInfo
    head: CommitInfo
    items: list[Explanation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # commit-level: a failed build, a broken suite
    note: str = ""  # why nothing was explained


@dataclass(frozen=True)
class Probe:
    """One commit a bisection looked at."""

    info: CommitInfo
    state: ProbeState
    why: str = ""
    measured: bool = False  # by this run (not only read from the store)


@dataclass(frozen=True)
class Bisected:
    good: CommitInfo
    bad: CommitInfo
    last_good: CommitInfo
    candidates: list[CommitInfo]  # the first bad commit is one of these (one when exact)
    direction: Kind  # how BAD moved from GOOD
    ids: list[BenchmarkId]
    verdicts: list[Verdict]  # the first bad commit against its parent
    probes: list[Probe] = field(default_factory=list)
    commits: int = 0  # commits between GOOD and BAD, both included
    inconclusive: str = ""  # why no commit is named, when the answer's own verdict is no change

    @property
    def first_bad(self) -> CommitInfo | None:
        return self.candidates[0] if len(self.candidates) == 1 and not self.inconclusive else None

    @property
    def measured(self) -> int:
        return sum(p.measured for p in self.probes)

    @property
    def skipped(self) -> list[Probe]:
        return [p for p in self.probes if p.state == ProbeState.SKIP]
