"""A page's data files, each a span of history positions (`Chunking`) kept while its digest stands: a
chart's points (`Chunks`) and a label's plain Compare tables (`LabelChunks`; the page overlays verdicts);
the metrics beyond time, as chart lines and label tables (`Index`); torch's Compare number formatting."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from markupsafe import Markup

from regress.analysis import metrics
from regress.analysis.diff import Verdict
from regress.core.blocks import log10_f32 as _log10_f32
from regress.core.kinds import Kind, Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.core.records import BenchmarkId, BenchmarkResult
from regress.core.units import binary_unit
from regress.report.data import BIG_CHANGE, Series

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


# torch's Compare number formatting (`trim_significant_figures()`), in bulk with numpy and in float32 as
# torch computes: torch/utils/benchmark/utils/common.py (`select_unit`, `trim_sigfig`) and compare.py
# (`_Column`); the tests check it against torch digit for digit.
UNITS = ("ns", "us", "ms", "s")
UNIT_SCALE = np.array([1e-9, 1e-6, 1e-3, 1.0])
UNIT_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


def unit_index(t) -> np.ndarray:
    """Index into UNITS of torch's `select_unit(t)` (which says "s" below 1 ns, as torch does)."""
    k = np.floor_divide(_log10_f32(t).astype(np.float64), 3)
    return np.select([k == -3, k == -2, k == -1], [0, 1, 2], 3)


def select_unit(t: float) -> tuple[str, float]:
    i = int(unit_index(t))
    return UNITS[i], float(UNIT_SCALE[i])


def trim_sigfig(x, n) -> np.ndarray:
    """`x` rounded to `n` significant figures (x > 0), as float32 like torch's."""
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.ceil(_log10_f32(np.abs(x)).astype(np.float64))
    scale = np.power(10.0, magnitude - n)
    return (np.round((x / scale).astype(np.float32)) * scale.astype(np.float32)).astype(np.float32)


def format_tables(
    medians: np.ndarray, figures: np.ndarray | int, columns: np.ndarray
) -> tuple[list[str], list[list[str | None]]]:
    """Compare tables, one a row of `medians` (rows x cells, NaN where a cell has none). `figures`: each
    cell's significant figures, or one number for all; `columns`: each cell's column. Returns each row's
    unit (from its smallest median, "" if none) and its cells' texts, every cell of a column with the
    decimals of its least precise cell."""
    if not len(medians):
        return [], []
    present = ~np.isnan(medians)
    smallest = np.where(present, medians, np.inf).min(axis=1)
    unit = unit_index(np.where(np.isfinite(smallest), smallest, 1.0))
    scaled = medians / UNIT_SCALE[unit][:, None]
    leading = np.ceil(_log10_f32(np.where(present, scaled, 1.0)).astype(np.float64)).astype(np.int64)
    want = np.where(present, np.maximum(figures - leading, 0), np.iinfo(np.int64).max)
    decimals = np.empty_like(want)
    for c in np.unique(columns):
        in_column = columns == c
        decimals[:, in_column] = want[:, in_column].min(axis=1, keepdims=True)
    values = trim_sigfig(np.where(present, scaled, 1.0), np.where(present, figures, 1))
    texts = [
        [f"{v:.{d}f}" if p else None for v, d, p in zip(vr, dr, pr)]
        for vr, dr, pr in zip(values.tolist(), decimals.tolist(), present.tolist())
    ]
    measured = present.any(axis=1).tolist()
    return [UNITS[u] if m else "" for u, m in zip(unit.tolist(), measured)], texts


def short_name(bid: BenchmarkId) -> str:
    """The benchmark without its label (shown under the label's heading)."""
    return str(bid)[len(bid.label) + 3 :]


class MetricIndex:
    """Per series, each benchmark's figures beyond time, grouped once by benchmark."""

    def __init__(self, series: list) -> None:
        self.series = series
        self.by_series = [s.table.by_bench(~np.isnan(s.table.extra).all(axis=0)) for s in series]
        self._arrays: dict[tuple[int, BenchmarkId, Metric], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._by_id: dict[tuple[int, int], dict[BenchmarkId, BenchmarkResult]] = {}

    def arrays(self, k: int, bid: BenchmarkId, metric: Metric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The k-th series' commit indices, levels and table rows of `bid` for `metric`, oldest first."""
        key = (k, bid, metric)
        if key not in self._arrays:  # the chart and the label tables both ask
            t = self.series[k].table
            rows = self.by_series[k].get(bid, np.zeros(0, dtype=np.int64))
            # Every metric's values of the benchmark gathered at once.
            every, pos = t.extra[:, rows], t.pos[rows].astype(np.int64)
            for m, y in zip(BEYOND_TIME, every):
                have = ~np.isnan(y)
                self._arrays[(k, bid, m)] = (pos[have], y[have], rows[have])
        return self._arrays[key]

    def result(self, k: int, row: int) -> BenchmarkResult:
        """The benchmark result behind a table row (its commit read from the summary)."""
        t = self.series[k].table
        at = (k, int(t.pos[row]))
        if at not in self._by_id:  # the label tables ask for the same two commits benchmark after benchmark
            self._by_id[at] = t.load(at[1]).by_id()
        return self._by_id[at][t.ids[int(t.bench[row])]]


def metric_lines(series: list, bid: BenchmarkId, index: MetricIndex) -> tuple[list[dict], list[Line]]:
    """Per metric this benchmark has: its axis (title, note, scale) and per series a line of its levels."""
    out, lines = [], []
    for metric in BEYOND_TIME:
        found, unit = [], ""
        for k, s in enumerate(series):
            at, y, rows = index.arrays(k, bid, metric)
            if len(at):
                if metric == Metric.TRACKED:
                    unit = s.table.units.get(int(rows[-1]), "")
                found.append((s.name, at, y))
        if not found:
            continue
        # The axis: bytes in the binary unit of the largest value, compile time in ms.
        sp = spec(metric)
        scale, title = 1.0, sp.what + (f" ({unit})" if unit else "")
        if sp.axis == "binary":
            scale, name = binary_unit(max(float(np.max(y)) for _, _, y in found))
            title = f"{sp.what} ({name})"
        elif sp.axis == "ms":
            scale, title = 1e-3, f"{sp.what} (ms)"
        text = functools.lru_cache(maxsize=4096)(sp.fmt)  # exact figures repeat commit after commit
        out.append(
            {
                "metric": metric.value,
                "title": title,
                "note": sp.footnote,
                "scale": scale,
                "series": [{"name": name} for name, _, _ in found],
            }
        )
        lines += [Line(metric.value, name, at, {"y": y}, text=text) for name, at, y in found]
    return out, lines


def metric_tables(
    series: list, ids: list[BenchmarkId], *, threshold_for: Callable[[Metric], float], index: MetricIndex
) -> list[dict]:
    """Per metric, a table of the label's benchmarks: newest level per series, and the change and verdict
    against the previous measured commit, as `regress compare --metric` judges."""
    tables = []
    for metric in BEYOND_TIME:
        threshold = threshold_for(metric)
        rows = []
        for k, s in enumerate(series):
            for bid in ids:
                # The newest two (commit index, level, table row), oldest first.
                have = list(zip(*(a[-2:].tolist() for a in index.arrays(k, bid, metric))))
                if not have:
                    continue
                head = index.result(k, have[-1][2])
                row = {
                    "series": s.name,
                    "name": short_name(bid),
                    "value": spec(metric).fmt(have[-1][1]),
                    "change": "",
                    "verdict": "",
                }
                if len(have) > 1:
                    v = metrics.judge(index.result(k, have[-2][2]), head, metric, threshold=threshold)
                    row["change"] = "" if v.ratio is None else f"{(v.ratio - 1) * 100:+.1f}%"
                    row["verdict"] = str(v.verdict) if v.verdict != Kind.UNCHANGED else "unchanged"
                rows.append(row)
        if rows:
            s = spec(metric)
            tables.append({"metric": metric.value, "title": s.what, "note": s.footnote, "rows": rows})
    return tables


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
        if t is not None:  # the level, as the verdict colouring the cell
            medians[np.searchsorted(order, t.commits), k] = t.level
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

    def _at(self, k: int) -> list[tuple[Series, LabelInputs, range]]:
        """The series with rows in file `k`: each with its inputs and those rows."""
        return [(s, inputs, rows[k]) for s, inputs, rows in self.parts if k in rows]

    def digest(self, version: str, slug: str, k: int) -> str:
        h = hashlib.sha1(f"{version} {slug} {k} {self.threshold!r} {self.layout}".encode())
        for s, inputs, r in self._at(k):
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
        for s, inputs, r in self._at(k):
            sections[s.name] = tables = label_tables(s, self.layout, inputs=inputs, rows=r)
            for t in tables:
                t["sha"] = s.history[t.pop("c")].commit.sha
                t["unit_name"] = UNIT_ENGLISH.get(t["unit"], "")
        return {"sections": sections}
