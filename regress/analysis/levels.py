"""A benchmark's history with the shift of every run taken out: on the log scale y[commit, run] =
level[code of the commit] + shift[run] + noise, levels and shifts estimated together, robustly (`fit_many`);
the trusted levels `changepoints` segments (`trusted`), and their noise scale (`history_scale`). Pure (docs/statistics.md, "Runs").
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from regress.analysis import stats
from regress.analysis.table import as_table
from regress.core.records import BenchmarkId

# A run's shift is its CPU model's (free: RIDGE only fixes the offset) plus its own, pulled toward zero with
# RUN_PRIOR against a measurement's weight.
RIDGE = 1e-6
RUN_PRIOR = 0.1
REWEIGHTS = 3  # reweighted solves
HUBER = 2.0  # Huber's constant, in units of the residuals' scaled MAD
MIN_SCALE = 0.002  # the residual scale (log units) below which nothing is down-weighted
DECIMALS = 9  # fitted log levels are stated to this many decimals: the fit's rounding error is left out
MIN_NOISE = 0.002  # the noise scale's floor (log units)
PENALTY = 20.0  # per change point (`changepoints.search`), in squared units of the history's noise
# The calibration span: a benchmark's noise scale, the search's centre and the level fit's Huber scale are read
# from its first this many levels (docs/statistics.md, "The calibration span").
CALIBRATION = 500


def history_scale(logs: np.ndarray) -> float:
    """A benchmark's commit-to-commit noise as the change points read it: the scaled MAD of its calibration span's
    first differences over sqrt(2)."""
    d = np.diff(np.asarray(logs)[:CALIBRATION])
    if len(d) < 2:
        return MIN_NOISE
    # scipy.stats.median_abs_deviation(d, scale="normal"), in its own operations.
    mad = float(np.median(np.abs(d - np.median(d)))) / stats.Z_75
    return max(mad / math.sqrt(2), MIN_NOISE)


@dataclass(frozen=True)
class Observations:
    """One benchmark's observations, one per (commit, run) that measured it (parallel arrays). node, run, cpu
    are codes in the order of their names (a node: a code identity, or the commit's sha; an unnamed run is
    its commit's own, "-{position}")."""

    position: np.ndarray  # in the history list
    node: np.ndarray
    run: np.ndarray
    cpu: np.ndarray  # the CPU model of the run's machine (its fingerprint)
    log_level: np.ndarray  # log of the run's fastest round at that commit

    def __len__(self) -> int:
        return len(self.position)

    def digest(self) -> str:
        """Of everything a fit reads: equal digests, equal fits."""
        h = hashlib.blake2b()
        for a in (self.position, self.node, self.run, self.cpu, self.log_level):
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(b"|")
        return h.hexdigest()


def _codes(names: list[str]) -> dict[str, int]:
    """Each name's code: its place among the names sorted."""
    return {n: k for k, n in enumerate(sorted(set(names)))}


def observed(table, code: dict[str, str], rows: np.ndarray, off: set[int]) -> dict[BenchmarkId, Observations]:
    """Per benchmark, its observations in the given run rows (a mask), less a lone run's at the positions `off`."""
    t = as_table(table)
    rows = np.flatnonzero(rows)
    if not len(rows):
        return {}
    nodes = [code.get(c.commit.sha) or c.commit.sha for c in t.history]
    node_code = _codes(nodes)
    node_of = np.asarray([node_code[n] for n in nodes], dtype=np.int64)
    pos = t.run_pos[rows].astype(np.int64)
    # A run's name and CPU model are its (position, run)'s: looked up once per pair.
    width = max(len(t.run_names), 1)
    pairs, which = stats.unique(pos * width + t.run[rows], inverse=True)
    at, of = (pairs // width).tolist(), (pairs % width).tolist()
    named = [t.run_names[r] for r in of]
    run_code = _codes(names := [n or f"-{i}" for n, i in zip(named, at)])
    # The CPU model of each (position, run name): the run's own machine's, else its commit's.
    cpus: dict[int, tuple[dict, str]] = {}
    for i in set(at):
        c = t.history[i]
        cpus[i] = ({r.id: r.fingerprint.cpu for r in c.runs if r.fingerprint is not None}, c.fingerprint.cpu)
    models = [cpus[i][0].get(n) or cpus[i][1] for n, i in zip(named, at)]
    cpu_code = _codes(models)
    run = np.asarray([run_code[n] for n in names], dtype=np.int64)[which]
    cpu = np.asarray([cpu_code[m] for m in models], dtype=np.int64)[which]
    y = np.log(t.low[0, rows])
    bench = t.run_bench[rows]
    order = np.argsort(bench, kind="stable")
    cuts = np.flatnonzero(np.diff(bench[order])) + 1
    out: dict[BenchmarkId, Observations] = {}
    for g in np.split(order, cuts):
        obs = Observations(pos[g], node_of[pos[g]], run[g], cpu[g], y[g])
        if off:  # a run of one node measured while the machine was off: left out
            nodes_of_run = np.unique(np.column_stack([obs.run, obs.node]), axis=0)[:, 0]
            runs, count = np.unique(nodes_of_run, return_counts=True)
            lone = np.isin(obs.run, runs[count == 1])
            keep = ~(np.isin(obs.position, list(off)) & lone)
            obs = Observations(*(a[keep] for a in (obs.position, obs.node, obs.run, obs.cpu, obs.log_level)))
        if len(obs):
            out[t.ids[int(bench[g[0]])]] = obs
    return out


@dataclass(frozen=True)
class _Part:
    """One benchmark's share of a batch: its rows, its codes and its columns."""

    rows: slice
    nodes: np.ndarray
    node_col: int  # its first node's column
    runs: int
    models: np.ndarray
    rest_col: int  # its first run's column among the runs and models
    calibration: np.ndarray  # its rows in the calibration span: what the Huber scale is read from


def in_calibration(position: np.ndarray) -> np.ndarray:
    """Which observations lie in the first CALIBRATION measured positions (Huber's scale's)."""
    if not len(position):
        return np.zeros(0, dtype=bool)
    seen = np.zeros(int(position.max()) + 1, dtype=bool)
    seen[position] = True
    measured = np.flatnonzero(seen)
    return position <= measured[min(CALIBRATION, len(measured)) - 1]


def fit_many(batch: list[Observations]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per benchmark of a batch (one system): its node codes (ascending) and their log levels, as `separate` gives
    them: least squares on y = level[node] + model[cpu] + own[run] (`Design`), reweighted (Huber)."""
    parts, ys, node_at, node_col, rest_at, rest_col, pulls, blocks = [], [], [], [], [], [], [], []
    free_nodes = free_rest = start = 0
    for obs in batch:
        nodes, node = np.unique(obs.node, return_inverse=True)
        runs, run = np.unique(obs.run, return_inverse=True)
        models, model = np.unique(obs.cpu, return_inverse=True)
        m = len(obs)
        rows = np.arange(start, start + m)
        ys.append(obs.log_level)
        node_at.append(rows)
        node_col.append(free_nodes + node)
        rest_at += [rows, rows]
        rest_col += [free_rest + run, free_rest + len(runs) + model]
        pulls += [np.full(len(runs), RUN_PRIOR), np.full(len(models), RIDGE)]
        calibration = in_calibration(obs.position)
        parts.append(_Part(slice(start, start + m), nodes, free_nodes, len(runs), models, free_rest, calibration))
        own = (len(nodes), len(runs) + len(models))
        blocks.append((np.arange(free_nodes, free_nodes + own[0]), np.arange(free_rest, free_rest + own[1])))
        free_nodes += own[0]
        free_rest += own[1]
        start += m
    size = free_nodes + free_rest
    y = np.concatenate(ys) if ys else np.zeros(0)
    rows = np.concatenate(node_at + rest_at) if parts else np.zeros(0, dtype=np.int64)
    cols = np.concatenate(node_col + [free_nodes + c for c in rest_col]) if parts else np.zeros(0, dtype=np.int64)
    counts = [part.rows.stop - part.rows.start for part in parts]
    a = Design(rows, cols, (start, size), counts, [np.r_[n, free_nodes + r] for n, r in blocks])
    pull = np.concatenate([np.zeros(free_nodes), *pulls]) if size else np.zeros(0)
    w = np.ones(start)
    solved = np.zeros(size)
    kept: list[np.ndarray | None] = [None] * len(parts)
    for step in range(REWEIGHTS):
        solved = a.solve(w, y, pull, free_nodes) if size else solved
        resid = a.residuals(y, solved)
        for g, part in enumerate(parts):
            if kept[g] is not None:
                continue
            mine = resid[part.rows]
            scale = max(1.4826 * float(np.median(mine[part.calibration])), MIN_SCALE)
            if float(mine.max()) <= HUBER * scale or step == REWEIGHTS - 1:
                kept[g] = solved  # nothing to down-weight (or the last solve): this one's answer
            else:
                w[part.rows] = np.minimum(1.0, HUBER * scale / np.maximum(mine, 1e-300))
        if all(k is not None for k in kept):
            break
    out = []
    for part, x in zip(parts, kept):
        assert x is not None  # the last reweighting keeps every part's answer
        at = free_nodes + part.rest_col + part.runs
        # RIDGE's optimum has the models' shifts summing to zero, which the solve's rounding misses.
        c = float(np.mean(x[at : at + len(part.models)]))
        out.append((part.nodes, x[part.node_col : part.node_col + len(part.nodes)] + c))
    return out


def points(
    table, code: dict[str, str], rows: np.ndarray, off: set[int]
) -> dict[BenchmarkId, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per benchmark measured in the given run rows: its positions (ascending), their nodes and the fitted
    log levels there (`fit_many`, or `separate`). `off`: positions whose lone runs are left out."""
    found = observed(table, code, rows, off)
    alone = {bid: levels for bid, obs in found.items() if (levels := separate(obs)) is not None}
    linked = {bid: obs.digest() for bid, obs in found.items() if bid not in alone}
    fresh = {bid: key for bid, key in linked.items() if key not in table.fits}
    table.fits.update(zip(fresh.values(), fit_many([found[bid] for bid in fresh])))
    fitted = {bid: table.fits[key] for bid, key in linked.items()}
    out = {}
    for bid, obs in found.items():
        p = obs.position  # in history order (run rows are)
        first = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        positions, nodes = p[first], obs.node[first]
        codes, level = fitted[bid] if bid in fitted else alone[bid]
        logs = level[np.searchsorted(codes, nodes)]
        out[bid] = (positions, nodes, np.round(logs, DECIMALS))
    return out


def separate(obs: Observations) -> tuple[np.ndarray, np.ndarray] | None:
    """`fit_many`'s node levels (codes ascending, log levels) in closed form where every run measured one node on
    one CPU model (runs' means pooled, each weighed W prior / (W + prior)); else None."""
    runs, run = stats.unique(obs.run, inverse=True)
    nodes, node = stats.unique(obs.node, inverse=True)
    run_node = np.full(len(runs), -1, dtype=np.int64)
    run_node[run] = node
    if len(stats.unique(obs.cpu)) > 1 or not np.array_equal(run_node[run], node):
        return None
    y, w = obs.log_level, np.ones(len(obs))
    calibration = in_calibration(obs.position)
    for _ in range(REWEIGHTS):
        weight = np.bincount(run, weights=w, minlength=len(runs))
        mean = np.bincount(run, weights=w * y, minlength=len(runs)) / weight
        pooled = weight * RUN_PRIOR / (weight + RUN_PRIOR)
        level = np.bincount(run_node, weights=pooled * mean, minlength=len(nodes)) / np.bincount(
            run_node, weights=pooled, minlength=len(nodes)
        )
        own = weight * (mean - level[run_node]) / (weight + RUN_PRIOR)
        resid = np.abs(y - level[node] - own[run])
        scale = max(1.4826 * float(np.median(resid[calibration])), MIN_SCALE)
        if float(resid.max()) <= HUBER * scale:
            break
        w = np.minimum(1.0, HUBER * scale / np.maximum(resid, 1e-300))
    return nodes, level


def chart(history, code: dict[str, str] | None = None) -> dict[BenchmarkId, tuple[np.ndarray, np.ndarray]]:
    """Per benchmark: its positions (ascending) and its level there (seconds), every run's shift taken out."""
    table = as_table(history)
    found = points(table, code or {}, np.ones(len(table.run_pos), dtype=bool), set())
    return {bid: (positions, np.exp(logs)) for bid, (positions, _, logs) in found.items()}


UNSETTLED = 0.20  # a run's level is left out when its second-fastest round sits this far above its fastest


def machine_outliers(history, *, threshold: float) -> set[int]:
    """Positions whose reference workload's floor is more than the threshold from the history's median one."""
    floors = {i: f for i, f in enumerate(as_table(history).reference.tolist()) if not math.isnan(f)}
    if len(floors) < 3:
        return set()
    typical = float(np.median(list(floors.values())))
    return {i for i, f in floors.items() if abs(math.log(f / typical)) > math.log1p(threshold)}


def trusted(
    history, *, threshold: float = 0.05, code: dict[str, str] | None = None
) -> dict[BenchmarkId, tuple[list[int], list[float]]]:
    """Per benchmark: the positions where it has a trustworthy level, and that level (`points`), less unsettled
    runs (UNSETTLED) and a lone run's commit while the machine was off (`machine_outliers`); identical code
    (`code`: sha -> digest) in a row is one point."""
    table = as_table(history)
    off = machine_outliers(table, threshold=threshold)
    trusted = ~((table.run_n >= stats.FEWEST_ROUNDS_TO_JUDGE) & _unsettled(table.low, table.run_n))
    out: dict[BenchmarkId, tuple[list[int], list[float]]] = {}
    for bid, (positions, nodes, logs) in points(table, code or {}, trusted, off).items():
        # One point per position, in history order; the same code as the point before: one level.
        keep_point = np.r_[True, nodes[1:] != nodes[:-1]]
        out[bid] = (positions[keep_point].tolist(), np.exp(logs[keep_point]).tolist())
    return out


def _unsettled(low: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per run row (its three fastest rounds, its round count): the second-fastest disagrees by UNSETTLED."""
    second = low[np.minimum(1, np.maximum(n - 1, 0)), np.arange(len(n))]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(second / low[0]) > math.log1p(UNSETTLED)


# -- the fit's weighted least squares: its design is block diagonal, a block a benchmark; batches of small
# blocks are solved by one batched dense solve, others by one sparse solve (the same normal equations).

# Batches whose padded blocks (blocks x most rows x most columns) have at most this many cells are solved dense.
DENSE_CELLS = 2_000_000


class Design:
    """The 0/1 design matrix of observations by free columns. `counts`: each block's rows, in order;
    `block_cols`: each block's columns."""

    def __init__(
        self,
        rows: np.ndarray,
        cols: np.ndarray,
        shape: tuple[int, int],
        counts: list[int],
        block_cols: list[np.ndarray],
    ) -> None:
        self.rows, self.cols, self.shape = rows, cols, shape
        g = len(counts)
        most_rows, most_cols = max(counts, default=0), max((len(c) for c in block_cols), default=0)
        self.dense = g * most_rows * max(most_cols, 1) <= DENSE_CELLS
        # Dense: each block's rows, stacked (g, most_rows, most_cols); else a scipy.sparse matrix (no stubs).
        self.a: Any
        if self.dense:
            sizes = np.asarray(counts, dtype=np.int64)
            self.row_block = np.repeat(np.arange(g), sizes)
            self.row_at = np.arange(shape[0]) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            self.col_block = np.zeros(shape[1], dtype=np.int64)
            self.col_at = np.zeros(shape[1], dtype=np.int64)
            for k, c in enumerate(block_cols):
                self.col_block[c], self.col_at[c] = k, np.arange(len(c))
            if (self.col_block[cols] != self.row_block[rows]).any():
                raise ValueError("a row has a column of another block")
            self.a = np.zeros((g, most_rows, most_cols))
            np.add.at(self.a, (self.row_block[rows], self.row_at[rows], self.col_at[cols]), 1.0)
        else:
            from scipy import sparse  # here: a small fit (the common one) never imports it

            self.a = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)

    def solve(self, w: np.ndarray, y: np.ndarray, pull: np.ndarray, k: int) -> np.ndarray:
        """x minimizing sum(w (y - a x)^2) + sum(pull x^2); its first k columns (the nodes: one per
        observation) are a diagonal block of the normal equations."""
        if self.dense:
            return self._batched(w, y, pull)
        from scipy import sparse

        aw = self.a.multiply(w[:, None]).tocsr()
        return _schur((self.a.T @ aw + sparse.diags(pull)).tocsr(), aw.T @ y, k)

    def _batched(self, w: np.ndarray, y: np.ndarray, pull: np.ndarray) -> np.ndarray:
        """Each block's normal equations, stacked and solved at once; a padding column is 1 x = 0."""
        g, most_rows, most_cols = self.a.shape
        wb, yb = np.zeros((g, most_rows)), np.zeros((g, most_rows))
        wb[self.row_block, self.row_at], yb[self.row_block, self.row_at] = w, y
        aw = self.a * wb[:, :, None]
        m = np.swapaxes(self.a, 1, 2) @ aw
        diagonal = np.ones((g, most_cols))
        diagonal[self.col_block, self.col_at] = pull
        m[:, np.arange(most_cols), np.arange(most_cols)] += diagonal
        x = np.linalg.solve(m, (np.swapaxes(aw, 1, 2) @ yb[:, :, None]))[:, :, 0]
        return x[self.col_block, self.col_at]

    def residuals(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.dense:
            return np.abs(y - np.bincount(self.rows, weights=x[self.cols], minlength=self.shape[0]))
        return np.abs(y - self.a @ x)


def _schur(m, b: np.ndarray, k: int) -> np.ndarray:
    """x with m x = b (sparse, symmetric positive definite): the nodes eliminated (a Schur complement), the
    rest factored symmetrically without pivoting (row swaps fill the factor in)."""
    from scipy import sparse
    from scipy.sparse.linalg import splu

    d = m.diagonal()[:k]
    tie = m[:k, k:]
    s = (m[k:, k:] - tie.T @ sparse.diags(1.0 / d) @ tie).tocsc()
    r = b[k:] - tie.T @ (b[:k] / d)
    rest = (
        splu(s, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True}).solve(r)
        if s.shape[0]
        else np.zeros(0)
    )
    return np.r_[(b[:k] - tie @ rest) / d, rest]
