"""An operator profile's records: what torch.profiler's key_averages says a benchmark's statement ran.

Frozen and pure, like the result records; `storage/store` keeps them as
JSON beside the results and `analysis/explanation` diffs two of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    """One operator's totals over a profile's executions (times in microseconds)."""

    name: str
    count: int
    self_cpu_us: float
    self_cuda_us: float = 0.0
    user: bool = False  # a record_function range of the user's code


@dataclass(frozen=True)
class OpTable:
    calls: int  # executions of the statement profiled
    ops: tuple[Op, ...]

    def kept(self) -> dict[str, Op]:
        return {o.name: o for o in self.ops if o.name.startswith("aten::") or o.user}
