"""Which of core.units' formats each metric reads in, and what its tables say it is."""

from __future__ import annotations

from regress.core.kinds import Metric
from regress.core.units import fmt_bytes, fmt_count, fmt_time, fmt_value


def formatter(metric: Metric):
    """The function that prints one level of `metric`."""
    if metric in (Metric.ALLOCATED, Metric.PEAK):
        return fmt_bytes
    if metric in (Metric.TIME, Metric.COMPILE_TIME):
        return fmt_time
    if metric == Metric.TRACKED:
        return fmt_value
    return fmt_count


FOOTNOTE = {
    Metric.ALLOCATED: "bytes allocated per call by torch's allocator, from one profiled call a round (exact)",
    Metric.PEAK: "peak bytes held during a call above what was held before it (exact)",
    Metric.COMPILE_TIME: "seconds of a compiled benchmark's first call, median of its rounds",
    Metric.GRAPHS: "graphs dynamo produced (any change is reported)",
    Metric.GRAPH_BREAKS: "dynamo graph breaks (any change is reported)",
    Metric.RECOMPILES: "frames dynamo recompiled in steady state (any change is reported)",
    Metric.TRACKED: "values returned by track_* functions, median of each commit's rounds",
}
