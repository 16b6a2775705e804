"""torch's Compare number formatting (`trim_significant_figures()`), in bulk with numpy and in float32
as torch computes: torch/utils/benchmark/utils/common.py (`select_unit`, `trim_sigfig`) and compare.py
(`_Column`); the tests check it against torch digit for digit."""

from __future__ import annotations

import numpy as np

from regress.core.blocks import log10_f32 as _log10_f32

UNITS = ("ns", "us", "ms", "s")
UNIT_SCALE = np.array([1e-9, 1e-6, 1e-3, 1.0])
UNIT_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


def unit_index(t) -> np.ndarray:
    """Index into UNITS of torch's `select_unit(t)` (which says "s" below 1 ns, as torch does)."""
    k = np.floor_divide(_log10_f32(t).astype(np.float64), 3)
    return np.select([k == -3, k == -2, k == -1], [0, 1, 2], 3)


def select_unit(t: float) -> tuple[str, float]:
    i = int(unit_index(t))
    return UNITS[i], float(UNIT_SCALE[i])


def trim_sigfig(x, n) -> np.ndarray:
    """`x` rounded to `n` significant figures (x > 0), as float32 like torch's."""
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.ceil(_log10_f32(np.abs(x)).astype(np.float64))
    scale = np.power(10.0, magnitude - n)
    return (np.round((x / scale).astype(np.float32)) * scale.astype(np.float32)).astype(np.float32)


def format_tables(
    medians: np.ndarray, figures: np.ndarray | int, columns: np.ndarray
) -> tuple[list[str], list[list[str | None]]]:
    """Compare tables, one a row of `medians` (rows x cells, NaN where a cell has none). `figures`: each
    cell's significant figures, or one number for all; `columns`: each cell's column. Returns each row's
    unit (from its smallest median, "" if none) and its cells' texts, every cell of a column with the
    decimals of its least precise cell."""
    rows, _ncells = medians.shape
    if rows == 0:
        return [], []
    present = ~np.isnan(medians)
    smallest = np.where(present, medians, np.inf).min(axis=1)
    unit = unit_index(np.where(np.isfinite(smallest), smallest, 1.0))
    scaled = medians / UNIT_SCALE[unit][:, None]
    leading = np.ceil(_log10_f32(np.where(present, scaled, 1.0)).astype(np.float64)).astype(np.int64)
    want = np.where(present, np.maximum(figures - leading, 0), np.iinfo(np.int64).max)
    decimals = np.empty_like(want)
    for c in np.unique(columns):
        in_column = columns == c
        decimals[:, in_column] = want[:, in_column].min(axis=1, keepdims=True)
    values = trim_sigfig(np.where(present, scaled, 1.0), np.where(present, figures, 1))
    values_l, decimals_l, present_l = values.tolist(), decimals.tolist(), present.tolist()
    texts = [
        [f"{v:.{d}f}" if p else None for v, d, p in zip(vr, dr, pr)]
        for vr, dr, pr in zip(values_l, decimals_l, present_l)
    ]
    measured = present.any(axis=1).tolist()
    return [UNITS[u] if m else "" for u, m in zip(unit.tolist(), measured)], texts
