"""The level fit's weighted least squares (`levels.fit_many`), dense or sparse by its size.

A whole history's fit is one long chain of runs: a sparse system of
thousands of columns, solved through scipy.sparse. A site build after one new
commit fits only the runs past the sealed prefix (`analysis/sealed_fit.py`):
a few hundred columns, which a dense solve does in milliseconds, while
importing scipy.sparse for them cost a quarter of a second of that build.
Both solve the same normal equations. Pure.
"""

from __future__ import annotations

import numpy as np

# Design matrices of at most this many cells (8 bytes each) are solved dense.
DENSE_CELLS = 2_000_000


class Design:
    """The 0/1 design matrix of observations (rows) by free columns: each (row, column) given once."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> None:
        self.dense = shape[0] * shape[1] <= DENSE_CELLS
        if self.dense:
            self.a = np.zeros(shape)
            np.add.at(self.a, (rows, cols), 1.0)
        else:
            from scipy import sparse  # here: a small fit (the common one) never imports it

            self.a = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)

    def solve(self, w: np.ndarray, y: np.ndarray, pull: np.ndarray, k: int) -> np.ndarray:
        """x minimizing sum(w (y - a x)^2) + sum(pull x^2); its first k columns (the nodes: one per
        observation) are a diagonal block of the normal equations."""
        if self.dense:
            aw = self.a * w[:, None]
            m = self.a.T @ aw
            m[np.diag_indices_from(m)] += pull
            return np.linalg.solve(m, aw.T @ y)
        from scipy import sparse

        aw = self.a.multiply(w[:, None]).tocsr()
        return _schur((self.a.T @ aw + sparse.diags(pull)).tocsr(), aw.T @ y, k)

    def residuals(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.abs(y - self.a @ x)


def _schur(m, b: np.ndarray, k: int) -> np.ndarray:
    """x with m x = b (sparse, symmetric positive definite). The nodes are eliminated (their Schur
    complement over the runs and CPU models) and the rest factored symmetrically, without pivoting:
    SuperLU's default partial pivoting took 50-190 ms a solve once Huber's weights were in (its row
    swaps fill the factor in), this takes a few."""
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
