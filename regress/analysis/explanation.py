"""What `explain` and `bisect` found: which operators account for a change (`diff`: base's and head's kept ops per
benchmark call, lined up by name, the biggest share of the change first) and the plain records the renderers read.
Pure (no I/O, nothing measured here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from regress.analysis.diff import Verdict
from regress.core.kinds import Kind, ProbeState
from regress.core.ops import Op, OpTable  # Op, OpTable: re-exported
from regress.core.records import BenchmarkId, CommitInfo


class OpStatus(str, Enum):
    CHANGED = "changed"
    NEW = "new"
    GONE = "gone"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class OpRow:
    """One operator at both commits, per execution of the benchmark's statement."""

    name: str
    status: OpStatus
    base_calls: float  # op calls per benchmark call
    head_calls: float
    base_self_us: float  # self CPU time per benchmark call
    head_self_us: float
    base_cuda_us: float = 0.0
    head_cuda_us: float = 0.0

    @property
    def diff_us(self) -> float:
        return self.head_self_us - self.base_self_us


@dataclass(frozen=True)
class OpDiff:
    rows: tuple[OpRow, ...]
    base_self_us: float  # every kept op's self time per call, summed
    head_self_us: float
    base_calls: int
    head_calls: int

    @property
    def diff_us(self) -> float:
        return self.head_self_us - self.base_self_us

    def share(self, row: OpRow) -> float | None:
        """The row's part of the total change (1.0 = all of it); None when nothing changed."""
        total = self.diff_us
        return row.diff_us / total if abs(total) > 1e-12 else None


def diff(base: OpTable, head: OpTable) -> OpDiff:
    """Both tables per call, lined up by op name, biggest contribution to the change first."""
    b, h = base.kept(), head.kept()
    nb, nh = max(base.calls, 1), max(head.calls, 1)
    rows = []
    for name in set(b) | set(h):
        ob, oh = b.get(name), h.get(name)
        gone = oh is None or oh.count == 0
        status = OpStatus.NEW if ob is None or ob.count == 0 else OpStatus.GONE if gone else OpStatus.CHANGED
        (bc, bs, bu), (hc, hs, hu) = _per_call(ob, nb), _per_call(oh, nh)
        rows.append(OpRow(name, status, bc, hc, bs, hs, bu, hu))
    rows.sort(key=lambda r: (-abs(r.diff_us + (r.head_cuda_us - r.base_cuda_us)), r.name))  # CPU and CUDA
    return OpDiff(
        tuple(rows),
        base_self_us=sum(r.base_self_us for r in rows),
        head_self_us=sum(r.head_self_us for r in rows),
        base_calls=base.calls,
        head_calls=head.calls,
    )


def _per_call(op: Op | None, calls: int) -> tuple[float, float, float]:
    """An op's calls, self CPU and self CUDA time per benchmark call (none: zeros)."""
    return (op.count / calls, op.self_cpu_us / calls, op.self_cuda_us / calls) if op else (0.0, 0.0, 0.0)


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
