"""Which data files of a page are made from just what the last build made them from, told without making them.

A chart's or label page's data file holds a range of history positions
(`chunk_grid`). After one new commit, a 10,000-commit site still made every
file's values and digested them to find the few that changed: 200 benchmarks
x 26 files, more than a second a build. But what a range's values are made
from is named by keys already in hand: its positions' rows of the figures
table come from kept blocks (`analysis/table_blocks.py`, each keyed by its
files' shas and content digests), and a chart's fitted levels there, below
the reach of every newer run, are the sealed part's alone
(`sealed_fit.chart_fixed`, named by its digest). A file whose range lies in
that settled part, in every series it draws, gets a key of those keys, of
the page and of regress's code (`memo.code_digest`); the manifest keeps it
beside the file's digest, and a build that finds the same key keeps the
file, digest and all, without making its values. Anything else (a newer position, a file measured again, another
rule) is made and digested as before.
"""

from __future__ import annotations

import hashlib

from regress.storage import memo


class Settled:
    """One series' settled positions: those below `upto`, each range of them named by `key`."""

    def __init__(self, upto: int, blocks: tuple[tuple[int, int, str, str], ...], levels: str) -> None:
        self.upto, self.blocks, self.levels = upto, blocks, levels
        self._keys: dict[tuple[int, int], str | None] = {}

    def key(self, a: int, b: int | None) -> str | None:
        """What positions a to b (excluded) are made from, or None where they are not all settled."""
        if b is None or b > self.upto:
            return None
        if (a, b) not in self._keys:
            parts = [k for x, y, k, _ in self.blocks if x < b and y > a]
            self._keys[a, b] = hashlib.sha1(" ".join([self.levels, *parts]).encode()).hexdigest()
        return self._keys[a, b]


def of(table, fixed: tuple[str, int] | None) -> Settled:
    """A series' settled part: its kept blocks from the first position on, as far as its chart's levels are
    fixed. `fixed`: the chart's sealed digest and reach (`prefix_cache.ChartLevels.fixed`); None where
    every level is the measured one (no fit: the table's rows alone)."""
    upto = 0
    for a, b, _, _ in table.blocks:
        if a != upto:
            break
        upto = b
    if fixed is None:
        return Settled(upto, table.blocks, "measured")
    digest, below = fixed
    if not digest:  # nothing sealed: every level is fitted anew at every build
        return Settled(0, (), "")
    return Settled(min(upto, below), table.blocks, digest)


def page_key(version: str, rel: str, identity: str, parts: list[tuple[str, Settled | None]], a: int, b: int | None):
    """A data file's key: its page's version and path, what else names its page (`identity`), and each series
    it draws (by name) as settled over positions a to b; None where one of them is not."""
    keys = []
    for name, settled in parts:
        found = settled.key(a, b) if settled is not None else None
        if found is None:
            return None
        keys.append(f"{name}={found}")
    return hashlib.sha1(f"{memo.code_digest()} {version} {rel} {identity} {' '.join(keys)}".encode()).hexdigest()
