"""One result file's figures: per benchmark its level, its rounds' quartiles, torch's pooled-block statistics,
and per run the count and the three fastest round values (`to_tree`/`from_tree`: as the memo keeps them); and
`values`, one figure a round of a metric. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TypeAlias, cast

import numpy as np

from regress.analysis import stats
from regress.core.blocks import summarize_times
from regress.core.kinds import COUNTED, MEMORY, FailureKind, Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult

# A result's status: timed (a level), failed (a failure that is not a skip), other (skipped, counts only).
TIMED, FAILED, OTHER = 0, 1, 2
_SEP, _FIELD = "\x1d", "\x1e"


@dataclass(frozen=True)
class FileFigures:
    """Per result (rows, in the file's order) and per (result, run) of one file."""

    ids: tuple[BenchmarkId, ...]
    status: np.ndarray  # int8: TIMED, FAILED, OTHER
    ok: np.ndarray  # bool: BenchmarkResult.ok
    level: np.ndarray  # the fastest round (TIMED rows)
    band: np.ndarray  # (2, rows): quartiles of the round values
    torch: np.ndarray  # (4, rows): torch's q1, median, q3, significant figures of every block pooled
    instructions: np.ndarray  # int64 per call, -1: none
    extra: np.ndarray  # (len(BEYOND_TIME), rows): each metric's level, NaN: none
    messages: dict[int, str]  # row -> its failure (FAILED rows)
    units: dict[int, str]  # row -> its tracked value's unit
    run_row: np.ndarray  # int32 (per run of an ok result): its result row
    run: np.ndarray  # int32: index into runs
    runs: tuple[str, ...]
    run_n: np.ndarray  # int32: rounds of that run
    low: np.ndarray  # (3, run rows): its three fastest round values, NaN-padded
    reference: float  # the reference workload's level (NaN: none)


def _metric_level(r: BenchmarkResult, metric) -> float:
    if r.failure is not None or not getattr(r, spec(metric).field):
        return math.nan
    got = values(r, metric)
    return float(statistics.median(got)) if got else math.nan


def values(r: BenchmarkResult, metric: Metric) -> tuple[float, ...]:
    """One figure a round. Memory: the CUDA allocator's when the benchmark used CUDA, else the CPU's."""
    if metric in MEMORY:
        device = "cuda" if any(m.device == "cuda" for m in r.memory) else "cpu"
        return tuple(float(getattr(m, metric.value)) for m in r.memory if m.device == device)
    if metric == Metric.COMPILE_TIME:
        return tuple(c.compile_time for c in r.compiled)
    if metric in COUNTED:
        return tuple(float(getattr(c, metric.value)) for c in r.compiled)
    if metric == Metric.TRACKED:
        return tuple(t.value for t in r.tracked)
    if metric == Metric.TIME:
        return stats.round_values(r) if r.ok else ()
    if metric == Metric.INSTRUCTIONS:
        return tuple(float(c.value) for c in r.counts)
    raise ValueError(f"no values for {metric}")


def of(result: CommitResult, *, site: bool = True) -> FileFigures:
    """The figures of one (full or light) result. Without `site`, what only the site shows (the
    rounds' quartiles, torch's statistics, the metrics beyond time: the costly part) is left NaN."""
    rows = len(result.results)
    status, ok, level = [OTHER] * rows, [False] * rows, [math.nan] * rows  # lists: a numpy write per item is slow
    band = np.full((2, rows), math.nan)
    torch = np.full((4, rows), math.nan)
    instructions = np.full(rows, -1, dtype=np.int64)
    extra = np.full((len(BEYOND_TIME), rows), math.nan)
    messages: dict[int, str] = {}
    units: dict[int, str] = {}
    run_row, run, run_n, low = [], [], [], []
    runs: dict[str, int] = {}
    for k, r in enumerate(result.results):
        ok[k] = r.ok
        if r.counted:
            instructions[k] = r.instructions
        timed = [s for s in r.samples if s.raw_times]
        values = [min(s.raw_times) / s.number_per_run for s in timed]  # each round's value (stats.round_value)
        if r.ok and timed:
            status[k] = TIMED
            level[k] = min(values)
            if site:
                band[:, k] = stats.spread(values) or values[0]  # one round: that round
            known = getattr(r, "torch_stats", ())  # a light result (storage/summary.py) keeps them
            if not known and site:
                times = np.concatenate([np.asarray(s.raw_times, dtype=np.float64) / s.number_per_run for s in timed])
                known = tuple(float(a[0]) for a in summarize_times(times[None, :]))
            if known:
                torch[:, k] = known
        elif r.failure is not None and r.failure.kind != FailureKind.SKIPPED:
            status[k] = FAILED
            messages[k] = str(r.failure)
        if r.ok:
            per_run: dict[str, list[float]] = {}
            for s, v in zip(timed, values):
                per_run.setdefault(s.run, []).append(v)
            for name, of_run in per_run.items():
                of_run.sort()
                run_row.append(k)
                run.append(runs.setdefault(name, len(runs)))
                run_n.append(len(of_run))
                low.append((of_run + [math.nan, math.nan])[:3])
        if site and r.failure is None and (r.memory or r.compiled or r.tracked):
            for m, metric in enumerate(BEYOND_TIME):
                extra[m, k] = _metric_level(r, metric)
            if r.tracked:
                units[k] = r.tracked[-1].unit
    reference = [min(s.raw_times) / s.number_per_run for s in result.reference if s.raw_times]
    return FileFigures(
        ids=tuple(r.id for r in result.results),
        status=np.asarray(status, dtype=np.int8),
        ok=np.asarray(ok, dtype=bool),
        level=np.asarray(level, dtype=np.float64),
        band=band,
        torch=torch,
        instructions=instructions,
        extra=extra,
        messages=messages,
        units=units,
        run_row=np.asarray(run_row, dtype=np.int32),
        run=np.asarray(run, dtype=np.int32),
        runs=tuple(runs),
        run_n=np.asarray(run_n, dtype=np.int32),
        low=np.asarray(low, dtype=np.float64).reshape(-1, 3).T.copy(),
        reference=min(reference) if reference else math.nan,
    )


# -- the kept form ---------------------------------------------------------------

_ARRAYS = (  # (field, dtype): one per result row, or per run row (_RUN); 2-D ones (width, rows)
    ("status", np.int8),
    ("ok", np.bool_),
    ("level", np.float64),
    ("band", np.float64),
    ("torch", np.float64),
    ("instructions", np.int64),
    ("extra", np.float64),
    ("run_row", np.int32),
    ("run", np.int32),
    ("run_n", np.int32),
    ("low", np.float64),
)
_RUN = ("run_row", "run", "run_n", "low")
DTYPES = dict(_ARRAYS)  # each array's dtype, as kept (`table.to_tree` keeps a table's the same way)


def id_key(b: BenchmarkId) -> str:
    """A BenchmarkId as one string in a kept tree (`id_of` reads it back)."""
    return _FIELD.join((b.label, b.sub_label, b.description, str(b.num_threads)))


def id_of(key: str, cache: IdCache) -> BenchmarkId:
    """`id_key`'s BenchmarkId, built once a cache; ValueError (or TypeError) where `key` is not one."""
    bid = cast("BenchmarkId | None", cache.get(key))
    if bid is None:
        label, sub, desc, threads = key.split(_FIELD)
        bid = cache[key] = BenchmarkId(label, sub, desc, int(threads))
    return bid


def to_tree(f: FileFigures) -> dict:
    """The figures as a tree of JSON and arrays (what the memo keeps: `storage/memo.py`)."""
    return {
        "ids": _SEP.join(id_key(b) for b in f.ids),
        "runs": list(f.runs),
        "messages": {str(k): v for k, v in f.messages.items()},
        "units": {str(k): v for k, v in f.units.items()},
        "reference": None if math.isnan(f.reference) else f.reference,
        **{name: np.asarray(getattr(f, name), dtype=dtype) for name, dtype in _ARRAYS},
    }


# A cache of the BenchmarkIds `from_tree` built, by key, and of the tuples of them files list, by _SEP + their keys.
IdCache: TypeAlias = "dict[str, BenchmarkId | tuple[BenchmarkId, ...]]"


def from_tree(tree: dict, ids: IdCache | None = None) -> FileFigures:
    """`to_tree`'s figures back. `ids`: a cache of the BenchmarkIds already built (files of a series share
    them). Raises ValueError on anything that does not read back as figures."""
    ids = {} if ids is None else ids
    try:
        keys = tree["ids"]
        found = cast("tuple[BenchmarkId, ...] | None", ids.get(_SEP + keys))  # files mostly list the same
        if found is None:
            found = ids[_SEP + keys] = tuple(id_of(key, ids) for key in (keys.split(_SEP) if keys else []))
        arrays = {name: tree[name] for name, _ in _ARRAYS}
        rows, run_rows = len(found), len(arrays["run_row"])
        for name, dtype in _ARRAYS:
            a = arrays[name]
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape[-1] != (run_rows if name in _RUN else rows):
                raise ValueError(f"figures' {name} of the wrong shape")
        reference = tree["reference"]
        return FileFigures(
            ids=found,
            messages={int(k): str(v) for k, v in tree["messages"].items()},
            units={int(k): str(v) for k, v in tree["units"].items()},
            runs=tuple(str(r) for r in tree["runs"]),
            reference=math.nan if reference is None else float(reference),
            **arrays,
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"unreadable figures: {exc}") from None
