"""The site's metrics beyond time: chart series for the bench pages' metric
switch and Compare tables for the label pages, one per metric, bytes with binary prefixes.

Kept apart from site.py: site.py only adds what these return to each page's
JSON; `templates/metrics_*.html` draw them. Values are formatted here, so the
browser only places text (never HTML) from them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from regress.analysis import metrics
from regress.core.kinds import MEMORY, Kind, Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.core.records import BenchmarkId, BenchmarkResult
from regress.core.units import binary_unit

TEMPLATES = ("metrics_switch.html",)


def _axis(metric: Metric, values: list[float], unit: str = "") -> tuple[float, str]:
    """(scale, axis title): bytes in the binary unit of the largest value, compile time in ms."""
    s = spec(metric)
    if s.axis == "binary":
        scale, name = binary_unit(max(values, default=0))
        return scale, f"{s.what} ({name})"
    if s.axis == "ms":
        return 1e-3, f"{s.what} (ms)"
    return 1.0, f"{s.what}" + (f" ({unit})" if unit else "")


def _level(r: BenchmarkResult, metric: Metric) -> float | None:
    got = metrics.values(r, metric) if r.failure is None else ()
    return statistics.median(got) if got else None


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
            if metric in MEMORY:  # both from one pass over the rounds' figures
                pairs = [(ci, _memory_levels(r), r) for ci, r in self.by_series[k].get(bid, ()) if r.memory]
                for i, m in enumerate(MEMORY):
                    self._levels[(k, bid, m)] = [(ci, y[i], r) for ci, y, r in pairs if y is not None]
            else:
                name = spec(metric).field  # a result without this field's figures has none to show
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
    for metric in BEYOND_TIME:
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
                "note": spec(metric).footnote,
                "series": [
                    {
                        "name": name,
                        "sha": [c for c, _ in pts],
                        "y": [y / scale for _, y in pts],
                        "text": [spec(metric).fmt(y) for _, y in pts],
                    }
                    for name, pts in lines
                ],
            }
        )
    return {"metrics": out}


def label_tables(
    series: list, ids: list[BenchmarkId], *, threshold_for: Callable[[Metric], float], index: Index | None = None
) -> list[dict]:
    """Per metric, a table of the label's benchmarks: newest level per series, the change
    against the previous measured commit and its verdict (the metric's own rule, with the
    project's threshold for it: `Config.threshold_for`, as `regress compare --metric` judges)."""
    index = Index(series) if index is None else index
    tables = []
    for metric in BEYOND_TIME:
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
                    "value": spec(metric).fmt(have[-1][1]),
                    "change": "",
                    "verdict": "",
                }
                if len(have) > 1:
                    v = metrics.judge(have[-2][2], head, metric, threshold=threshold)
                    row["change"] = "" if v.ratio is None else f"{(v.ratio - 1) * 100:+.1f}%"
                    row["verdict"] = str(v.verdict) if v.verdict != Kind.UNCHANGED else "unchanged"
                rows.append(row)
        if rows:
            s = spec(metric)
            tables.append({"metric": metric.value, "title": s.what, "note": s.footnote, "rows": rows})
    return tables
