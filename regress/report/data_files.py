"""A page's data files, each a span of history positions (`Chunking`) kept while its digest stands: a
chart's points (`Chunks`) and a label's plain Compare tables (`LabelChunks`; the page overlays verdicts)."""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from markupsafe import Markup

from regress.analysis.diff import Verdict
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId
from regress.report.data import BIG_CHANGE, Series
from regress.report.tables import UNIT_ENGLISH, format_tables

# Positions a closed chunk holds.
CHUNK = 500
# Positions a piece holds, and the pieces listed (enough for CHUNK + SETTLE - 1 positions).
PIECE = 100
SETTLE = 2
PIECES = (CHUNK + SETTLE - 2) // PIECE + 1
_SAFE = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


def script_json(obj) -> Markup:
    """JSON that is safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    return Markup(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).translate(_SAFE))


def rel(slug: str, name: str, kind: str = "bench") -> str:
    return f"data/{kind}/{slug}/{name}"


@dataclass(frozen=True)
class Chunking:
    """The files of a page whose longest series has `longest` commits; a file's key is the first
    position it may hold (their order is the positions'; regress.js joins them by it)."""

    longest: int

    @property
    def inline(self) -> bool:
        return self.longest < CHUNK

    @property
    def closed(self) -> int:
        """Closed chunks: positions below closed * CHUNK."""
        return 0 if self.inline else max(0, self.longest - SETTLE) // CHUNK

    def keys(self, at: np.ndarray) -> np.ndarray:
        """Each position's file key (non-decreasing with the position)."""
        at = np.asarray(at, dtype=np.int64)
        if self.inline:
            return np.zeros(len(at), dtype=np.int64)
        start = self.closed * CHUNK
        piece = start + np.minimum((at - start) // PIECE, PIECES - 1) * PIECE
        return np.where(at < start, at // CHUNK * CHUNK, piece)

    def listed(self, used) -> list[int]:
        """The keys a page lists: the closed chunks with data, and every piece."""
        if self.inline:
            return [0]
        start = self.closed * CHUNK
        return sorted({k for k in used if k < start} | {start + j * PIECE for j in range(PIECES)})

    def name(self, key: int) -> str:
        """The key's file name in the page's folder."""
        start = self.closed * CHUNK
        return f"{key // CHUNK}.js" if key < start else f"open-{(key - start) // PIECE}.js"

    def spans(self, at: np.ndarray) -> dict[int, tuple[int, int]]:
        """Per key with positions in `at` (ascending): its slice [a, b) of `at`."""
        ks = self.keys(at)
        if not len(ks):
            return {}
        cuts = np.flatnonzero(ks[1:] != ks[:-1]) + 1  # keys are non-decreasing: each run of one key
        starts, ends = np.r_[0, cuts], np.r_[cuts, len(ks)]
        return dict(zip(ks[starts].tolist(), zip(starts.tolist(), ends.tolist())))


class _Files(Protocol):
    """A page's data files by key."""

    kind: str  # the folder under data/
    chunking: Chunking

    def used(self) -> Iterable[int]: ...

    def digest(self, version: str, slug: str, k: int) -> str: ...

    def content(self, k: int) -> dict: ...

    def listed(self) -> list[int]:
        return self.chunking.listed(self.used())

    def script(self, k: int) -> str:
        """The data file: its values pushed onto the page's list."""
        data = script_json({"k": k, **self.content(k)})
        return f"(window.REGRESS_CHUNKS = window.REGRESS_CHUNKS || []).push({data});\n"

    def write(self, pages, version: str, slug: str) -> tuple[list[str], Markup | None]:
        """(the files' paths, None), or for an inline history ([], its one script)."""
        if self.chunking.inline:
            return [], Markup(self.script(0))
        keys = self.listed()
        srcs = [rel(slug, self.chunking.name(k), self.kind) for k in keys]
        for k, src in zip(keys, srcs):
            pages.page(src, self.digest(version, slug, k), self.script, k, counted=False)
        return srcs, None


@dataclass(frozen=True)
class Line:
    """One line's points: a series' levels and band, or a metric's values in one series."""

    kind: str  # "series" or a metric's value
    name: str  # the series
    at: np.ndarray  # history positions, ascending
    columns: dict[str, np.ndarray]  # parallel to `at`
    text: Callable[[float], str] | None = None  # a metric's point as text (its "text" column, from "y")


@dataclass
class Chunks(_Files):
    """A chart's points: per file key, the slices of every line that fall in it."""

    chunking: Chunking
    parts: dict[int, list[tuple[Line, int, int]]] = field(default_factory=dict)
    kind = "bench"

    @classmethod
    def of(cls, lines: list[Line], longest: int) -> Chunks:
        out = cls(Chunking(longest))
        for line in lines:
            for k, (a, b) in out.chunking.spans(line.at).items():
                out.parts.setdefault(k, []).append((line, a, b))
        return out

    def used(self) -> Iterable[int]:
        return self.parts

    def digest(self, version: str, slug: str, k: int) -> str:
        """Of the file's values themselves (bytes of the arrays), not of its JSON."""
        h = hashlib.sha1(f"{version} {slug} {k}".encode())
        for line, a, b in self.parts.get(k, []):
            h.update(f"|{line.kind}|{line.name}|".encode())
            h.update(np.ascontiguousarray(line.at[a:b]).tobytes())
            for name in line.columns:
                h.update(name.encode())
                h.update(np.ascontiguousarray(line.columns[name][a:b]).tobytes())
        return h.hexdigest()

    def content(self, k: int) -> dict:
        data: dict = {"series": {}, "metrics": {}}
        for line, a, b in self.parts.get(k, []):
            cols = {"at": line.at[a:b].tolist(), **{n: c[a:b].tolist() for n, c in line.columns.items()}}
            if line.text is not None:
                cols["text"] = [line.text(y) for y in cols["y"]]
            if line.kind == "series":
                data["series"][line.name] = cols
            else:
                data["metrics"].setdefault(line.kind, {})[line.name] = cols
        return data


# Significant figures of a shown level (as `fmt_time` and the chart's hover, `.4s`, write it).
FIGURES = 4


@dataclass(frozen=True)
class Layout:
    """The fixed rows and columns of one label's tables, over all of its history."""

    columns: list[str]  # descriptions
    groups: list[tuple[int, list[tuple[str, list[BenchmarkId | None]]]]]  # threads -> rows (sub_label, cells)

    @property
    def cells(self) -> list[BenchmarkId | None]:
        return [bid for _, rows in self.groups for _, row in rows for bid in row]


def layout_for(ids: list[BenchmarkId]) -> Layout:
    """torch's layout: rows by sub_label, columns by description, grouped by threads (ids in first-seen order)."""
    columns = list(dict.fromkeys(b.description for b in ids))
    row_keys = sorted(dict.fromkeys((b.num_threads, b.sub_label) for b in ids), key=lambda k: k[0])
    by_key = {(b.num_threads, b.sub_label, b.description): b for b in ids}
    groups: list[tuple[int, list]] = []
    for threads, sub in row_keys:
        if not groups or groups[-1][0] != threads:
            groups.append((threads, []))
        groups[-1][1].append((sub, [by_key.get((threads, sub, c)) for c in columns]))
    return Layout(columns, groups)


def verdict_class(v: Verdict) -> str:
    """A Compare cell's CSS class: "up"/"dn" ("up2"/"dn2" from BIG_CHANGE), else the verdict's name."""
    if v.verdict == Kind.REGRESSION:
        return "up2" if v.ratio is not None and v.ratio >= BIG_CHANGE else "up"
    if v.verdict == Kind.IMPROVEMENT:
        return "dn2" if v.ratio is not None and v.ratio <= 1 / BIG_CHANGE else "dn"
    return v.verdict


@dataclass(frozen=True)
class LabelInputs:
    """What a series' Compare tables of one label are made from, one row per commit that has a table."""

    cells: list[BenchmarkId | None]
    commits: list[int]  # history positions, ascending
    medians: np.ndarray  # commits x cells: the shown level (NaN: not measured), at FIGURES figures
    columns: np.ndarray  # the column of each cell
    failed: list[tuple[int, int, str]]  # (row, cell, message)


def label_inputs(series: Series, layout: Layout) -> LabelInputs | None:
    """None where the series measured none of the label's benchmarks."""
    cells = layout.cells
    tracks = [series.tracks.get(bid) if bid is not None else None for bid in cells]
    fails = [series.failed.get(bid, ()) if bid is not None else () for bid in cells]
    # Every position a cell has a value or a failure at.
    at = [t.commits for t in tracks if t is not None] + [np.asarray([f.commit for fs in fails for f in fs], np.int64)]
    order = np.unique(np.concatenate(at).astype(np.int64, copy=False))
    if not len(order):
        return None
    commits = order.tolist()
    medians = np.full((len(commits), len(cells)), np.nan)
    for k, t in enumerate(tracks):
        if t is None:
            continue
        where = np.searchsorted(order, t.commits)
        medians[where, k] = t.level  # the level, as the verdict colouring the cell
    columns = np.asarray([layout.columns.index(bid.description) if bid is not None else -1 for bid in cells])
    rows = np.searchsorted(order, [f.commit for fs in fails for f in fs]).tolist()
    failed = [(r, k, f.message[:300]) for r, (k, f) in zip(rows, ((k, f) for k, fs in enumerate(fails) for f in fs))]
    return LabelInputs(cells, commits, medians, columns, failed)


def label_tables(
    series: Series, layout: Layout, *, inputs: LabelInputs | None = None, rows: range | None = None
) -> list[dict[str, Any]]:
    """Per commit that measured the label: {"c": its index, "unit": ..., "cells": per layout cell None,
    [text, "", ""] or ["failed", "fail", message]}; `rows`: only these rows of `inputs`."""
    inputs = label_inputs(series, layout) if inputs is None else inputs
    if inputs is None:
        return []
    rows = range(len(inputs.commits)) if rows is None else rows
    units, texts = format_tables(inputs.medians[rows.start : rows.stop], FIGURES, inputs.columns)
    tables: list[dict[str, Any]] = [
        {"c": ci, "unit": unit, "cells": [None if text is None else [text, "", ""] for text in text_row]}
        for ci, unit, text_row in zip(inputs.commits[rows.start : rows.stop], units, texts)
    ]
    for r, k, message in inputs.failed:
        if r in rows:
            tables[r - rows.start]["cells"][k] = ["failed", "fail", message]
    return tables


def judged_cells(series: Series, inputs: LabelInputs) -> dict[int, list[list[str] | None]]:
    """The newest commits' verdicts: commit index -> per cell [class, title] or None (no verdict)."""
    out: dict[int, list[list[str] | None]] = {}
    history = series.history
    for ci in inputs.commits[bisect.bisect_left(inputs.commits, series.judged_from) :]:
        judged = series.verdicts.get(ci, {})
        cells: list[list[str] | None] = []
        for bid in inputs.cells:
            found = judged.get(bid) if bid is not None else None
            if found is None:
                cells.append(None)
            else:
                base, v = found
                cells.append([verdict_class(v), f"{v.verdict} against {history[base].commit.short}: {v.reason}"])
        out[ci] = cells
    return out


class LabelChunks(_Files):
    """One label's tables over every series, by data file."""

    kind = "label"

    def __init__(self, series: list[Series], layout: Layout, threshold: float, shas: list[np.ndarray]) -> None:
        self.layout, self.threshold = layout, threshold
        self.shas = {id(s): a for s, a in zip(series, shas)}
        self.chunking = Chunking(max(len(s.history) for s in series))
        # Per series with tables: its inputs, and each file's rows of them.
        self.parts: list[tuple[Series, LabelInputs, dict[int, range]]] = []
        for s in series:
            inputs = label_inputs(s, layout)
            if inputs is None:
                continue
            spans = self.chunking.spans(np.asarray(inputs.commits, dtype=np.int64))
            self.parts.append((s, inputs, {k: range(a, b) for k, (a, b) in spans.items()}))

    @property
    def names(self) -> list[str]:
        return [s.name for s, _, _ in self.parts]

    def used(self) -> Iterable[int]:
        return {k for _, _, rows in self.parts for k in rows}

    def digest(self, version: str, slug: str, k: int) -> str:
        h = hashlib.sha1(f"{version} {slug} {k} {self.threshold!r} {self.layout}".encode())
        for s, inputs, rows in self.parts:
            r = rows.get(k)
            if r is None:
                continue
            at = np.asarray(inputs.commits[r.start : r.stop], dtype=np.int64)
            h.update(f"|{s.name}|{inputs.columns.tolist()}|".encode())
            h.update(at.tobytes())
            h.update(np.ascontiguousarray(inputs.medians[r.start : r.stop]).tobytes())
            h.update(repr([f for f in inputs.failed if f[0] in r]).encode())
            h.update(self.shas[id(s)][at].tobytes())
        return h.hexdigest()

    def overlay(self) -> dict[str, dict[str, list]]:
        """Per series: `judged_cells` by sha."""
        return {
            s.name: {s.history[ci].commit.sha: cells for ci, cells in judged_cells(s, inputs).items()}
            for s, inputs, _ in self.parts
        }

    def content(self, k: int) -> dict:
        sections = {}
        for s, inputs, rows in self.parts:
            r = rows.get(k)
            if r is None:
                continue
            tables = label_tables(s, self.layout, inputs=inputs, rows=r)
            for t in tables:
                t["sha"] = s.history[t.pop("c")].commit.sha
                t["unit_name"] = UNIT_ENGLISH.get(t["unit"], "")
            sections[s.name] = tables
        return {"sections": sections}
