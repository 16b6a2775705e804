"""The level fit's weighted least squares (`levels.fit_many`): small blocks batched dense, big ones sparse.

A batch's design is block diagonal, a block a benchmark. Batches of small
blocks are solved by one batched dense solve, others by one sparse solve;
both solve the same normal equations. Pure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Batches whose padded blocks (blocks x most rows x most columns) have at most this many cells are solved dense.
DENSE_CELLS = 2_000_000


class Design:
    """The 0/1 design matrix of observations (rows) by free columns: each (row, column) given once.

    `counts`: each block's number of rows (its rows follow the previous block's), `block_cols`: each
    block's columns; no column is in two blocks, and no row has a column of another block."""

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
    """x with m x = b (sparse, symmetric positive definite). The nodes are eliminated (their Schur
    complement over the runs and CPU models) and the rest factored symmetrically, without pivoting
    (partial pivoting's row swaps fill the factor in)."""
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
