"""A series' figures as one table, a row per (commit, benchmark result) and per (commit, benchmark, run of an ok
result): files' one-commit tables (`of_file`) joined in history order (`join`). Pure.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

import numpy as np

from regress.analysis import stats
from regress.core import trees
from regress.core.blocks import summarize_times
from regress.core.kinds import COUNTED, MEMORY, FailureKind, Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult

trees.record(BenchmarkId)

# A result's status: timed (a level), failed (a failure that is not a skip), other (skipped, counts only).
TIMED, FAILED, OTHER = 0, 1, 2
_SEP, _FIELD = "\x1d", "\x1e"


@dataclass
class Table:
    history: list[CommitResult]  # the series' commits in history order (their results may be left out)
    load: Callable[[int], CommitResult]  # position -> that commit's result, rounds and all
    ids: list[BenchmarkId]
    # One row per (commit, benchmark result):
    pos: np.ndarray
    bench: np.ndarray  # index into ids
    status: np.ndarray  # int8: TIMED, FAILED, OTHER
    ok: np.ndarray  # BenchmarkResult.ok
    level: np.ndarray  # the fastest round (TIMED rows)
    band: np.ndarray  # (2, rows): quartiles of the round values
    torch: np.ndarray  # (4, rows): torch's q1, median, q3, significant figures of every block pooled
    instructions: np.ndarray  # int64 per call, -1: none
    extra: np.ndarray  # (len(BEYOND_TIME), rows): each metric's level, NaN: none
    messages: dict[int, str]  # row -> its failure (FAILED rows)
    units: dict[int, str]  # row -> its tracked value's unit
    # One row per (commit, benchmark, run) of an ok result:
    run_pos: np.ndarray
    run_bench: np.ndarray
    run: np.ndarray  # index into run_names
    run_names: list[str]
    run_n: np.ndarray  # rounds of that run
    low: np.ndarray  # (3, run rows): its three fastest round values, NaN-padded
    reference: np.ndarray  # per position: the reference workload's level (NaN: none)
    _index: dict = field(default_factory=dict, repr=False)  # BenchmarkId -> its place in ids
    # `levels.points`' fitted levels by the digest of their observations (the chart's and the change points').
    fits: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, history: list[CommitResult], *, site: bool = False) -> Table:
        """The table of a history in hand (full or light results); `site`: with what only the site shows."""
        return join(history, [of_file(c, site=site) for c in history], history.__getitem__)

    @classmethod
    def kept(cls, kept, light: Callable[[], list[CommitResult]]) -> Table:
        """The table of a series' files' figures (`storage.summary.per_file`, joined in blocks:
        `assemble`), else (None, or a file's figures can't be had) of its light history."""
        if kept is not None:
            with contextlib.suppress(ValueError):  # a file's light result went missing: the light history has it all
                return assemble(kept)
        return cls.of(light(), site=True)

    def row(self, position: int, bid: BenchmarkId) -> int | None:
        """The row of `bid` at a history position, if that commit has a result for it."""
        if not self._index:
            self._index.update((b, k) for k, b in enumerate(self.ids))
        k = self._index.get(bid)
        if k is None:
            return None
        a, b = bounds(self.pos, position, position + 1)
        found = np.flatnonzero(self.bench[a:b] == k)
        return int(a + found[0]) if len(found) else None

    def ids_at(self, position: int) -> list[BenchmarkId]:
        """The benchmarks a commit has results for, in its file's order."""
        a, b = bounds(self.pos, position, position + 1)
        return [self.ids[k] for k in self.bench[a:b].tolist()]

    def by_bench(self, rows: np.ndarray) -> dict[BenchmarkId, np.ndarray]:
        """The given rows (a mask or indices) grouped by benchmark, each oldest first."""
        rows = np.flatnonzero(rows) if rows.dtype == np.bool_ else np.sort(np.asarray(rows))
        # Rows are in history order already: a stable sort by benchmark alone (radix, where they fit 16 bits).
        keys = self.bench[rows]
        order = rows[np.argsort(keys.astype(np.uint16) if len(self.ids) < 1 << 16 else keys, kind="stable")]
        benches = self.bench[order]
        cuts = np.flatnonzero(np.diff(benches)) + 1
        return {self.ids[int(benches[g[0]])]: order[g] for g in np.split(np.arange(len(order)), cuts) if len(g)}


def bounds(ascending: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    """The slice of an ascending array holding values lo to hi (excluded); the keys in the array's own
    type, so that the array is not converted."""
    a, b = np.searchsorted(ascending, np.asarray([lo, hi], dtype=ascending.dtype)).tolist()
    return a, b


def as_table(history) -> Table:
    """A Table as it is, or the table of a history in hand."""
    return history if isinstance(history, Table) else Table.of(list(history))


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


def of_file(result: CommitResult, *, site: bool = True) -> Table:
    """The one-commit table of one (full or light) result. Without `site`, what only the site shows (the
    rounds' quartiles, torch's statistics, the metrics beyond time: the costly part) is left NaN."""
    rows = len(result.results)
    status, ok, level = [OTHER] * rows, [False] * rows, [math.nan] * rows  # lists: a numpy write per item is slow
    band = np.full((2, rows), math.nan)
    torch = np.full((4, rows), math.nan)
    instructions = np.full(rows, -1, dtype=np.int64)
    extra = np.full((len(BEYOND_TIME), rows), math.nan)
    messages: dict[int, str] = {}
    units: dict[int, str] = {}
    index: dict[BenchmarkId, int] = {}
    bench = [index.setdefault(r.id, len(index)) for r in result.results]
    run_bench, run, run_n, low = [], [], [], []
    runs: dict[str, int] = {}
    for k, r in enumerate(result.results):
        ok[k] = r.ok
        if r.counted:
            instructions[k] = r.instructions
        timed = [s for s in r.samples if s.raw_times]
        rounds = [min(s.raw_times) / s.number_per_run for s in timed]  # each round's value (stats.round_value)
        if r.ok and timed:
            status[k] = TIMED
            level[k] = min(rounds)
            if site:
                band[:, k] = stats.spread(rounds) or rounds[0]  # one round: that round
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
            for s, v in zip(timed, rounds):
                per_run.setdefault(s.run, []).append(v)
            for name, of_run in per_run.items():
                of_run.sort()
                run_bench.append(bench[k])
                run.append(runs.setdefault(name, len(runs)))
                run_n.append(len(of_run))
                low.append((of_run + [math.nan, math.nan])[:3])
        if site and r.failure is None and (r.memory or r.compiled or r.tracked):
            for m, metric in enumerate(BEYOND_TIME):
                got = values(r, metric) if getattr(r, spec(metric).field) else ()
                extra[m, k] = float(statistics.median(got)) if got else math.nan
            if r.tracked:
                units[k] = r.tracked[-1].unit
    reference = [min(s.raw_times) / s.number_per_run for s in result.reference if s.raw_times]
    made = {
        "pos": np.zeros(rows),
        "bench": bench,
        "status": status,
        "ok": ok,
        "level": level,
        "band": band,
        "torch": torch,
        "instructions": instructions,
        "extra": extra,
        "run_pos": np.zeros(len(run)),
        "run_bench": run_bench,
        "run": run,
        "run_n": run_n,
        "low": np.asarray(low, dtype=np.float64).reshape(-1, 3).T.copy(),
        "reference": [min(reference) if reference else math.nan],
    }
    arrays: dict[str, Any] = {name: np.asarray(made[name], dtype) for name, dtype, _ in _ARRAYS}  # `_ARRAYS`' types
    return Table(
        [result], [result].__getitem__, list(index), messages=messages, units=units, run_names=list(runs), **arrays
    )


def compute(result: CommitResult) -> dict:
    """A file's figures as the memo keeps them (`storage.summary.SeriesFigures`)."""
    return to_tree(of_file(result))


# -- blocks of BLOCK commits kept whole in the memo (kind BLOCKS) by their files' shas and digests, once they
# end TAIL or more positions before the newest; the joined table is the one the files alone give.

BLOCK = 100
TAIL = 10
BLOCKS = "figures block"  # the memo's kind
# (name, dtype, width: the rows of a 2-D one, else 1) of a table's arrays: per row, per run row (_RUN), per position.
_ARRAYS: tuple[tuple[str, type, int], ...] = (
    ("pos", np.int32, 1),
    ("bench", np.int32, 1),
    ("status", np.int8, 1),
    ("ok", np.bool_, 1),
    ("level", np.float64, 1),
    ("band", np.float64, 2),
    ("torch", np.float64, 4),
    ("instructions", np.int64, 1),
    ("extra", np.float64, len(BEYOND_TIME)),
    ("run_pos", np.int32, 1),
    ("run_bench", np.int32, 1),
    ("run", np.int32, 1),
    ("run_n", np.int32, 1),
    ("low", np.float64, 3),
    ("reference", np.float64, 1),
)
_RUN = ("run_pos", "run_bench", "run", "run_n", "low")


def spans(n: int) -> list[tuple[int, int]]:
    """The blocks (first position, end) kept in a history of n commits."""
    return [(a, a + BLOCK) for a in range(0, max(n - TAIL, 0) // BLOCK * BLOCK, BLOCK)]


def key(shas: list[str], digests: list[str]) -> str | None:
    """What a block is kept under; None where a file has no digest to key it by."""
    if not all(digests):
        return None
    return hashlib.sha256(" ".join(f"{s}:{d}" for s, d in zip(shas, digests)).encode()).hexdigest()


def assemble(kept) -> Table:
    """The Table of `kept` (a `storage.summary.SeriesFigures`): blocks kept in its memo decoded,
    the rest joined from their files' figures (new blocks kept). ValueError where a figure does not read."""
    cache: IdCache = {}  # shared by every block's and file's decoding
    n = len(kept.headers)

    def joined(a: int, b: int):
        return join(kept.headers[a:b], [from_tree(tree, cache) for tree in kept.blobs(a, b)], None)

    def decoded(tree: dict, positions: int):
        part = from_tree(tree, cache)
        if len(part.reference) != positions:
            raise ValueError("a block of another length")
        return part

    parts, end = [], 0
    for a, b in spans(n):
        k = key(kept.shas[a:b], kept.digests[a:b])
        parts.append(kept.memo.get(BLOCKS, k, lambda a=a, b=b: joined(a, b), to_tree, lambda d, n=b - a: decoded(d, n)))
        end = b
    if end < n or not parts:
        parts.append(joined(end, n))
    return join(kept.headers, parts, kept.load)


def join(history, parts: list[Table], load) -> Table:
    """One table of consecutive parts (each a Table of its own positions, from 0), their benchmarks and runs
    numbered in the order first seen."""
    index: dict[BenchmarkId, int] = {}
    names: dict[str, int] = {}
    rows = positions = 0
    cols: dict[str, list[np.ndarray]] = {name: [] for name, _, _ in _ARRAYS}
    messages: dict[int, str] = {}
    units: dict[int, str] = {}
    mapped: dict[int, tuple[list, np.ndarray]] = {}  # by the ids list's identity: decoded files share one
    for p in parts:
        seen = mapped.get(id(p.ids))
        if seen is None:  # the list held, so its id stays its own
            seen = mapped[id(p.ids)] = (
                p.ids,
                np.asarray([index.setdefault(b, len(index)) for b in p.ids] or [0], dtype=np.int32),
            )
        ids = seen[1]
        runs = np.asarray([names.setdefault(r, len(names)) for r in p.run_names] or [0], dtype=np.int32)
        for name, _, _ in _ARRAYS:
            a = getattr(p, name)
            if name in ("bench", "run_bench"):
                a = ids[a]
            elif name == "run":
                a = runs[a]
            elif name in ("pos", "run_pos"):
                a = a + positions
            cols[name].append(a)
        messages.update((rows + k, v) for k, v in p.messages.items())
        units.update((rows + k, v) for k, v in p.units.items())
        rows, positions = rows + len(p.pos), positions + len(p.reference)
    arrays: dict[str, Any] = {
        name: np.concatenate(cols[name], axis=-1).astype(dtype, copy=False)
        if cols[name]
        else np.zeros(_shape(width, 0), dtype)
        for name, dtype, width in _ARRAYS
    }
    return Table(
        history=history, load=load, ids=list(index), messages=messages, units=units, run_names=list(names), **arrays
    )


def _shape(width: int, n: int) -> tuple[int, ...]:
    return (width, n) if width > 1 else (n,)


def kept_id(b: object) -> BenchmarkId:
    """A BenchmarkId a kept tree holds (a record: `core/trees.py`); ValueError where it is something else."""
    if not isinstance(b, BenchmarkId):
        raise ValueError("not a kept BenchmarkId")
    return b


# The BenchmarkIds `from_tree` built, by key, and the lists of them tables list, by _SEP + their keys.
IdCache: TypeAlias = "dict[str, BenchmarkId | list[BenchmarkId]]"


def _id_of(key: str, cache: IdCache) -> BenchmarkId:
    """`to_tree`'s key's BenchmarkId, built once a cache; ValueError (or TypeError) where `key` is not one."""
    bid = cast("BenchmarkId | None", cache.get(key))
    if bid is None:
        label, sub, desc, threads = key.split(_FIELD)
        bid = cache[key] = BenchmarkId(label, sub, desc, int(threads))
    return bid


def to_tree(t: Table) -> dict:
    """A table as the memo keeps it (a file's, or a block's: positions from 0)."""
    return {
        "ids": _SEP.join(_FIELD.join((b.label, b.sub_label, b.description, str(b.num_threads))) for b in t.ids),
        "runs": list(t.run_names),
        "messages": {str(k): v for k, v in t.messages.items()},
        "units": {str(k): v for k, v in t.units.items()},
        **{name: np.asarray(getattr(t, name), dtype=dtype) for name, dtype, _ in _ARRAYS},
    }


def from_tree(tree: dict, cache: IdCache) -> Table:
    """`to_tree`'s Table back (no history, no load). `cache`: the BenchmarkIds already built (files of a series
    share them). ValueError on anything that does not read back as one."""
    try:
        keys = tree["ids"]
        ids = cast("list[BenchmarkId] | None", cache.get(_SEP + keys))  # files mostly list the same
        if ids is None:
            ids = cache[_SEP + keys] = [_id_of(k, cache) for k in (keys.split(_SEP) if keys else [])]
        arrays = {name: tree[name] for name, _, _ in _ARRAYS}
        for name, dtype, width in _ARRAYS:
            a, n = arrays[name], len(tree["reference" if name == "reference" else "run_pos" if name in _RUN else "pos"])
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != _shape(width, n):
                raise ValueError(f"a table's {name} of another type or shape")
        bench, run = arrays["bench"], arrays["run"]
        if (len(bench) and int(bench.max()) >= len(ids)) or (len(run) and int(run.max()) >= len(tree["runs"])):
            raise ValueError("a table naming a benchmark or run it does not list")
        return Table(
            history=[],
            load=None,  # type: ignore[arg-type]  # a part is never loaded: `join` gives the series' load
            ids=ids,
            messages={int(k): str(v) for k, v in tree["messages"].items()},
            units={int(k): str(v) for k, v in tree["units"].items()},
            run_names=[str(r) for r in tree["runs"]],
            **arrays,
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"unreadable figures: {exc}") from None
