"""What the site shows, computed from the results: plain data, no HTML, no I/O.

One `Series` per machine and environment (never joined with another). For
every commit of a series and every benchmark it measured, the report needs
the median, the quartiles and torch's significant-figure estimate; they are
computed once here (`Series.tracks`) and shared by every page.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field

import numpy as np

from .model import BenchmarkId, CommitInfo, CommitResult
from .report_tables import format_tables, select_unit, summarize_times, trim_sigfig

from .changepoints import Step, find_steps
from .diff import Verdict, compare



@dataclass(frozen=True)
class Track:
    """One benchmark's measurements in one series, oldest first (parallel arrays)."""

    commits: np.ndarray  # index into Series.history
    median: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    figures: np.ndarray  # torch's significant_figures


@dataclass(frozen=True)
class Failed:
    commit: int
    message: str


@dataclass
class Series:
    machine: str
    env: str
    history: list[CommitResult]
    tracks: dict[BenchmarkId, Track] = field(default_factory=dict)
    failed: dict[BenchmarkId, list[Failed]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    # Instruction counts (callgrind), apart from times: (commit index, per call).
    counts: dict[BenchmarkId, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.machine} / {self.env}"

    @property
    def ids(self) -> set[BenchmarkId]:
        return set(self.tracks) | set(self.failed) | set(self.counts)


def summarize(series: Series, *, threshold: float) -> Series:
    """Fill in tracks, failures and change points from the series' history.

    The times of every successful result are gathered into one flat array
    and summarized with numpy, rows of equal length at a time: at 1,000
    commits x 200 benchmarks a per-result Python loop costs seconds.
    """
    rows: dict[BenchmarkId, list[int]] = {}
    commit_of: list[int] = []
    flat: list[float] = []
    per_run: list[int] = []  # number_per_run of each sample
    sample_len: list[int] = []
    result_len: list[int] = []
    failed = series.failed
    for ci, cr in enumerate(series.history):
        for r in cr.results:
            bid = r.id
            if r.counted:
                series.counts.setdefault(bid, []).append((ci, r.instructions))
            if r.ok and any(s.raw_times for s in r.samples):
                rows.setdefault(bid, []).append(len(commit_of))
                commit_of.append(ci)
                total = 0
                for sample in r.samples:
                    flat.extend(sample.raw_times)
                    per_run.append(sample.number_per_run)
                    sample_len.append(len(sample.raw_times))
                    total += len(sample.raw_times)
                result_len.append(total)
            elif r.failure is not None and r.failure.kind != "skipped":
                failed.setdefault(bid, []).append(Failed(ci, str(r.failure)))
            # else: skipped here (no GPU, say) or instruction counts only: not a failure
    # A commit whose build or suite failed has no result for what it could not run.
    known = set(rows) | set(failed)
    for ci, cr in enumerate(series.history):
        if cr.problems:
            message = "; ".join(str(f) for f in cr.problems)
            for bid in known - {r.id for r in cr.results}:
                failed.setdefault(bid, []).append(Failed(ci, message))
    for entries in failed.values():
        entries.sort(key=lambda f: f.commit)

    times = np.asarray(flat, dtype=np.float64) / np.repeat(np.asarray(per_run, dtype=np.float64), sample_len)
    lengths = np.asarray(result_len, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    stats = np.empty((4, len(lengths)))
    for n in np.unique(lengths).tolist():
        which = np.flatnonzero(lengths == n)
        block = times[starts[which][:, None] + np.arange(n)]
        for k, column in enumerate(summarize_times(block)):
            stats[k, which] = column
    commits = np.asarray(commit_of, dtype=np.int64)
    for bid, idx in rows.items():
        i = np.asarray(idx, dtype=np.int64)
        series.tracks[bid] = Track(commits[i], stats[1, i], stats[0, i], stats[2, i], stats[3, i].astype(np.int64))
    series.steps = find_steps(series.history, threshold=threshold)
    return series


# -- names and links ---------------------------------------------------------


def slug(text: str, key: str) -> str:
    """A file name for a page: readable part from `text`, unique part from `key`."""
    readable = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"
    return f"{readable}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def bench_slug(bid: BenchmarkId) -> str:
    return slug(str(bid), repr((bid.label, bid.sub_label, bid.description, bid.num_threads)))


def label_slug(label: str) -> str:
    return slug(label, repr(label))


def iso(ts: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


def fmt_time(seconds: float | None) -> str:
    """A time for people: 4 significant figures in the unit torch would pick."""
    if seconds is None:
        return ""
    if not seconds > 0:
        return f"{seconds:g} s"
    unit, scale = select_unit(seconds)
    return f"{float(trim_sigfig(seconds / scale, 4)):.4g} {unit}"


def fmt_ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def commit_order(series: list[Series]) -> list[CommitInfo]:
    """Every commit of every series once, in history order (as `Store.history` sorts)."""
    seen: dict[str, CommitInfo] = {}
    for s in series:
        for cr in s.history:
            seen.setdefault(cr.commit.sha, cr.commit)
    return sorted(seen.values(), key=lambda c: (c.committed_at, c.authored_at))


# -- Compare tables (label pages) --------------------------------------------


@dataclass(frozen=True)
class Grid:
    """The fixed rows and columns of one label's tables, over all of its history."""

    columns: list[str]  # descriptions
    groups: list[tuple[int, list[tuple[str, list[BenchmarkId | None]]]]]  # threads -> rows (sub_label, cells)

    @property
    def cells(self) -> list[BenchmarkId | None]:
        return [bid for _, rows in self.groups for _, row in rows for bid in row]


def grid_for(ids: list[BenchmarkId]) -> Grid:
    """torch's layout: rows by sub_label, columns by description, grouped by threads (ids in first-seen order)."""
    columns = list(dict.fromkeys(b.description for b in ids))
    row_keys = sorted(dict.fromkeys((b.num_threads, b.sub_label) for b in ids), key=lambda k: k[0])
    by_key = {(b.num_threads, b.sub_label, b.description): b for b in ids}
    groups: list[tuple[int, list]] = []
    for threads, sub in row_keys:
        if not groups or groups[-1][0] != threads:
            groups.append((threads, []))
        groups[-1][1].append((sub, [by_key.get((threads, sub, c)) for c in columns]))
    return Grid(columns, groups)


def change_classes(ratio: np.ndarray, threshold: float) -> list[str]:
    """How a median moved against the previous measured commit, as a CSS class."""
    return np.select(
        [ratio >= 1.5, ratio > 1 + threshold, ratio <= 1 / 1.5, ratio < 1 - threshold],
        ["up2", "up", "dn2", "dn"],
        "",
    ).tolist()


def label_tables(series: Series, grid: Grid, *, threshold: float) -> list[dict]:
    """For each commit of the series that measured this label: its Compare table.

    Each entry: {"c": commit index in history, "unit": ..., "cells": [...]}
    with one cell per grid position: None (not measured), or [text, class,
    change], where class and change ("+3.1%") say how the median moved
    against the benchmark's previous measured commit.
    """
    cells = grid.cells
    tracks = [series.tracks.get(bid) if bid is not None else None for bid in cells]
    fails = [series.failed.get(bid, ()) if bid is not None else () for bid in cells]
    commits = sorted({int(c) for t in tracks if t is not None for c in t.commits} | {f.commit for fs in fails for f in fs})
    if not commits:
        return []
    order = np.asarray(commits, dtype=np.int64)
    medians = np.full((len(commits), len(cells)), np.nan)
    figures = np.ones((len(commits), len(cells)), dtype=np.int64)
    extra: list[list] = [[None] * len(cells) for _ in commits]
    for k, t in enumerate(tracks):
        if t is None:
            continue
        where = np.searchsorted(order, t.commits)
        medians[where, k] = t.median
        figures[where, k] = t.figures
        ratio = np.concatenate(([np.nan], t.median[1:] / t.median[:-1]))
        changes = [fmt_ratio(r) if r == r else "" for r in ratio.tolist()]
        for row, cls, change in zip(where.tolist(), change_classes(ratio, threshold), changes):
            extra[row][k] = (cls, change)
    columns = np.asarray([grid.columns.index(bid.description) if bid is not None else -1 for bid in cells])
    units, texts = format_tables(medians, figures, columns)
    where_failed = np.searchsorted(order, [f.commit for fs in fails for f in fs]).tolist()
    failed_cells = [(k, f.message[:300]) for k, fs in enumerate(fails) for f in fs]
    tables = [
        {"c": ci, "unit": unit, "cells": [None if t is None else [t, e[0], e[1]] for t, e in zip(text_row, extra_row)]}
        for ci, unit, text_row, extra_row in zip(commits, units, texts, extra)
    ]
    for row, (k, message) in zip(where_failed, failed_cells):
        tables[row]["cells"][k] = ["failed", "fail", message]
    return tables


def round6(values) -> list[float]:
    """Values to 6 significant figures, as floats whose JSON form is short.

    n / 10**k is the double nearest to the decimal n×10⁻ᵏ, so its repr has at
    most 6 digits; done with numpy because a chart page has thousands.
    """
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.clip(5 - np.floor(np.log10(np.abs(a))), -22, 22)
    k = np.where(np.isfinite(k), k, 0)
    p = 10.0 ** np.abs(k)
    up = k >= 0
    r = np.round(np.where(up, a * p, a / p))
    return np.where(up, r / p, r * p).tolist()
