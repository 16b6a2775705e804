"""Per benchmark, the history positions where it has a trustworthy level, and that level: what
`changepoints` segments (`series`). Pure.
"""

from __future__ import annotations

import math

import numpy as np

from regress.analysis import levels, stats
from regress.analysis.table import as_table
from regress.core.records import BenchmarkId

# A commit's level is left out when its second-fastest round sits this far above its fastest.
UNSETTLED = 0.20


def machine_outliers(history, *, threshold: float) -> set[int]:
    """History positions whose reference workload's floor (timed in every round) is more than the
    threshold away from the history's median one: measured while the machine was off its usual speed."""
    floors = {i: f for i, f in enumerate(as_table(history).reference.tolist()) if not math.isnan(f)}
    if len(floors) < 3:
        return set()
    typical = float(np.median(list(floors.values())))
    return {i for i, f in floors.items() if abs(math.log(f / typical)) > math.log1p(threshold)}


def series(
    history, *, threshold: float = 0.05, code: dict[str, str] | None = None
) -> dict[BenchmarkId, tuple[list[int], list[float]]]:
    """Per benchmark: the history positions where it has a trustworthy level, and that level with every run's
    shift taken out (`levels`). Left out: unsettled runs (UNSETTLED), and a lone run's commit measured while
    the machine was off (`machine_outliers`). Commits of identical code (`code`: sha -> digest) in a row are
    one point, at the first. `history`: a list of results or their `Table`."""
    table = as_table(history)
    off = machine_outliers(table, threshold=threshold)
    trusted = ~((table.run_n >= stats.FEWEST_ROUNDS_TO_JUDGE) & _unsettled(table.low, table.run_n))
    out: dict[BenchmarkId, tuple[list[int], list[float]]] = {}
    for bid, (positions, nodes, logs) in levels.points(table, code or {}, trusted, off).items():
        # One point per position, in history order; the same code as the point before: one level.
        keep_point = np.r_[True, nodes[1:] != nodes[:-1]] if len(nodes) else np.zeros(0, dtype=bool)
        out[bid] = (positions[keep_point].tolist(), np.exp(logs[keep_point]).tolist())
    return out


def _unsettled(low: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per run row (its three fastest rounds, its round count): the second-fastest disagrees by UNSETTLED."""
    if not len(n):
        return np.zeros(0, dtype=bool)
    second = low[np.minimum(1, np.maximum(n - 1, 0)), np.arange(len(n))]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(second / low[0]) > math.log1p(UNSETTLED)
