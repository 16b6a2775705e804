"""The site's metrics beyond time (issue 14): chart series for the bench pages' metric
switch and Compare tables for the label pages, one per metric, bytes with binary prefixes.

Kept apart from site.py: site.py only adds what these return to each page's
JSON; `templates/metrics_*.html` draw them. Values are formatted here, so the
browser only places text (never HTML) from them.
"""

from __future__ import annotations

import statistics

from regress.analysis import metrics
from regress.core.kinds import Kind, Metric
from regress.core.records import BenchmarkId, BenchmarkResult
from regress.output.metric_units import FOOTNOTE, formatter

SHOWN = (
    Metric.ALLOCATED,
    Metric.PEAK,
    Metric.COMPILE_TIME,
    Metric.GRAPHS,
    Metric.GRAPH_BREAKS,
    Metric.RECOMPILES,
    Metric.TRACKED,
)
_BINARY = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))
TEMPLATES = ("metrics_switch.html",)


def _axis(metric: Metric, values: list[float], unit: str = "") -> tuple[float, str]:
    """(scale, axis title): bytes in the binary unit of the largest value."""
    what = metrics.WHAT[metric]
    if metric in (Metric.ALLOCATED, Metric.PEAK):
        top = max(values, default=0)
        scale, name = next((s, n) for s, n in _BINARY if top >= s or s == 1)
        return scale, f"{what} ({name})"
    if metric == Metric.COMPILE_TIME:
        return 1e-3, f"{what} (ms)"
    return 1.0, f"{what}" + (f" ({unit})" if unit else "")


def _level(r: BenchmarkResult, metric: Metric) -> float | None:
    got = metrics.values(r, metric) if r.failure is None else ()
    return statistics.median(got) if got else None


# Which field of a result holds each metric's figures: a result without it has none to show.
_FIELD = {
    Metric.ALLOCATED: "memory",
    Metric.PEAK: "memory",
    Metric.COMPILE_TIME: "compiled",
    Metric.GRAPHS: "compiled",
    Metric.GRAPH_BREAKS: "compiled",
    Metric.RECOMPILES: "compiled",
    Metric.TRACKED: "tracked",
}


class Index:
    """Per series, each benchmark's results with figures beyond time: [(commit index, result)].

    Built in one pass over every series' history, so a page looks its benchmark
    up in a dict instead of scanning every commit's results (which cost
    benchmarks^2 x commits x metrics: 221 s at 1,000 commits x 200 benchmarks).
    """

    def __init__(self, series: list) -> None:
        self.by_series: list[dict[BenchmarkId, list[tuple[int, BenchmarkResult]]]] = []
        for s in series:
            found: dict[BenchmarkId, list[tuple[int, BenchmarkResult]]] = {}
            for ci, commit in enumerate(s.history):
                for r in commit.results:
                    if r.failure is None and (r.memory or r.compiled or r.tracked):
                        found.setdefault(r.id, []).append((ci, r))
            self.by_series.append(found)

        self._levels: dict[tuple[int, BenchmarkId, Metric], list[tuple[int, float, BenchmarkResult]]] = {}

    def levels(self, k: int, bid: BenchmarkId, metric: Metric) -> list[tuple[int, float, BenchmarkResult]]:
        """The k-th series' (commit index, level, result) of `bid` for `metric`, oldest first; computed once."""
        key = (k, bid, metric)
        if key not in self._levels:
            if metric in (Metric.ALLOCATED, Metric.PEAK):  # both from one pass over the rounds' figures
                pairs = [(ci, _memory_levels(r), r) for ci, r in self.by_series[k].get(bid, ()) if r.memory]
                for i, m in enumerate((Metric.ALLOCATED, Metric.PEAK)):
                    self._levels[(k, bid, m)] = [(ci, y[i], r) for ci, y, r in pairs if y is not None]
            else:
                name = _FIELD[metric]
                found = ((ci, _level(r, metric), r) for ci, r in self.by_series[k].get(bid, ()) if getattr(r, name))
                self._levels[key] = [(ci, y, r) for ci, y, r in found if y is not None]
        return self._levels[key]


def _memory_levels(r: BenchmarkResult) -> tuple[float, float] | None:
    """(allocated, peak) levels at once: `_level` of each, as `analysis.metrics.values` picks the device."""
    device = "cuda" if any(m.device == "cuda" for m in r.memory) else "cpu"
    used = [m for m in r.memory if m.device == device]
    if not used:
        return None
    first = used[0]
    if all(m.allocated == first.allocated and m.peak == first.peak for m in used):  # the usual case: exact figures
        return float(first.allocated), float(first.peak)
    return statistics.median([float(m.allocated) for m in used]), statistics.median([float(m.peak) for m in used])


def bench(series: list, shas: list[list[str]], bid: BenchmarkId, index: Index | None = None) -> dict:
    """{"metrics": [...]}: per metric this benchmark has, per series, its level per commit."""
    index = Index(series) if index is None else index
    out = []
    fmt = {m: formatter(m) for m in SHOWN}
    for metric in SHOWN:
        lines, unit = [], ""
        for k, (s, sha) in enumerate(zip(series, shas)):
            points = []
            for i, y, r in index.levels(k, bid, metric):
                unit = r.tracked[-1].unit if metric == Metric.TRACKED else unit
                points.append((sha[i], y))
            if points:
                lines.append((s.name, points))
        if not lines:
            continue
        scale, title = _axis(metric, [y for _, pts in lines for _, y in pts], unit)
        out.append(
            {
                "metric": metric.value,
                "title": title,
                "note": FOOTNOTE[metric],
                "series": [
                    {
                        "name": name,
                        "sha": [c for c, _ in pts],
                        "y": [y / scale for _, y in pts],
                        "text": [fmt[metric](y) for _, y in pts],
                    }
                    for name, pts in lines
                ],
            }
        )
    return {"metrics": out}


def _default_threshold(metric: Metric) -> float:
    from pathlib import Path

    from regress.core.config import Config

    return Config(root=Path()).threshold_for(metric)


def label_tables(
    series: list, ids: list[BenchmarkId], *, threshold_for=_default_threshold, index: Index | None = None
) -> list[dict]:
    """Per metric, a table of the label's benchmarks: newest level per series, the change
    against the previous measured commit and its verdict (the metric's own rule)."""
    index = Index(series) if index is None else index
    tables = []
    for metric in SHOWN:
        threshold = threshold_for(metric)
        rows = []
        for k, s in enumerate(series):
            for bid in ids:
                have = index.levels(k, bid, metric)
                if not have:
                    continue
                head = have[-1][2]
                row = {
                    "series": s.name,
                    "name": str(bid)[len(bid.label) + 3 :],
                    "value": formatter(metric)(have[-1][1]),
                    "change": "",
                    "verdict": "",
                }
                if len(have) > 1:
                    v = metrics.judge(have[-2][2], head, metric, threshold=threshold)
                    row["change"] = "" if v.ratio is None else f"{(v.ratio - 1) * 100:+.1f}%"
                    row["verdict"] = str(v.verdict) if v.verdict != Kind.UNCHANGED else "unchanged"
                rows.append(row)
        if rows:
            tables.append(
                {"metric": metric.value, "title": metrics.WHAT[metric], "note": FOOTNOTE[metric], "rows": rows}
            )
    return tables
