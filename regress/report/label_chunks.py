"""A label page's Compare tables, one per commit, in data files beside the page (`chunk_grid`).

A label page holds a table for every commit of each series (the commit
picker shows any of them), so every label page grew at every push and was
rewritten in full: at 10,000 commits, megabytes a page. As a chart's points
(`bench_chunks`), the tables are in `data/label/<slug>/<name>.js`, the
positions of each as the grid has them, each kept by a digest of what its tables are made from (the shown levels,
the failures, the commits), computed without making them; only a chunk
whose digest moved is made and written. The tables in chunks are plain;
the verdicts colouring the newest VERDICT_COMMITS commits are laid over
them from the page's own data (`overlay`), so a verdict window that slides
on moves no chunk. The page keeps what is about the newest commits (those
verdicts, the metric tables) and builds its picker from the tables'
commits (named in data/commits.js).
"""

from __future__ import annotations

import hashlib

import numpy as np

from regress.report.chunk_grid import Chunking
from regress.report.data import Series
from regress.report.files import script_json
from regress.report.label_data import LabelInputs, Layout, judged_cells, label_inputs, label_tables
from regress.report.tables import UNIT_ENGLISH


def rel(slug: str, name: str) -> str:
    return f"data/label/{slug}/{name}"


def sha_array(s) -> np.ndarray:
    """A series' commits' shas, by history position, as an array (a digest takes a chunk's in one slice)."""
    return np.asarray([c.commit.sha for c in s.history], dtype="S40")


class LabelChunks:
    """One label's tables over every series, by data file (`chunk_grid`)."""

    def __init__(
        self, series: list[Series], layout: Layout, threshold: float, shas: list[np.ndarray] | None = None
    ) -> None:
        """`layout`: the label's tables' rows and columns; `shas`: per series, its commits' shas as bytes
        (`sha_array`), made once for every label."""
        self.layout, self.threshold = layout, threshold
        self.shas = {id(s): a for s, a in zip(series, shas or [sha_array(s) for s in series])}
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
        """The series with tables of this label, in the site's order."""
        return [s.name for s, _, _ in self.parts]

    def drawn(self, k: int) -> list[str]:
        """The series with tables in file k."""
        return [s.name for s, _, rows in self.parts if k in rows]

    def listed(self) -> list[int]:
        """The keys a page lists (`Chunking.listed`)."""
        return self.chunking.listed({k for _, _, rows in self.parts for k in rows})

    def digest(self, version: str, slug: str, k: int) -> str:
        """Of what file k's tables are made from, without making them."""
        h = hashlib.sha1(f"{version} {slug} {k} {self.threshold!r} {self.layout}".encode())
        for s, inputs, rows in self.parts:
            r = rows.get(k)
            if r is None:
                continue
            commits = inputs.commits[r.start : r.stop]
            at = np.asarray(commits, dtype=np.int64)
            h.update(f"|{s.name}|{inputs.columns.tolist()}|".encode())
            h.update(at.tobytes())
            h.update(np.ascontiguousarray(inputs.medians[r.start : r.stop]).tobytes())
            h.update(np.ascontiguousarray(inputs.figures[r.start : r.stop]).tobytes())
            h.update(repr([f for f in inputs.failed if f[0] in r]).encode())
            h.update(self.shas[id(s)][at].tobytes())
        return h.hexdigest()

    def overlay(self) -> dict[str, dict[str, list]]:
        """Per series: the judged commits' verdicts over their tables, by sha (`label_data.judged_cells`)."""
        return {
            s.name: {s.history[ci].commit.sha: cells for ci, cells in judged_cells(s, inputs).items()}
            for s, inputs, _ in self.parts
        }

    def script(self, k: int) -> str:
        """The data file: {"k", "sections": {series: [table, ...]}}, each table with its commit's sha."""
        sections = {}
        for s, inputs, rows in self.parts:
            r = rows.get(k)
            if r is None:
                continue
            tables = label_tables(s, self.layout, threshold=self.threshold, inputs=inputs, rows=r, verdicts=False)
            for t in tables:
                t["sha"] = s.history[t.pop("c")].commit.sha
                t["unit_name"] = UNIT_ENGLISH.get(t["unit"], "")
            sections[s.name] = tables
        return f"(window.REGRESS_CHUNKS = window.REGRESS_CHUNKS || []).push({script_json({'k': k, 'sections': sections})});\n"
