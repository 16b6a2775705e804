"""Every metric's facts in one table: what it is called, how it reads, how it is judged.

pyperf keeps one unit-to-formatter table; regress keeps one `MetricSpec` per
`Metric`, and config (the default thresholds and their `[tool.regress]` keys),
analysis (the wording of verdicts, which figures are exact), output (units,
formatters, footnotes) and the site (axis titles) all read it, so a metric's
facts are written once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regress.core.kinds import Metric
from regress.core.units import fmt_bytes, fmt_count, fmt_time, fmt_value


@dataclass(frozen=True)
class MetricSpec:
    metric: Metric
    what: str  # what one figure is, in verdict reasons and titles: "bytes allocated per call"
    unit: str  # the unit `regress compare --format json` names: "seconds", "bytes", "count", "value"
    fmt: Callable[[float | None], str]  # one level as people read it
    threshold: float  # the default threshold
    config_key: str  # the `[tool.regress]` key that sets the threshold; "" where it is fixed
    exact: bool  # load-independent: identical figures mean identical behaviour, one round decides
    footnote: str  # what a table of it says its figures are
    field: str  # the BenchmarkResult field that holds its figures
    axis: str  # the site's chart axis: "binary" (bytes in KiB, MiB...), "ms" (seconds as ms), "" as they are
    better: str  # which way is better: "lower", or "own" where each value says (a track_* function's `better`)


# metric, what one figure is, unit, format, default threshold, its [tool.regress] key ("": fixed), exact,
# the BenchmarkResult field of its figures, the site's axis, which way is better.
_ROWS = (
    (Metric.TIME, "wall time", "seconds", fmt_time, 0.05, "threshold", False, "samples", "", "lower"),
    # Counts are nearly deterministic (repeated runs agree exactly), so a far smaller change is real.
    (Metric.INSTRUCTIONS, "instructions per call", "instructions", fmt_count, 0.01, "", True, "counts", "", "lower"),
    # Bytes per call are exact, so a small change is real.
    (Metric.ALLOCATED, "bytes allocated per call", "bytes", fmt_bytes, 0.01, "memory_threshold", True, "memory", "binary", "lower"),
    (Metric.PEAK, "peak bytes per call", "bytes", fmt_bytes, 0.01, "memory_threshold", True, "memory", "binary", "lower"),
    (Metric.COMPILE_TIME, "compile time of the first call", "seconds", fmt_time, 0.10, "compile_time_threshold", False, "compiled", "ms", "lower"),
    # dynamo's counts have no threshold: any change in graphs, graph breaks or recompiles is reported.
    (Metric.GRAPHS, "graphs", "count", fmt_count, 0.0, "", True, "compiled", "", "lower"),
    (Metric.GRAPH_BREAKS, "graph breaks", "count", fmt_count, 0.0, "", True, "compiled", "", "lower"),
    (Metric.RECOMPILES, "recompiles", "count", fmt_count, 0.0, "", True, "compiled", "", "lower"),
    # A tracked value is judged exactly when its rounds agree, else like a time; its function says which way is better.
    (Metric.TRACKED, "tracked value", "value", fmt_value, 0.05, "track_threshold", False, "tracked", "", "own"),
)  # fmt: skip
_FOOTNOTES = {
    Metric.TIME: "times are each commit's fastest round, a round being one fresh process, ± half the IQR of its rounds",
    Metric.INSTRUCTIONS: "instructions per call (callgrind), the median of each commit's runs",
    Metric.ALLOCATED: "bytes allocated per call by torch's allocator, from one profiled call a round (exact)",
    Metric.PEAK: "peak bytes held during a call above what was held before it (exact)",
    Metric.COMPILE_TIME: "seconds of a compiled benchmark's first call, median of its rounds",
    Metric.GRAPHS: "graphs dynamo produced (any change is reported)",
    Metric.GRAPH_BREAKS: "dynamo graph breaks (any change is reported)",
    Metric.RECOMPILES: "frames dynamo recompiled in steady state (any change is reported)",
    Metric.TRACKED: "values returned by track_* functions, median of each commit's rounds",
}
SPECS: dict[Metric, MetricSpec] = {
    m: MetricSpec(m, what, unit, fmt, threshold, key, exact, _FOOTNOTES[m], field, axis, better)
    for m, what, unit, fmt, threshold, key, exact, field, axis, better in _ROWS
}
# The metrics beyond wall time and instruction counts: `--metric`'s choices, the site's metric switch.
BEYOND_TIME = tuple(m for m in SPECS if m not in (Metric.TIME, Metric.INSTRUCTIONS))
# The `[tool.regress]` keys of per-metric thresholds (wall time's `threshold` is a Config field of its own).
THRESHOLD_KEYS = {s.config_key: s.threshold for s in SPECS.values() if s.config_key not in ("", "threshold")}


def spec(metric: Metric) -> MetricSpec:
    return SPECS[Metric(metric)]
