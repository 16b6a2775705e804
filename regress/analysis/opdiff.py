"""Which operators account for a change: base's and head's kept ops per benchmark call, lined up by name, the
biggest share of the change first. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from regress.core.ops import Op, OpTable  # Op, OpTable: re-exported


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

    @property
    def cuda_diff_us(self) -> float:
        return self.head_cuda_us - self.base_cuda_us


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
    rows.sort(key=lambda r: (-abs(r.diff_us + r.cuda_diff_us), r.name))
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
