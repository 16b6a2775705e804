"""How each metric's figures read: times in s/ms/us/ns, bytes with binary prefixes, counts with separators."""

from __future__ import annotations

from regress.core.kinds import Metric

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")


def fmt_bytes(n: float | None) -> str:
    """1536 -> '1.50 KiB'; exact below 1 KiB."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_BINARY) - 1:
        value /= 1024
        unit += 1
    return f"{int(value)} B" if unit == 0 else f"{value:.2f} {_BINARY[unit]}"


def fmt_value(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def formatter(metric: Metric):
    """The function that prints one level of `metric`."""
    from regress.output.verdicts import fmt_count, fmt_time

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
