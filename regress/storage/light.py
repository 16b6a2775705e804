"""The summary's light copy of a result: what history readers need, without the block times.

Each round (and reference round) reduced to the one figure the differ and
the change points read (a one-block round of one execution, so
`round_values` gives it back exactly), memory figures without their start
times, the rest as it is, and torch's pooled-block figures for the Compare
tables.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from regress.core import blocks, records
from regress.core.blocks import summarize_times


@dataclasses.dataclass(frozen=True)
class LightResult(records.BenchmarkResult):
    """A BenchmarkResult whose rounds hold only their round values, with torch's pooled-block
    figures kept aside: (q1, median, q3, significant figures), empty when it has no times."""

    torch_stats: tuple[float, ...] = ()


def _light_times(s: records.Sample) -> tuple[float, ...]:
    """A round's one figure (its fastest block, per run); a round torch would warn about also keeps its
    quartiles and slowest block, so the verdict's note on it (`blocks.worst_round_iqr`) reads the same."""
    if not s.raw_times:
        return ()
    fastest = min(s.raw_times) / s.number_per_run
    times = s.times
    if blocks.round_iqr(times) < blocks.IQR_WARN:
        return (fastest,)
    q1, q2, q3 = blocks.quartiles(sorted(times))
    return (fastest, q1, q2, q3, max(times))  # five sorted values: their quartiles are these three exactly


def _light_samples(samples: tuple[records.Sample, ...]) -> tuple[records.Sample, ...]:
    return tuple(dataclasses.replace(s, number_per_run=1, raw_times=_light_times(s)) for s in samples)


def _light_result(r: records.BenchmarkResult, seen: dict) -> records.BenchmarkResult:
    figures: tuple[float, ...] = ()
    if r.ok and any(s.raw_times for s in r.samples):
        times = np.concatenate([np.asarray(s.raw_times, dtype=np.float64) / s.number_per_run for s in r.samples])
        q1, median, q3, sig = (a[0] for a in summarize_times(times[None, :]))
        figures = (float(q1), float(median), float(q3), float(sig))
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(records.BenchmarkResult)}
    fields["samples"] = _light_samples(r.samples)
    # A round's memory figures without its start time: the rounds' figures are mostly equal,
    # and one shared record for them halves what a light history costs to read.
    fields["memory"] = tuple(seen.setdefault(m, m) for m in (dataclasses.replace(m, started_at=0.0) for m in r.memory))
    return LightResult(**fields, torch_stats=figures)


def header(result: records.CommitResult) -> records.CommitResult:
    """A result without its benchmarks or reference rounds: the commit, its runs and fingerprint, its problems."""
    return dataclasses.replace(result, results=(), reference=())


def light(result: records.CommitResult) -> records.CommitResult:
    """The summary's copy of a result: what history readers need, without the block times."""
    seen: dict = {}
    return dataclasses.replace(
        result,
        results=tuple(_light_result(r, seen) for r in result.results),
        reference=_light_samples(result.reference),
    )
