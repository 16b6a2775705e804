"""The Compare tables of a label page: the layout of benchmarks, and each cell's verdict colour."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np

from regress.analysis.diff import Verdict
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId
from regress.report.data import BIG_CHANGE, Series
from regress.report.tables import format_tables

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
    """A Compare cell's CSS class for the differ's verdict.

    regression: "up" ("up2" from BIG_CHANGE slower), improvement: "dn" ("dn2"
    from BIG_CHANGE faster); every other verdict is neutral and named by
    itself ("noisy", "unchanged", ...).
    """
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
    medians: np.ndarray  # commits x cells: the shown level (NaN: not measured)
    figures: np.ndarray
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
    figures = np.ones((len(commits), len(cells)), dtype=np.int64)
    for k, t in enumerate(tracks):
        if t is None:
            continue
        where = np.searchsorted(order, t.commits)
        medians[where, k] = t.level  # the level, as the verdict colouring the cell
        figures[where, k] = FIGURES
    columns = np.asarray([layout.columns.index(bid.description) if bid is not None else -1 for bid in cells])
    rows = np.searchsorted(order, [f.commit for fs in fails for f in fs]).tolist()
    failed = [(r, k, f.message[:300]) for r, (k, f) in zip(rows, ((k, f) for k, fs in enumerate(fails) for f in fs))]
    return LabelInputs(cells, commits, medians, figures, columns, failed)


def label_tables(
    series: Series, layout: Layout, *, inputs: LabelInputs | None = None, rows: range | None = None
) -> list[dict[str, Any]]:
    """For each commit of the series that measured this label: its Compare table, plain (the page lays
    the newest commits' verdicts over it: `judged_cells`).

    Each entry: {"c": commit index in history, "unit": ..., "cells": [...]}
    with one cell per layout position: None (not measured), or [text, "", ""]:
    the level in the table's unit. A failed cell is ["failed", "fail",
    message]. `inputs`: `label_inputs`'s, if made; `rows`: only these of its
    rows (a data file's).
    """
    inputs = label_inputs(series, layout) if inputs is None else inputs
    if inputs is None:
        return []
    rows = range(len(inputs.commits)) if rows is None else rows
    units, texts = format_tables(
        inputs.medians[rows.start : rows.stop], inputs.figures[rows.start : rows.stop], inputs.columns
    )
    tables: list[dict[str, Any]] = [
        {"c": ci, "unit": unit, "cells": [None if text is None else [text, "", ""] for text in text_row]}
        for ci, unit, text_row in zip(inputs.commits[rows.start : rows.stop], units, texts)
    ]
    for r, k, message in inputs.failed:
        if r in rows:
            tables[r - rows.start]["cells"][k] = ["failed", "fail", message]
    return tables


def judged_cells(series: Series, inputs: LabelInputs) -> dict[int, list[list[str] | None]]:
    """The newest commits' verdicts over their plain tables: commit index -> per cell [class, title]
    (`verdict_class`; the verdict, the commit it is against, the differ's reason), or None where the cell
    has no verdict (the first measurement, not measured, failed)."""
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
