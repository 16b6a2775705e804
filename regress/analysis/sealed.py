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
from regress.core.records import BenchmarkId

# Positions below the last multiple of this are sealed.
SEAL = 1000
# A benchmark's noise scale, centre and checkpoint are its sealed levels' where it has this many.
FEWEST = 100
# Bump when the sealed part's rule changes: a kept prefix of another rule is never read.
RULE = "sealed/1"


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


def digest(t, code: dict[str, str], s: int, opened: np.ndarray, threshold: float) -> str:
    """Of everything the sealed part reads: the sealed positions' commits, code identities, CPU models
    and reference floors, and every run row below s (which runs are sealed, their benchmarks' and
    runs' names, round counts and fastest rounds)."""
    h = hashlib.blake2b(f"{RULE} {SEAL} {s} {threshold!r}".encode())
    below = t.history[:s]
    h.update("\n".join(f"{c.commit.sha} {code.get(c.commit.sha)}" for c in below).encode())
    cpus = [(c.fingerprint.cpu, sorted((r.id, r.fingerprint.cpu) for r in c.runs if r.fingerprint)) for c in below]
    h.update(repr(cpus).encode())
    h.update(np.ascontiguousarray(t.reference[:s]).tobytes())
    rows = int(np.searchsorted(t.run_pos, s))  # the run rows are in history order
    for a in (opened[:rows], t.run_pos[:rows], t.run_bench[:rows], t.run[:rows], t.run_n[:rows], t.low[:, :rows]):
        h.update(np.ascontiguousarray(a).tobytes())
    if rows:
        benches, runs = int(t.run_bench[:rows].max()) + 1, int(t.run[:rows].max()) + 1
        h.update(repr([(b.label, b.sub_label, b.description, b.num_threads) for b in t.ids[:benches]]).encode())
        h.update("\n".join(t.run_names[:runs]).encode())
    return h.hexdigest()
