"""A chart page's points, in files beside the page (`chunk_grid` says which positions each holds).

A benchmark's chart holds a point per commit, and a new commit adds one to
every benchmark: with the points inline, every chart page of the site
changed at every push, and `--incremental` rewrote them all (200 pages of
1,000 points each for one new commit). Here the page holds what is about
the whole history (change points, failures, axis scale) and lists its data
files, `data/bench/<slug>/<name>.js`; a file's digest is that of its own
values, so after one new commit only the piece holding it is written for
each benchmark, and a page only where its change points or failures moved.
Values go in as the page shows them (levels at 6 significant figures), so a
refit that moves a level by less than that rewrites nothing. A data file is
a script (`REGRESS_CHUNKS.push`), so the site still opens from file:// with
nothing fetched; regress.js joins them back into the page's series, by key.
A history shorter than one chunk keeps its one file's script in the page
(publishers._chunk_files): no more files than a page each, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from regress.report.chunk_grid import Chunking
from regress.report.files import script_json
from regress.report.label_data import round6_array


def rel(slug: str, name: str) -> str:
    return f"data/bench/{slug}/{name}"


@dataclass(frozen=True)
class Line:
    """One line's points: a series' levels and band, or a metric's values in one series."""

    kind: str  # "series" or a metric's value
    name: str  # the series
    at: np.ndarray  # history positions, ascending
    columns: dict[str, np.ndarray]  # parallel to `at`
    text: Callable[[float], str] | None = None  # a metric's point as text (its "text" column, from "y")
    # The columns shown (and digested) at 6 significant figures, each rounded whole once.
    rounded: bool = False
    _shown: dict = field(default_factory=dict, compare=False, repr=False)  # rounded once: digested, then written

    def column(self, name: str, a: int, b: int) -> np.ndarray:
        """A column's values a to b as the file holds them."""
        if not self.rounded:
            return np.ascontiguousarray(self.columns[name][a:b])
        if name not in self._shown:
            self._shown[name] = round6_array(self.columns[name])
        return self._shown[name][a:b]


@dataclass
class Chunks:
    """Per file key (`chunk_grid`), the slices of every line that fall in it."""

    chunking: Chunking
    parts: dict[int, list[tuple[Line, int, int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, lines: list[Line], longest: int) -> Chunks:
        """`longest`: the length of the longest series' history."""
        out = cls(Chunking(longest))
        for line in lines:
            for k, (a, b) in out.chunking.spans(line.at).items():
                out.parts.setdefault(k, []).append((line, a, b))
        return out

    def listed(self) -> list[int]:
        """The keys a page lists (`Chunking.listed`)."""
        return self.chunking.listed(self.parts)

    def drawn(self, k: int) -> list[str]:
        """The series with points in file k."""
        return sorted({line.name for line, _, _ in self.parts.get(k, [])})

    def digest(self, version: str, slug: str, k: int) -> str:
        """Of the file's values themselves (bytes of the arrays), not of its JSON: cheap to tell unchanged."""
        h = hashlib.sha1(f"{version} {slug} {k}".encode())
        for line, a, b in self.parts.get(k, []):
            h.update(f"|{line.kind}|{line.name}|".encode())
            h.update(np.ascontiguousarray(line.at[a:b]).tobytes())
            for name in line.columns:
                h.update(name.encode())
                h.update(line.column(name, a, b).tobytes())
        return h.hexdigest()

    def script(self, k: int) -> str:
        """The data file: {"k", "series": {name: columns}, "metrics": {metric: {name: columns}}}."""
        return push({"k": k, **self.content(k)})

    def content(self, k: int) -> dict:
        """File k's values: {"series": {name: columns}, "metrics": {metric: {name: columns}}}."""
        data: dict = {"series": {}, "metrics": {}}
        for line, a, b in self.parts.get(k, []):
            cols = {"at": line.at[a:b].tolist(), **{n: line.column(n, a, b).tolist() for n in line.columns}}
            if line.text is not None:
                cols["text"] = [line.text(y) for y in cols["y"]]
            if line.kind == "series":
                data["series"][line.name] = cols
            else:
                data["metrics"].setdefault(line.kind, {})[line.name] = cols
        return data


def push(data: dict) -> str:
    """A data file's script: its values pushed onto the page's list (regress.js joins them by `k`)."""
    return f"(window.REGRESS_CHUNKS = window.REGRESS_CHUNKS || []).push({script_json(data)});\n"
