"""A chart page's points, in files of CHUNK history positions each, beside the page.

A benchmark's chart holds a point per commit, and a new commit adds one to
every benchmark: with the points inline, every chart page of the site
changed at every push, and `--incremental` rewrote them all (200 pages of
1,000 points each for one new commit). Here the page holds what is about
the whole history (change points, failures, axis scale) and lists its
chunk files, `data/bench/<slug>/<k>.js`, each the points of history
positions [k*CHUNK, (k+1)*CHUNK), and `last.js`, those after the last full
one (kept in the list even while empty, so the list changes once in CHUNK
commits); a chunk's digest is that of its own values, so after one new
commit only the last chunk of each benchmark is written, and a page only
where its change points or failures moved. Values
go in as the page shows them (levels at 6 significant figures), so a refit
that moves a level by less than that rewrites nothing. A chunk file is a
script (`REGRESS_CHUNKS.push`), so the site still opens from file:// with
nothing fetched; regress.js joins the chunks back into the page's series.
A history shorter than one chunk keeps that chunk's script in the page
(publishers._chunk_files): no more files than a page each, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from regress.report.files import script_json

# History positions a chunk holds: 1 to 20 script files a page up to 10,000 commits.
CHUNK = 500


def rel(slug: str, k: int, full: int) -> str:
    return f"data/bench/{slug}/{'last' if k == full else k}.js"


@dataclass(frozen=True)
class Line:
    """One line's points: a series' levels and band, or a metric's values in one series."""

    kind: str  # "series" or a metric's value
    name: str  # the series
    at: np.ndarray  # history positions, ascending
    columns: dict[str, np.ndarray]  # parallel to `at`
    text: Callable[[float], str] | None = None  # a metric's point as text (its "text" column, from "y")


@dataclass
class Chunks:
    """Per chunk index, the slices of every line that fall in it."""

    full: int  # full chunks: positions from full * CHUNK on are in the last one (key `full`)
    parts: dict[int, list[tuple[Line, int, int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, lines: list[Line], longest: int) -> Chunks:
        """`longest`: the length of the longest series' history."""
        out = cls(longest // CHUNK)
        for line in lines:
            if not len(line.at):
                continue
            ks = np.minimum(line.at // CHUNK, out.full)
            for k in np.unique(ks).tolist():
                a, b = np.searchsorted(ks, [k, k + 1]).tolist()
                out.parts.setdefault(k, []).append((line, a, b))
        return out

    def listed(self) -> list[int]:
        """The chunks a page lists: those with points, and the last one always."""
        return sorted(set(self.parts) | {self.full})

    def digest(self, version: str, slug: str, k: int) -> str:
        """Of the chunk's values themselves (bytes of the arrays), not of its JSON: cheap to tell unchanged."""
        h = hashlib.sha1(f"{version} {slug} {k}".encode())
        for line, a, b in self.parts.get(k, []):
            h.update(f"|{line.kind}|{line.name}|".encode())
            h.update(np.ascontiguousarray(line.at[a:b]).tobytes())
            for name, col in line.columns.items():
                h.update(name.encode())
                h.update(np.ascontiguousarray(col[a:b]).tobytes())
        return h.hexdigest()

    def script(self, k: int) -> str:
        """The chunk file: {"k", "series": {name: columns}, "metrics": {metric: {name: columns}}}."""
        data: dict = {"k": k, "series": {}, "metrics": {}}
        for line, a, b in self.parts.get(k, []):
            cols = {"at": line.at[a:b].tolist(), **{n: c[a:b].tolist() for n, c in line.columns.items()}}
            if line.text is not None:
                cols["text"] = [line.text(y) for y in cols["y"]]
            if line.kind == "series":
                data["series"][line.name] = cols
            else:
                data["metrics"].setdefault(line.kind, {})[line.name] = cols
        return f"(window.REGRESS_CHUNKS = window.REGRESS_CHUNKS || []).push({script_json(data)});\n"
