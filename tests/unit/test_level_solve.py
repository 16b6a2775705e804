"""The level fit's least squares (analysis/level_solve.py): the dense and the sparse solve give the
weighted, pulled least-squares answer, and a small site-build-sized fit never imports scipy.sparse."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from regress.analysis import level_solve


def _system(seed: int):
    """A fit's shape: each observation one node, one run and one CPU model column."""
    rng = np.random.default_rng(seed)
    nodes, runs, models, m = 40, 25, 3, 120
    rows = np.repeat(np.arange(m), 3)
    cols = np.column_stack(
        [
            np.r_[np.arange(nodes), rng.integers(0, nodes, m - nodes)],
            nodes + rng.integers(0, runs, m),
            nodes + runs + rng.integers(0, models, m),
        ]
    ).ravel()
    size = nodes + runs + models
    pull = np.r_[np.zeros(nodes), np.full(runs, 0.1), np.full(models, 1e-6)]
    return rows, cols, (m, size), rng.uniform(0.2, 1.0, m), rng.normal(0, 0.05, m), pull, nodes


@pytest.mark.parametrize("dense_cells", [level_solve.DENSE_CELLS, 0])
def test_the_dense_and_the_sparse_solve_give_the_pulled_weighted_least_squares(monkeypatch, dense_cells):
    monkeypatch.setattr(level_solve, "DENSE_CELLS", dense_cells)
    rows, cols, shape, w, y, pull, k = _system(3)
    design = level_solve.Design(rows, cols, shape)
    assert design.dense == bool(dense_cells)
    x = design.solve(w, y, pull, k)
    # The same minimum from its definition: stack sqrt(w) a over sqrt(pull) I and solve by lstsq.
    a = np.zeros(shape)
    a[rows, cols] = 1.0
    stacked = np.vstack([np.sqrt(w)[:, None] * a, np.diag(np.sqrt(pull))])
    expected = np.linalg.lstsq(stacked, np.r_[np.sqrt(w) * y, np.zeros(shape[1])], rcond=None)[0]
    np.testing.assert_allclose(x, expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(design.residuals(y, x), np.abs(y - a @ expected), atol=1e-9)


def test_a_small_fit_does_not_import_scipy_sparse():
    code = (
        "import sys, numpy as np\n"
        "from regress.analysis import levels\n"
        "obs = levels.Observations(np.arange(6), np.arange(6) // 2, np.arange(6) % 2, np.zeros(6, dtype=int),"
        " np.log(np.linspace(1.0, 1.1, 6)), ('cpu',))\n"
        "fitted = levels.fit_many([(obs, None)])\n"
        "assert len(fitted[0]['node']) == 3, fitted\n"
        "print('scipy.sparse' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
