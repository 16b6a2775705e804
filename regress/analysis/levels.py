"""A benchmark's history with the shift of every run taken out.

Each push job is its own run, often on another hosted runner: a run's
levels all sit a few percent (another CPU model: 10-30%) above or below the
next run's, benchmark by benchmark. A history that strings together one
level per commit from different runs reads each such shift as a step. But
runs overlap: a paired push measures the commit before it again, so its two
commits tie its shift to the previous run's; commits of identical code tie
the runs that measured them; a range run ties all its commits. On the log
scale a commit's level in a run is

    y[commit, run] = level[code of the commit] + shift[run] + noise,

and the levels and shifts are estimated together, robustly (alternating
medians, the shifts of each connected group of runs centred on zero).
Commits linked to no other run keep their own level, as before runs were
recorded. The level of a push against its parent is then exactly the paired
difference of its own run, and a slower runner or a change of CPU model
moves no level by itself. Pure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from regress.analysis import stats
from regress.core.records import BenchmarkId, CommitResult

# Alternating-median sweeps; the estimate settles in a few on chains of pushes.
SWEEPS = 30


@dataclass(frozen=True)
class Observation:
    position: int  # in the history list
    node: str  # code identity (or sha): commits of one node share a level
    run: str
    log_level: float  # log of the run's fastest round at that commit
    rounds: int


def observations(history: list[CommitResult], code: dict[str, str], keep=None) -> dict[BenchmarkId, list[Observation]]:
    """Per benchmark, one observation per (commit, run) that measured it.

    `keep(position, result, values)`: whether that run's rounds are trusted
    (changepoints leaves out unsettled rounds and a slow machine's)."""
    out: dict[BenchmarkId, list[Observation]] = defaultdict(list)
    for i, commit in enumerate(history):
        node = code.get(commit.commit.sha) or commit.commit.sha
        for r in commit.results:
            if not r.ok:
                continue
            per_run: dict[str, list[float]] = defaultdict(list)
            for s in r.samples:
                per_run[s.run].append(stats.round_value(s))
            for run, values in per_run.items():
                if keep is not None and not keep(i, commit, run, values):
                    continue
                out[r.id].append(Observation(i, node, run or f"-{i}", math.log(min(values)), len(values)))
    return dict(out)


def _groups(obs: list[Observation]) -> list[list[int]]:
    """Indices of observations, grouped by the connected runs-and-nodes they belong to."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for o in obs:
        a, b = find("n:" + o.node), find("r:" + o.run)
        if a != b:
            parent[a] = b
    groups: dict[str, list[int]] = defaultdict(list)
    for k, o in enumerate(obs):
        groups[find("r:" + o.run)].append(k)
    return list(groups.values())


def fit(obs: list[Observation]) -> tuple[dict[str, float], dict[str, float]]:
    """(log level per node, log shift per run), estimated together."""
    levels: dict[str, float] = {}
    shifts: dict[str, float] = {}
    for group in _groups(obs):
        mine = [obs[k] for k in group]
        runs = sorted({o.run for o in mine})
        nodes = sorted({o.node for o in mine})
        if len(runs) == 1:
            shifts[runs[0]] = 0.0
            for node in nodes:
                levels[node] = float(np.median([o.log_level for o in mine if o.node == node]))
            continue
        s = dict.fromkeys(runs, 0.0)
        by_node: dict[str, list[Observation]] = defaultdict(list)
        by_run: dict[str, list[Observation]] = defaultdict(list)
        for o in mine:
            by_node[o.node].append(o)
            by_run[o.run].append(o)
        mu: dict[str, float] = {}
        for _ in range(SWEEPS):
            mu = {n: float(np.median([o.log_level - s[o.run] for o in by_node[n]])) for n in nodes}
            new = {r: float(np.median([o.log_level - mu[o.node] for o in by_run[r]])) for r in runs}
            centre = float(np.median(list(new.values())))
            new = {r: v - centre for r, v in new.items()}
            moved = max(abs(new[r] - s[r]) for r in runs)
            s = new
            if moved < 1e-9:
                break
        mu = {n: float(np.median([o.log_level - s[o.run] for o in by_node[n]])) for n in nodes}
        levels.update(mu)
        shifts.update(s)
    return levels, shifts


def adjusted(
    history: list[CommitResult], code: dict[str, str] | None = None, keep=None
) -> dict[BenchmarkId, dict[int, float]]:
    """Per benchmark: history position -> its level (seconds) with every run's shift taken out."""
    out: dict[BenchmarkId, dict[int, float]] = {}
    for bid, obs in observations(history, code or {}, keep).items():
        levels, _ = fit(obs)
        out[bid] = {o.position: math.exp(levels[o.node]) for o in obs}
    return out


def nodes_of(history: list[CommitResult], code: dict[str, str] | None = None) -> list[str]:
    """Each history position's code identity (its sha when unknown)."""
    code = code or {}
    return [code.get(c.commit.sha) or c.commit.sha for c in history]
