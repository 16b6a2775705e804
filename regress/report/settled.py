"""Which data files of a page are made from just what the last build made them from, told without making them.

A chart's or label page's data file holds a range of history positions
(`chunk_grid`). After one new commit, a 10,000-commit site still made every
file's values and digested them to find the few that changed: 200 benchmarks
x 26 files, more than a second a build. But what a range's values are made
from is named by keys already in hand: its positions' rows of the figures
table come from kept blocks (`analysis/table_blocks.py`, each keyed by its
files' shas and content digests), where the chart draws those rows' own
levels (no run links two commits). A file whose range lies in
that settled part, in every series it draws, gets a key of those keys and of
the page and the code; the manifest keeps it beside the file's digest, and a
build that finds the same key keeps the file, digest and all, without making
its values. Anything else (a newer position, a file measured again, another
rule) is made and digested as before.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from regress.storage.computed import analysis_code


@functools.cache
def rule() -> str:
    """A digest of the code a data file's values are made by: the analysis and core code, and the report's."""
    h = hashlib.sha256(analysis_code().encode())
    for path in sorted((Path(__file__).resolve().parent).glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


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


def of(table, *, fitted: bool) -> Settled:
    """A series' settled part: its kept blocks from the first position on, where its chart draws the measured
    levels (`fitted` False: the table's rows alone); none where the chart's levels are fitted, as every
    run of the history moves them."""
    if fitted:
        return Settled(0, (), "")
    upto = 0
    for a, b, _, _ in table.blocks:
        if a != upto:
            break
        upto = b
    return Settled(upto, table.blocks, "measured")


def page_key(version: str, rel: str, identity: str, parts: list[tuple[str, Settled | None]], a: int, b: int | None):
    """A data file's key: its page's version and path, what else names its page (`identity`), and each series
    it draws (by name) as settled over positions a to b; None where one of them is not."""
    keys = []
    for name, settled in parts:
        found = settled.key(a, b) if settled is not None else None
        if found is None:
            return None
        keys.append(f"{name}={found}")
    return hashlib.sha1(f"{rule()} {version} {rel} {identity} {' '.join(keys)}".encode()).hexdigest()
