"""One figure a round of each metric: what a metric's verdict and a file's figures both read. Pure."""

from __future__ import annotations

from regress.analysis import stats
from regress.core.kinds import COUNTED, MEMORY, Metric
from regress.core.records import BenchmarkResult


def values(r: BenchmarkResult, metric: Metric) -> tuple[float, ...]:
    """One figure a round. Memory: the CUDA allocator's when the benchmark used CUDA, else the CPU's."""
    if metric in MEMORY:
        device = "cuda" if any(m.device == "cuda" for m in r.memory) else "cpu"
        return tuple(float(getattr(m, metric.value)) for m in r.memory if m.device == device)
    if metric == Metric.COMPILE_TIME:
        return tuple(c.compile_time for c in r.compiled)
    if metric in COUNTED:
        return tuple(float(getattr(c, metric.value)) for c in r.compiled)
    if metric == Metric.TRACKED:
        return tuple(t.value for t in r.tracked)
    if metric == Metric.TIME:
        return stats.round_values(r) if r.ok else ()
    if metric == Metric.INSTRUCTIONS:
        return tuple(float(c.value) for c in r.counts)
    raise ValueError(f"no values for {metric}")
