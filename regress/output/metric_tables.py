"""Terminal tables for `regress show` of the metrics beyond time: memory, compile figures, tracked values.

Each metric in its own table, never mixed with the Compare table of times.
"""

from __future__ import annotations

import statistics

from regress.analysis import metrics
from regress.core.kinds import Metric
from regress.core.records import BenchmarkResult, CommitResult
from regress.core.units import fmt_bytes, fmt_value
from regress.output.verdicts import fmt_time


def _name(r: BenchmarkResult) -> str:
    return f"{r.id.sub_label}" + (f" / {r.id.description}" if r.id.description else "") + f" [{r.id.num_threads}t]"


def _table(title: str, rows: list[BenchmarkResult], columns: list[tuple[str, callable]]) -> list[str]:
    out = []
    for label in dict.fromkeys(r.id.label for r in rows):
        group = [r for r in rows if r.id.label == label]
        width = max(len(_name(r)) for r in group)
        out.append(f"[{label}] {title}")
        out.append(f"  {'':<{width}}" + "".join(f"  {head:>14}" for head, _ in columns))
        for r in group:
            out.append(f"  {_name(r):<{width}}" + "".join(f"  {cell(r):>14}" for _, cell in columns))
        out.append("")
    return out


def _device(r: BenchmarkResult) -> str:
    return "cuda" if any(m.device == "cuda" for m in r.memory) else "cpu"


def _median(r: BenchmarkResult, metric: Metric) -> float:
    return statistics.median(metrics.values(r, metric))


def metric_tables(result: CommitResult) -> str:
    ok = [r for r in result.results if r.failure is None]
    out: list[str] = []
    memory = [r for r in ok if r.memory]
    if memory:
        out += _table(
            "memory per call (torch's allocator; median of the rounds)",
            memory,
            [
                ("allocated", lambda r: fmt_bytes(_median(r, Metric.ALLOCATED))),
                ("peak", lambda r: fmt_bytes(_median(r, Metric.PEAK))),
                ("device", _device),
            ],
        )
    compiled = [r for r in ok if r.compiled]
    if compiled:
        out += _table(
            "torch.compile (first call; dynamo's counts)",
            compiled,
            [
                ("compile_time", lambda r: fmt_time(_median(r, Metric.COMPILE_TIME))),
                ("graphs", lambda r: f"{_median(r, Metric.GRAPHS):g}"),
                ("graph_breaks", lambda r: f"{_median(r, Metric.GRAPH_BREAKS):g}"),
                ("recompiles", lambda r: f"{_median(r, Metric.RECOMPILES):g}"),
            ],
        )
    tracked = [r for r in ok if r.tracked]
    if tracked:
        out += _table(
            "tracked values (median of the rounds)",
            tracked,
            [
                ("value", lambda r: fmt_value(_median(r, Metric.TRACKED))),
                ("unit", lambda r: r.tracked[-1].unit or "-"),
                ("better", lambda r: r.tracked[-1].better),
                ("rounds", lambda r: str(len(r.tracked))),
            ],
        )
    return "\n".join(out).rstrip()
