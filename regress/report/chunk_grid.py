"""Which history positions each data file of a chart or label page holds: one grid for both.

A page's points (`bench_chunks`) and tables (`label_chunks`) are in files,
so that a new commit rewrites a small file per page, not the page. Older
positions are in closed chunks of CHUNK. The positions past them are in
PIECES pieces of PIECE each, all listed by the page from the start, the
unfilled ones empty, so the page's list of files changes only when a chunk
closes (once in CHUNK commits). A push then writes the piece its commit
falls in (at most PIECE positions a page, where one file of everything past
the last closed chunk held up to CHUNK), and the piece before it only when
its paired measurement of the parent falls there. A chunk closes SETTLE
commits after its last position, so the push that measures that position
again finds it still among the pieces, and the closed chunk is written once.
A history shorter than CHUNK is one file, inline in its page
(publishers._chunk_files): no more files than a page each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Positions a closed chunk holds: 1 to 20 of them a page up to 10,000 commits.
CHUNK = 500
# Positions a piece holds, and the pieces listed (enough for CHUNK + SETTLE - 1 positions).
PIECE = 100
SETTLE = 2
PIECES = (CHUNK + SETTLE - 2) // PIECE + 1


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

    def end(self, key: int) -> int | None:
        """The end (excluded) of the positions the key's file may hold; None: every later one (the last piece)."""
        if self.inline:
            return None
        start = self.closed * CHUNK
        if key < start:
            return key + CHUNK
        return None if key >= start + (PIECES - 1) * PIECE else key + PIECE

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
