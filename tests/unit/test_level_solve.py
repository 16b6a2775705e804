"""The level fit's least squares (analysis/levels.py): the batched dense and the sparse solve give
the weighted, pulled least-squares answer, and a small site-build-sized fit never imports scipy.sparse."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from regress.analysis import levels


def _block(rng, nodes: int, runs: int, models: int, m: int):
    """One benchmark's shape: each observation one node, one run and one CPU model column (local)."""
    rows = np.repeat(np.arange(m), 3)
    cols = np.column_stack(
        [
            np.r_[np.arange(nodes), rng.integers(0, nodes, m - nodes)],
            nodes + rng.integers(0, runs, m),
            nodes + runs + rng.integers(0, models, m),
        ]
    ).ravel()
    pull = np.r_[np.zeros(nodes), np.full(runs, 0.1), np.full(models, 1e-6)]
    return rows, cols, pull, nodes


def _system(seed: int):
    """Three benchmarks of unequal sizes, laid out as `levels.fit_many` does: every block's nodes
    first, then every block's runs and models."""
    rng = np.random.default_rng(seed)
    blocks = [_block(rng, *shape) for shape in [(40, 25, 3, 120), (3, 2, 1, 5), (12, 6, 2, 30)]]
    k = sum(b[3] for b in blocks)
    rows, cols, counts, block_cols, node_pulls, rest_pulls = [], [], [], [], [], []
    start = node_start = 0
    rest_start = k
    for r, c, pull, nodes in blocks:
        rest = len(pull) - nodes
        local = np.r_[np.arange(node_start, node_start + nodes), np.arange(rest_start, rest_start + rest)]
        rows.append(start + r)
        cols.append(local[c])
        counts.append(int(r.max()) + 1)
        block_cols.append(local)
        node_pulls.append(pull[:nodes])
        rest_pulls.append(pull[nodes:])
        start, node_start, rest_start = start + counts[-1], node_start + nodes, rest_start + rest
    m = start
    shape = (m, rest_start)
    pull = np.concatenate(node_pulls + rest_pulls)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return rows, cols, shape, counts, block_cols, rng.uniform(0.2, 1.0, m), rng.normal(0, 0.05, m), pull, k


@pytest.mark.parametrize("dense_cells", [levels.DENSE_CELLS, 0])
def test_the_batched_and_the_sparse_solve_give_the_pulled_weighted_least_squares(monkeypatch, dense_cells):
    monkeypatch.setattr(levels, "DENSE_CELLS", dense_cells)
    rows, cols, shape, counts, block_cols, w, y, pull, k = _system(3)
    design = levels.Design(rows, cols, shape, counts, block_cols)
    assert design.dense == bool(dense_cells)
    x = design.solve(w, y, pull, k)
    # The same minimum from its definition: stack sqrt(w) a over sqrt(pull) I and solve by lstsq.
    a = np.zeros(shape)
    a[rows, cols] = 1.0
    stacked = np.vstack([np.sqrt(w)[:, None] * a, np.diag(np.sqrt(pull))])
    expected = np.linalg.lstsq(stacked, np.r_[np.sqrt(w) * y, np.zeros(shape[1])], rcond=None)[0]
    np.testing.assert_allclose(x, expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(design.residuals(y, x), np.abs(y - a @ expected), atol=1e-9)


def test_a_row_with_another_blocks_column_is_refused():
    rows, cols, shape, counts, block_cols, *_ = _system(4)
    cols = cols.copy()
    cols[0] = block_cols[1][0]  # the first block's first row given a column of the second
    with pytest.raises(ValueError, match="another block"):
        levels.Design(rows, cols, shape, counts, block_cols)


def test_a_small_fit_does_not_import_scipy_sparse():
    code = (
        "import sys, numpy as np\n"
        "from regress.analysis import levels\n"
        "obs = levels.Observations(np.arange(6), np.arange(6) // 2, np.arange(6) % 2, np.zeros(6, dtype=int),"
        " np.log(np.linspace(1.0, 1.1, 6)))\n"
        "fitted = levels.fit_many([obs, obs])\n"
        "assert len(fitted[0][0]) == 3 and all(np.array_equal(a, b) for a, b in zip(*fitted)), fitted\n"
        "print('scipy.sparse' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_separate_runs_closed_form_is_the_fit():
    """A benchmark whose every run measured one commit (several runs of each, outliers among them): the
    closed form (`levels.separate`) gives the levels the fit of the whole design gives."""
    import numpy as np

    from regress.analysis import levels

    rng = np.random.default_rng(4)
    for n_nodes, outliers in ((40, 0), (300, 9)):
        node = np.repeat(np.arange(n_nodes), 3)
        run = np.arange(len(node))[rng.permutation(len(node))]  # each observation its own run, any order
        y = np.log(1e-4) + 0.01 * rng.standard_normal(len(node)) + np.repeat(0.05 * rng.standard_normal(n_nodes), 3)
        y[rng.choice(len(y), outliers, replace=False)] += 0.4
        obs = levels.Observations(node, node, run, np.zeros(len(node), dtype=np.int64), y)
        codes, closed = levels.separate(obs)
        ((fitted_codes, fitted),) = levels.fit_many([obs])
        assert np.array_equal(codes, fitted_codes) and np.allclose(closed, fitted, rtol=0, atol=1e-9)
    shared = levels.Observations(
        node, node, np.zeros(len(node), dtype=np.int64), np.zeros(len(node), dtype=np.int64), y
    )
    assert levels.separate(shared) is None  # one run measured every commit: the fit ties them
