"""A series' figures as one table: every file's `figures`, joined in history order.

Built from stored figures (`kept`), or from a history in hand (`of`). What
reads one commit's rounds asks `load` for that commit's result. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from regress.analysis import figures as file_figures
from regress.analysis import table_blocks
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
        `table_blocks`), else (None, or a file's figures can't be had) of its light history."""
        if kept is not None:
            try:
                return table_blocks.assemble(kept, cls)
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
