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

and the levels and shifts are estimated together, robustly (`fit`).
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
from scipy import sparse
from scipy.sparse.linalg import spsolve

from regress.analysis.table import as_table
from regress.core.records import BenchmarkId

# A run's shift is its CPU model's plus its own. The CPU model's is free (a
# faint pull toward zero only fixes each group's offset); the run's own is
# pulled toward zero with this weight against a measurement's: about
# (1% per measurement / 3% between runners of one model)^2. Without it a
# chain of pushes is a random walk of their paired differences.
RIDGE = 1e-6
RUN_PRIOR = 0.1
# Reweighted solves, Huber's constant (in units of the residuals' scaled MAD), and
# the smallest residual scale (log units) below which nothing is down-weighted.
REWEIGHTS = 3
HUBER = 2.0
MIN_SCALE = 0.002


@dataclass(frozen=True)
class Observation:
    position: int  # in the history list
    node: str  # code identity (or sha): commits of one node share a level
    run: str
    log_level: float  # log of the run's fastest round at that commit
    rounds: int
    cpu: str = ""  # the CPU model of the run's machine (its fingerprint)


def observations(history, code: dict[str, str], keep=None) -> dict[BenchmarkId, list[Observation]]:
    """Per benchmark, one observation per (commit, run) that measured it.

    `history`: a list of results or their `Table`. `keep(table)`: a mask over
    the table's run rows, which of them are trusted (changepoints leaves out
    unsettled rounds and a slow machine's)."""
    t = as_table(history)
    out: dict[BenchmarkId, list[Observation]] = defaultdict(list)
    nodes = [code.get(c.commit.sha) or c.commit.sha for c in t.history]
    cpus = [
        ({r.id: r.fingerprint.cpu for r in c.runs if r.fingerprint is not None}, c.fingerprint.cpu) for c in t.history
    ]
    rows = np.flatnonzero(keep(t)) if keep is not None else np.arange(len(t.run_pos))
    logs = [math.log(v) for v in t.low[0, rows].tolist()]
    names = t.run_names
    for i, b, run, n, log_level in zip(
        t.run_pos[rows].tolist(), t.run_bench[rows].tolist(), t.run[rows].tolist(), t.run_n[rows].tolist(), logs
    ):
        name = names[run]
        by_run, default_cpu = cpus[i]
        model = by_run.get(name) or default_cpu
        out[t.ids[b]].append(Observation(i, nodes[i], name or f"-{i}", log_level, n, model))
    return dict(out)


def fit(obs: list[Observation]) -> tuple[dict[str, float], dict[str, float]]:
    """(log level per node, log shift per run), estimated together.

    Least squares on y = level[node] + model[cpu] + own[run], solved directly
    (a sparse system: a chain of a thousand pushes is one solve), the run's
    own shift weakly pulled toward zero (RUN_PRIOR) and the CPU model's only
    faintly (its offset). Runs on one CPU model are then comparable up to a
    few percent, so levels measured by different pushes on one model hold
    each other in place, while a change of model moves nothing. Then a few
    reweighted solves (Huber) so that one odd measurement pulls less.
    """
    nodes = sorted({o.node for o in obs})
    run_ids = sorted({o.run for o in obs})
    models = sorted({o.cpu for o in obs})
    ni = {n: k for k, n in enumerate(nodes)}
    ri = {r: len(nodes) + k for k, r in enumerate(run_ids)}
    mi = {m: len(nodes) + len(run_ids) + k for k, m in enumerate(models)}
    m, size = len(obs), len(nodes) + len(run_ids) + len(models)
    rows = np.repeat(np.arange(m), 3)
    cols = np.asarray([c for o in obs for c in (ni[o.node], ri[o.run], mi[o.cpu])])
    a = sparse.csr_matrix((np.ones(3 * m), (rows, cols)), shape=(m, size))
    y = np.asarray([o.log_level for o in obs])
    pull = sparse.diags(np.r_[np.zeros(len(nodes)), np.full(len(run_ids), RUN_PRIOR), np.full(len(models), RIDGE)])
    w = np.ones(m)
    x = np.zeros(size)
    for _ in range(REWEIGHTS):
        aw = a.multiply(w[:, None]).tocsr()
        x = spsolve((a.T @ aw + pull).tocsc(), aw.T @ y)
        resid = np.abs(y - a @ x)
        scale = max(1.4826 * float(np.median(resid)), MIN_SCALE)
        if float(resid.max()) <= HUBER * scale:
            break  # nothing to down-weight
        w = np.minimum(1.0, HUBER * scale / np.maximum(resid, 1e-300))
    model_of = {o.run: o.cpu for o in obs}
    shifts = {r: float(x[ri[r]] + x[mi[model_of[r]]]) for r in run_ids}
    return {n: float(x[ni[n]]) for n in nodes}, shifts


def adjusted(history, code: dict[str, str] | None = None, keep=None) -> dict[BenchmarkId, dict[int, float]]:
    """Per benchmark: history position -> its level (seconds) with every run's shift taken out."""
    out: dict[BenchmarkId, dict[int, float]] = {}
    for bid, obs in observations(history, code or {}, keep).items():
        levels, _ = fit(obs)
        out[bid] = {o.position: math.exp(levels[o.node]) for o in obs}
    return out
