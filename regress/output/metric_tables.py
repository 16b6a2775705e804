"""Terminal tables for `regress show` of the metrics beyond time: memory, compile figures, tracked values.

Each metric in its own table, never mixed with the Compare table of times.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from regress.analysis import metrics
from regress.core.kinds import COUNTED, MEMORY, Metric
from regress.core.metric_specs import spec
from regress.core.records import BenchmarkResult, CommitResult


def _name(r: BenchmarkResult) -> str:
    return f"{r.id.sub_label}" + (f" / {r.id.description}" if r.id.description else "") + f" [{r.id.num_threads}t]"


def _table(
    title: str, rows: list[BenchmarkResult], columns: list[tuple[str, Callable[[BenchmarkResult], str]]]
) -> list[str]:
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


def _figures(*shown: Metric) -> list[tuple[str, Callable[[BenchmarkResult], str]]]:
    """A column per metric: its median, in its spec's format."""

    def column(m: Metric) -> Callable[[BenchmarkResult], str]:
        return lambda r: spec(m).fmt(_median(r, m))

    return [(m.value, column(m)) for m in shown]


def metric_tables(result: CommitResult) -> str:
    ok = [r for r in result.results if r.failure is None]
    out: list[str] = []
    memory = [r for r in ok if r.memory]
    if memory:
        out += _table(
            "memory per call (torch's allocator; median of the rounds)",
            memory,
            [*_figures(*MEMORY), ("device", _device)],
        )
    compiled = [r for r in ok if r.compiled]
    if compiled:
        out += _table(
            "torch.compile (first call; dynamo's counts)",
            compiled,
            _figures(Metric.COMPILE_TIME, *COUNTED),
        )
    tracked = [r for r in ok if r.tracked]
    if tracked:
        out += _table(
            "tracked values (median of the rounds)",
            tracked,
            [
                ("value", lambda r: spec(Metric.TRACKED).fmt(_median(r, Metric.TRACKED))),
                ("unit", lambda r: r.tracked[-1].unit or "-"),
                ("better", lambda r: r.tracked[-1].better),
                ("rounds", lambda r: str(len(r.tracked))),
            ],
        )
    return "\n".join(out).rstrip()
