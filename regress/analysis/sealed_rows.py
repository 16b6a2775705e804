"""A digest of a range of a table's run rows, the same whichever table they sit in; and a run's CPU model.

The sealed part's digest (`sealed.digest`) names everything its levels are
fitted from: every run row of the sealed positions. Hashed whole, 3,000,000
rows at 10,000 commits cost a second at every build, though all but the
newest hundred positions were hashed alike last time. So it is a digest of
digests, one a BLOCK of positions, and each block's is made by `rows_digest`
from the rows alone, by names (benchmarks, runs), positions from the block's
start and the runs' CPU models: the same value from a kept figures block
(`table_blocks`, which works it out once, as it joins the block) as from the
whole table. Pure.
"""

from __future__ import annotations

import hashlib

import numpy as np


def run_models(t, at: list[int], named: list[str]) -> list[str]:
    """The CPU model of each (history position, run name): the run's own machine's, else its commit's."""
    cpus: dict[int, tuple[dict, str]] = {}
    for i in set(at):
        c = t.history[i]
        cpus[i] = ({r.id: r.fingerprint.cpu for r in c.runs if r.fingerprint is not None}, c.fingerprint.cpu)
    return [cpus[i][0].get(n) or cpus[i][1] for n, i in zip(named, at)]


def _ranks(found: np.ndarray, names) -> tuple[np.ndarray, list]:
    """Codes of `found` (a table's indices) by the order of their names, and the names in that order."""
    present = np.unique(found)
    own = [names[i] for i in present.tolist()]
    order = sorted(range(len(own)), key=own.__getitem__)
    rank = np.empty(len(own), dtype=np.int64)
    rank[order] = np.arange(len(own))
    return rank[np.searchsorted(present, found)], [own[k] for k in order]


def rows_digest(t, a: int, b: int, keep: np.ndarray | None = None) -> str:
    """Of the run rows at positions a to b (excluded), those of `keep` (a mask over them; all by default):
    positions from a, benchmarks and runs by name, round counts, fastest rounds, CPU models."""
    r0, r1 = np.searchsorted(t.run_pos, np.asarray([a, b], dtype=t.run_pos.dtype)).tolist()  # no int64 copy
    rows = np.arange(r0, r1) if keep is None else r0 + np.flatnonzero(keep)
    h = hashlib.blake2b(f"rows {b - a} {len(rows)}".encode())
    if len(rows):
        bench, bench_names = _ranks(t.run_bench[rows], t.ids)
        run, run_names = _ranks(t.run[rows], t.run_names)
        pos = t.run_pos[rows].astype(np.int64) - a
        for values in (pos, bench, run, t.run_n[rows].astype(np.int64), t.low[:, rows]):
            h.update(np.ascontiguousarray(values).tobytes())
        h.update(repr([(x.label, x.sub_label, x.description, x.num_threads) for x in bench_names]).encode())
        h.update("\n".join(run_names).encode())
        pairs = np.unique(pos * len(run_names) + run).tolist()
        at = [a + k // len(run_names) for k in pairs]
        h.update(repr(run_models(t, at, [run_names[k % len(run_names)] for k in pairs])).encode())
    return h.hexdigest()
