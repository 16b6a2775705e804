"""A series' figures as one table: every file's `figures`, joined in history order, from stored figures (`kept`)
or a history in hand (`of`); `load` gives a commit's result, rounds and all. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from regress.analysis import figures as file_figures
from regress.analysis.figures import FileFigures
from regress.core.records import BenchmarkId, CommitResult


@dataclass
class Table:
    history: list[CommitResult]  # the series' commits in history order (their results may be left out)
    load: Callable[[int], CommitResult]  # position -> that commit's result, rounds and all
    ids: list[BenchmarkId]
    # One row per (commit, benchmark result):
    pos: np.ndarray
    bench: np.ndarray  # index into ids
    status: np.ndarray
    ok: np.ndarray
    level: np.ndarray
    band: np.ndarray
    torch: np.ndarray
    instructions: np.ndarray
    extra: np.ndarray
    messages: dict[int, str]
    units: dict[int, str]
    # One row per (commit, benchmark, run) of an ok result:
    run_pos: np.ndarray
    run_bench: np.ndarray
    run: np.ndarray  # index into run_names
    run_names: list[str]
    run_n: np.ndarray
    low: np.ndarray
    reference: np.ndarray  # per position: the reference workload's level (NaN: none)
    _index: dict = field(default_factory=dict, repr=False)  # BenchmarkId -> its place in ids
    # A benchmark's fitted levels (`levels.points`) by the digest of its observations: the chart's fit and
    # the change points' read the same observations of most benchmarks, which are fitted once.
    fits: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, history: list[CommitResult], *, site: bool = False) -> Table:
        """The table of a history in hand (full or light results); `site`: with what only the site shows."""
        return cls.build(history, [file_figures.of(c, site=site) for c in history], history.__getitem__)

    @classmethod
    def kept(cls, kept, light: Callable[[], list[CommitResult]]) -> Table:
        """The table of a series' files' figures (`storage.series_figures.per_file`, joined in blocks:
        `assemble`), else (None, or a file's figures can't be had) of its light history."""
        if kept is not None:
            try:
                return assemble(kept)
            except ValueError:
                pass  # a file's light result went missing: the light history has it all
        return cls.of(light(), site=True)

    @classmethod
    def build(cls, history: list[CommitResult], files: list[FileFigures], load) -> Table:
        index: dict[BenchmarkId, int] = {}
        names: dict[str, int] = {}
        bench, pos, run_bench, run_pos, run = [], [], [], [], []
        messages: dict[int, str] = {}
        units: dict[int, str] = {}
        offset = 0
        locals_of: dict[int, tuple[tuple, np.ndarray]] = {}  # by the ids tuple's identity: files share one
        for i, f in enumerate(files):
            seen = locals_of.get(id(f.ids))
            if seen is None:
                local = np.asarray([index.setdefault(b, len(index)) for b in f.ids], dtype=np.int32)
                locals_of[id(f.ids)] = (f.ids, local)  # the tuple held, so its id stays its own
            else:
                local = seen[1]
            bench.append(local)
            pos.append(np.full(len(f.ids), i, dtype=np.int32))
            messages.update((offset + k, v) for k, v in f.messages.items())
            units.update((offset + k, v) for k, v in f.units.items())
            offset += len(f.ids)
            run_names = np.asarray([names.setdefault(r, len(names)) for r in f.runs], dtype=np.int32)
            run.append(run_names[f.run] if len(f.run) else np.zeros(0, dtype=np.int32))
            run_bench.append(local[f.run_row] if len(f.run_row) else np.zeros(0, dtype=np.int32))
            run_pos.append(np.full(len(f.run_row), i, dtype=np.int32))

        def cat(name: str, dtype, width: int = 1) -> np.ndarray:
            parts = [getattr(f, name) for f in files]
            if not parts:
                return np.zeros((width, 0) if width > 1 else 0, dtype=dtype)
            return np.concatenate(parts, axis=-1).astype(dtype, copy=False)

        def join(parts: list, dtype=np.int32) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

        return cls(
            history=history,
            load=load,
            ids=list(index),
            pos=join(pos),
            bench=join(bench),
            status=cat("status", np.int8),
            ok=cat("ok", np.bool_),
            level=cat("level", np.float64),
            band=cat("band", np.float64, 2),
            torch=cat("torch", np.float64, 4),
            instructions=cat("instructions", np.int64),
            extra=cat("extra", np.float64, len(file_figures.BEYOND_TIME)),
            messages=messages,
            units=units,
            run_pos=join(run_pos),
            run_bench=join(run_bench),
            run=join(run),
            run_names=list(names),
            run_n=cat("run_n", np.int32),
            low=cat("low", np.float64, 3),
            reference=np.asarray([f.reference for f in files], dtype=np.float64),
        )

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
        # Rows are in history order already (one a commit and benchmark): a stable sort by benchmark alone,
        # a radix sort where the numbers fit 16 bits.
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


def compute(result: CommitResult) -> dict:
    """A file's figures as the memo keeps them (`storage/series_figures.py`)."""
    return file_figures.to_tree(file_figures.of(result))


def as_table(history) -> Table:
    """A Table as it is, or the table of a history in hand."""
    return history if isinstance(history, Table) else Table.of(list(history))


# -- blocks: a series' table joined from blocks of BLOCK commits, each kept whole in the memo (kind BLOCKS)
# under a digest of its files' shas and content digests, once it ends TAIL or more positions before the
# newest (a push measures the commit before it again, and a rerun the few before that); a block with a
# file of another digest is joined afresh. The joined table is the one the files alone give, field for field.

BLOCK = 100
TAIL = 10
BLOCKS = "figures block"  # the memo's kind
# (name, dtype) of a table's arrays: a file's figures' own (`figures.DTYPES`), and the positions and benchmarks.
_ROWS = ("status", "ok", "level", "band", "torch", "instructions", "extra")
_ARRAYS: tuple[tuple[str, type], ...] = (
    ("pos", np.int32),
    ("bench", np.int32),
    *((name, file_figures.DTYPES[name]) for name in _ROWS),
    ("run_pos", np.int32),
    ("run_bench", np.int32),
    *((name, file_figures.DTYPES[name]) for name in ("run", "run_n", "low")),
    ("reference", np.float64),
)


def spans(n: int) -> list[tuple[int, int]]:
    """The blocks (first position, end) kept in a history of n commits."""
    return [(a, a + BLOCK) for a in range(0, max(n - TAIL, 0) // BLOCK * BLOCK, BLOCK)]


def key(shas: list[str], digests: list[str]) -> str | None:
    """What a block is kept under; None where a file has no digest to key it by."""
    if not all(digests):
        return None
    return hashlib.sha256(" ".join(f"{s}:{d}" for s, d in zip(shas, digests)).encode()).hexdigest()


def assemble(kept) -> Table:
    """The Table of `kept` (a `storage.series_figures.SeriesFigures`): blocks kept in its memo decoded,
    the rest joined from their files' figures (new blocks kept). ValueError where a figure does not read."""
    cache: file_figures.IdCache = {}  # shared by every block's decoding
    n = len(kept.headers)

    def joined(a: int, b: int):
        files = [file_figures.from_tree(tree, cache) for tree in kept.blobs(a, b)]
        return Table.build(kept.headers[a:b], files, None)

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


def join(history, parts: list, load) -> Table:
    """One table of consecutive parts (each a Table of its own positions, from 0), as `build` of all
    their files would give: benchmarks and runs numbered in the order first seen."""
    index: dict[BenchmarkId, int] = {}
    names: dict[str, int] = {}
    rows = run_rows = positions = 0
    cols: dict[str, list[np.ndarray]] = {name: [] for name, _ in _ARRAYS}
    messages: dict[int, str] = {}
    units: dict[int, str] = {}
    for p in parts:
        ids = np.asarray([index.setdefault(b, len(index)) for b in p.ids] or [0], dtype=np.int32)
        runs = np.asarray([names.setdefault(r, len(names)) for r in p.run_names] or [0], dtype=np.int32)
        for name, _ in _ARRAYS:
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
        rows, run_rows, positions = rows + len(p.pos), run_rows + len(p.run_pos), positions + len(p.reference)
    arrays: dict[str, Any] = {
        name: np.concatenate(cols[name], axis=-1).astype(dtype, copy=False) if cols[name] else np.zeros(0, dtype)
        for name, dtype in _ARRAYS
    }
    return Table(
        history=history,
        load=load,
        ids=list(index),
        messages=messages,
        units=units,
        run_names=list(names),
        **arrays,
    )


def to_tree(t: Table) -> dict:
    """A block as the memo keeps it: its table (positions from 0)."""
    return {
        "ids": [file_figures.id_key(b) for b in t.ids],
        "runs": list(t.run_names),
        "messages": {str(k): v for k, v in t.messages.items()},
        "units": {str(k): v for k, v in t.units.items()},
        **{name: np.asarray(getattr(t, name), dtype=dtype) for name, dtype in _ARRAYS},
    }


def from_tree(tree: dict, cache: dict) -> Table:
    """`to_tree`'s Table back (no history, no load); ValueError on anything that does not read back as one."""
    try:
        ids = [file_figures.id_of(k, cache) for k in tree["ids"]]
        arrays = {name: tree[name] for name, _ in _ARRAYS}
        if any(not isinstance(a, np.ndarray) or a.dtype != dtype for (name, dtype), a in zip(_ARRAYS, arrays.values())):
            raise ValueError("a block's arrays of another type")
        bench, run = arrays["bench"], arrays["run"]
        if (len(bench) and int(bench.max()) >= len(ids)) or (len(run) and int(run.max()) >= len(tree["runs"])):
            raise ValueError("a block naming a benchmark or run it does not list")
        return Table(
            history=[],
            load=None,  # type: ignore[arg-type]  # a block is never loaded: `join` gives the series' load
            ids=ids,
            messages={int(k): str(v) for k, v in tree["messages"].items()},
            units={int(k): str(v) for k, v in tree["units"].items()},
            run_names=[str(r) for r in tree["runs"]],
            **arrays,
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"unreadable block: {exc}") from None
