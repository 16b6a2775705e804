"""The site's metrics beyond time: chart series for the bench pages' metric switch and Compare tables for
the label pages, one per metric, bytes with binary prefixes. Values are formatted here: the browser only
places text (never HTML)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from regress.analysis import metrics
from regress.core.kinds import Kind, Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.core.records import BenchmarkId, BenchmarkResult
from regress.core.units import binary_unit
from regress.report.data_files import Line


def _axis(metric: Metric, values: list[float], unit: str = "") -> tuple[float, str]:
    """(scale, axis title): bytes in the binary unit of the largest value, compile time in ms."""
    s = spec(metric)
    if s.axis == "binary":
        scale, name = binary_unit(max(values, default=0))
        return scale, f"{s.what} ({name})"
    if s.axis == "ms":
        return 1e-3, f"{s.what} (ms)"
    return 1.0, f"{s.what}" + (f" ({unit})" if unit else "")


class Index:
    """Per series, each benchmark's figures beyond time, grouped once by benchmark."""

    def __init__(self, series: list) -> None:
        self.series = series
        self.by_series = [s.table.by_bench(~np.isnan(s.table.extra).all(axis=0)) for s in series]
        self._arrays: dict[tuple[int, BenchmarkId, Metric], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._by_id: dict[tuple[int, int], dict[BenchmarkId, BenchmarkResult]] = {}

    def arrays(self, k: int, bid: BenchmarkId, metric: Metric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The k-th series' commit indices, levels and table rows of `bid` for `metric`, oldest first."""
        key = (k, bid, metric)
        if key not in self._arrays:  # the chart and the label tables both ask
            t = self.series[k].table
            rows = self.by_series[k].get(bid, np.zeros(0, dtype=np.int64))
            # Every metric's values of the benchmark gathered at once.
            every, pos = t.extra[:, rows], t.pos[rows].astype(np.int64)
            for m, y in zip(BEYOND_TIME, every):
                have = ~np.isnan(y)
                self._arrays[(k, bid, m)] = (pos[have], y[have], rows[have])
        return self._arrays[key]

    def result(self, k: int, row: int) -> BenchmarkResult:
        """The benchmark result behind a table row (its commit read from the summary)."""
        t = self.series[k].table
        at = (k, int(t.pos[row]))
        if at not in self._by_id:  # the label tables ask for the same two commits benchmark after benchmark
            self._by_id[at] = t.load(at[1]).by_id()
        return self._by_id[at][t.ids[int(t.bench[row])]]


def bench(series: list, bid: BenchmarkId, index: Index) -> tuple[list[dict], list[Line]]:
    """Per metric this benchmark has: its axis (title, note, scale) and per series a line of its levels."""
    out, lines = [], []
    for metric in BEYOND_TIME:
        found, unit = [], ""
        for k, s in enumerate(series):
            at, y, rows = index.arrays(k, bid, metric)
            if len(at):
                if metric == Metric.TRACKED:
                    unit = s.table.units.get(int(rows[-1]), "")
                found.append((s.name, at, y))
        if not found:
            continue
        scale, title = _axis(metric, [float(np.max(y)) for _, _, y in found], unit)
        text = functools.lru_cache(maxsize=4096)(spec(metric).fmt)  # exact figures repeat commit after commit
        out.append(
            {
                "metric": metric.value,
                "title": title,
                "note": spec(metric).footnote,
                "scale": scale,
                "series": [{"name": name} for name, _, _ in found],
            }
        )
        lines += [Line(metric.value, name, at, {"y": y}, text=text) for name, at, y in found]
    return out, lines


def label_tables(
    series: list, ids: list[BenchmarkId], *, threshold_for: Callable[[Metric], float], index: Index
) -> list[dict]:
    """Per metric, a table of the label's benchmarks: newest level per series, and the change and verdict
    against the previous measured commit, as `regress compare --metric` judges."""
    tables = []
    for metric in BEYOND_TIME:
        threshold = threshold_for(metric)
        rows = []
        for k, s in enumerate(series):
            for bid in ids:
                # The newest two (commit index, level, table row), oldest first.
                have = list(zip(*(a[-2:].tolist() for a in index.arrays(k, bid, metric))))
                if not have:
                    continue
                head = index.result(k, have[-1][2])
                row = {
                    "series": s.name,
                    "name": str(bid)[len(bid.label) + 3 :],
                    "value": spec(metric).fmt(have[-1][1]),
                    "change": "",
                    "verdict": "",
                }
                if len(have) > 1:
                    v = metrics.judge(index.result(k, have[-2][2]), head, metric, threshold=threshold)
                    row["change"] = "" if v.ratio is None else f"{(v.ratio - 1) * 100:+.1f}%"
                    row["verdict"] = str(v.verdict) if v.verdict != Kind.UNCHANGED else "unchanged"
                rows.append(row)
        if rows:
            s = spec(metric)
            tables.append({"metric": metric.value, "title": s.what, "note": s.footnote, "rows": rows})
    return tables
