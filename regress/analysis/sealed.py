"""A long history's sealed prefix: what its older commits give the change points, worked out once.

Finding a history's change points fits every benchmark's levels (`levels.fit_many`)
and segments them (`partition`), both over the whole history: after one new
commit, a site build of 10,000 commits spends 14 s doing again what it did
last time. The rule is therefore blockwise. The positions below the last
multiple of SEAL are sealed: their levels are fitted from the runs that
measured only them; the runs of the newer commits are fitted around those
levels, held as they are; the noise scale, the centre of the search and the
typical reference floor are the sealed positions'. A history of SEAL commits
or fewer has no sealed part, and everything is as before. What the sealed
positions give changes only when they do (or once every SEAL commits, when
the seal moves on), so a build keeps it (`Prefix`, under a digest of
everything the sealed part read) and carries the search on from its
checkpoint (`partition.Checkpoint`). Kept or not, the rule gives the same
levels and steps. Pure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from regress.analysis.partition import Checkpoint
from regress.analysis.sealed_rows import rows_digest
from regress.analysis.table import bounds
from regress.analysis.table_blocks import BLOCK
from regress.core.records import BenchmarkId

# Positions below the last multiple of this are sealed.
SEAL = 1000
# A benchmark's noise scale, centre and checkpoint are its sealed levels' where it has this many.
FEWEST = 100
# Bump when the sealed part's rule changes: a kept prefix of another rule is never read.
# 3: the run rows hashed a BLOCK of positions at a time (`sealed_rows`), kept blocks' digests as they were made.
RULE = "sealed/3"


def point(n: int) -> int:
    """The first position not sealed in a history of n commits (0: a history of fewer than SEAL)."""
    return n // SEAL * SEAL


@dataclass(frozen=True)
class SealedLevels:
    """One benchmark's fit of its sealed runs."""

    positions: np.ndarray  # every position they measured it at, ascending
    log_levels: np.ndarray  # the fitted log level there
    cpu: dict[str, float]  # each CPU model's shift


@dataclass(frozen=True)
class Prefix:
    """What a history's sealed part gave: its levels, and each benchmark's search up to its checkpoint."""

    digest: str  # of everything the sealed part read (`digest`)
    levels: dict[BenchmarkId, SealedLevels]
    checkpoints: dict[BenchmarkId, Checkpoint] = field(default_factory=dict)


def open_rows(t, s: int) -> np.ndarray:
    """Over the table's run rows: those of a run that measured a position at or past s (an unnamed
    run is its own commit's). The rest are the sealed runs'."""
    late = t.run_pos >= s
    if not s or not late.any():
        return late
    names = np.asarray([bool(n) for n in t.run_names])
    runs = np.unique(t.run[late])
    return late | (np.isin(t.run, runs[names[runs]]) & names[t.run])


def digest(t, code: dict[str, str], s: int, opened: np.ndarray, salt, off=()) -> str:
    """Of everything the sealed levels are fitted from: the sealed positions' commits and code
    identities, and the sealed run rows alone (their benchmarks' and runs' names, the runs' CPU
    models, round counts and fastest rounds: `sealed_rows.rows_digest`, a BLOCK of positions at a
    time, a kept figures block's as it was made); `off`, the positions whose lone runs are left out.
    A newer run's rows are not in it, even at a sealed position: a push that measures the
    commit before it again (a paired push, the workflow's) leaves the sealed part as it was.
    `salt`: what tells fits of other rows apart (the search's threshold)."""
    h = hashlib.blake2b(f"{RULE} {SEAL} {s} {salt!r}".encode())
    h.update("\n".join(f"{c.commit.sha} {code.get(c.commit.sha)}" for c in t.history[:s]).encode())
    made = {(a, b): rows for a, b, _, rows in getattr(t, "blocks", ())}
    for a in range(0, s, BLOCK):
        b = min(a + BLOCK, s)
        r0, r1 = bounds(t.run_pos, a, b)
        newer = opened[r0:r1]
        if (a, b) in made and not newer.any():
            h.update(made[a, b].encode())  # as its kept block was made: the same rows, the same digest
        else:
            h.update(rows_digest(t, a, b, ~newer).encode())
    h.update(repr(sorted(p for p in off if p < s)).encode())
    return h.hexdigest()
