"""A history's levels fitted blockwise: the sealed runs alone (or as a kept prefix gave them), the newer around them.

Both readers of a long history's levels fit this way (`analysis/sealed.py`
says why): the change points' search, over the runs it trusts
(`trusted_levels`), and the chart's line, over every run (`chart`). Fitted
once over the whole history, every new run moved every level by a hair (the
runs' shifts are one chain), so each push rewrote every chunk of every chart
(`report/bench_chunks.py`) and refitted a thousand commits it had fitted
last time. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regress.analysis import levels, sealed
from regress.analysis.table import as_table
from regress.core.records import BenchmarkId

# The digest's salt for a fit over every run (the search's is its threshold, which picks the runs it trusts).
EVERY_RUN = "every run"


@dataclass(frozen=True)
class Fit:
    key: str  # digest of what the sealed part read ("" where nothing is sealed)
    below: dict[BenchmarkId, sealed.SealedLevels]  # the sealed part's levels
    points: dict[BenchmarkId, tuple[np.ndarray, np.ndarray, np.ndarray]]  # positions, nodes, log levels
    # Positions below this have the sealed part's levels alone (no newer run measured them): what `key`
    # names fixes them (0 where nothing is sealed).
    fixed: int = 0


def fit(table, code: dict[str, str], rows: np.ndarray, off: set[int], kept: sealed.Prefix | None, salt) -> Fit:
    """Per benchmark, the positions measured in the given run rows, their nodes and log levels.
    `off`: positions whose lone runs are left out; `kept`: the last fit's sealed part, used where
    its digest is this one's (`salt` tells fits of other rows apart)."""
    s = sealed.point(len(table.history))
    opened = sealed.open_rows(table, s)
    key = sealed.digest(table, code, s, opened, salt, off) if s else ""
    fixed = min(s, int(table.run_pos[opened].min())) if opened.any() else s
    if not s:
        below = {}
    elif kept is not None and kept.digest == key:
        below = kept.levels
    else:
        sealed_obs = observed(table, code, rows & ~opened, off)
        fits = levels.fit_many([(obs, None) for obs in sealed_obs.values()])
        below = {bid: _sealed(obs, found) for (bid, obs), found in zip(sealed_obs.items(), fits)}
    above = observed(table, code, rows & opened, off)
    node_of = levels.node_codes(table, code) if below else None
    # Every benchmark's fit at once (levels.fit_many): the newer runs around the sealed levels, where held.
    jobs = {bid: (obs, _held(below[bid], obs, node_of) if bid in below else None) for bid, obs in above.items()}
    fitted = dict(zip(jobs, levels.fit_many(list(jobs.values()))))
    points = {}
    for bid in table.ids:
        part, obs = below.get(bid), above.get(bid)
        if part is None and obs is None:
            continue
        if part is None:
            assert obs is not None
            nodes_fit = fitted[bid]["node"]
            positions = np.unique(obs.position)
            nodes = obs.node[np.searchsorted(obs.position, positions, sorter=np.argsort(obs.position, kind="stable"))]
            points[bid] = (positions, nodes, np.asarray([nodes_fit[n] for n in nodes.tolist()], dtype=float))
        else:
            points[bid] = _around(part, obs, node_of, fitted.get(bid))
    return Fit(key, below, points, fixed)


def chart(history, code: dict[str, str] | None = None, kept: sealed.Prefix | None = None):
    """Per benchmark: the history positions it was measured at (ascending) and its level there (seconds)
    with every run's shift taken out, from every run; and the sealed part to keep for the next build
    (None where nothing is sealed). Arrays: a dict a point was two seconds of a 10,000-commit build."""
    out, prefix, _ = chart_fixed(history, code, kept)
    return out, prefix


def chart_fixed(history, code: dict[str, str] | None = None, kept: sealed.Prefix | None = None):
    """`chart`, and the positions below which its levels are the sealed part's alone (`Fit.fixed`): those
    stay as they are while the prefix's digest does (the site keeps their chart files unread)."""
    table = as_table(history)
    found = fit(table, code or {}, np.ones(len(table.run_pos), dtype=bool), set(), kept, EVERY_RUN)
    out = {bid: (positions, np.exp(logs)) for bid, (positions, _, logs) in found.points.items()}
    return out, (sealed.Prefix(found.key, found.below) if found.key else None), found.fixed


def observed(table, code: dict[str, str], rows: np.ndarray, off: set[int]) -> dict[BenchmarkId, levels.Observations]:
    """Per benchmark, its observations in the given run rows, less a lone run's while the machine was off."""
    out = {}
    for bid, obs in levels.observations(table, code, lambda t: rows).items():
        if off:  # a run of one node measured while the machine was off: left out
            nodes_of_run = np.unique(np.column_stack([obs.run, obs.node]), axis=0)[:, 0]
            runs, count = np.unique(nodes_of_run, return_counts=True)
            lone = np.isin(obs.run, runs[count == 1])
            obs = obs.only(~(np.isin(obs.position, list(off)) & lone))
        if len(obs):
            out[bid] = obs
    return out


def _sealed(obs: levels.Observations, fitted: dict) -> sealed.SealedLevels:
    order = np.argsort(obs.position, kind="stable")
    positions, first = np.unique(obs.position[order], return_index=True)
    logs = np.asarray([fitted["node"][n] for n in obs.node[order][first].tolist()], dtype=float)
    return sealed.SealedLevels(positions, logs, {obs.cpu_names[c]: v for c, v in fitted["cpu"].items()})


def _held(part: sealed.SealedLevels, obs, node_of: np.ndarray | None) -> dict:
    """What a benchmark's newer runs are fitted around: its sealed nodes' levels and CPU models' shifts."""
    assert node_of is not None  # `fit` makes it wherever there is a sealed part
    held_nodes = node_of[part.positions]
    shared = np.isin(held_nodes, obs.node)
    return {
        "node": dict(zip(held_nodes[shared].tolist(), part.log_levels[shared].tolist())),
        "cpu": {k: part.cpu[name] for k, name in enumerate(obs.cpu_names) if name in part.cpu},
    }


def _around(
    part: sealed.SealedLevels, obs, node_of: np.ndarray | None, fitted: dict | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, nodes and log levels of a benchmark with a sealed part: the newer runs (`obs`, if
    any) as `fitted` around the sealed levels (`_held`)."""
    assert node_of is not None  # `fit` makes it wherever there is a sealed part
    positions, logs = part.positions, part.log_levels
    if obs is not None:
        # The newer runs' positions the sealed part lacks (`positions` ascending: a search, not a set difference
        # of 10,000 positions a benchmark).
        measured = np.unique(obs.position)
        new = measured[~_among(measured, positions)]
        assert fitted is not None  # `fit` fits every benchmark with newer runs
        positions = np.concatenate([positions, new])
        logs = np.concatenate([logs, [fitted["node"][n] for n in node_of[new].tolist()]])
        order = np.argsort(positions, kind="stable")
        positions, logs = positions[order], logs[order]
    return positions, node_of[positions], logs


def _among(values: np.ndarray, ascending: np.ndarray) -> np.ndarray:
    """Which of `values` are in the ascending array."""
    if not len(ascending):
        return np.zeros(len(values), dtype=bool)
    return ascending[np.minimum(np.searchsorted(ascending, values), len(ascending) - 1)] == values
