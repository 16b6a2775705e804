"""torch's summary of one measurement's block times, in bulk with numpy (no torch).

`summarize_times` gives, for rows of per-run times, the quartiles and
torch's significant-figure estimate that `Measurement` gives. In core because
both the report (200,000 cells at a time) and the results summary
(`storage/summary.py`, when a file is saved) compute it; `report/data_files.py`
says more about mirroring torch in float32.
"""

from __future__ import annotations

import numpy as np

MAX_SIGNIFICANT_FIGURES = 4
MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
# torch's Measurement warns above these IQR/median ratios of one round's blocks.
IQR_WARN = 0.10
IQR_GROSS_WARN = 0.25


def log10_f32(x) -> np.ndarray:
    """torch.tensor(x).log10(): float32 in, float32 out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)).astype(np.float32)


def summarize_times(times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Quartiles and torch's significant figures for rows of per-run times (all rows one length).

    q1 and q3 as `statistics.quantiles(n=4, method="inclusive")`, the median
    as `statistics.median`: what `BenchmarkResult.quartiles`/`median` give.
    """
    times = np.sort(times, axis=1)
    n = times.shape[1]
    if n < 2:
        one = times[:, 0]
        q1 = median = q3 = one
    else:
        m = n - 1
        q = []
        for i in (1, 3):
            j, delta = divmod(i * m, 4)
            q.append((times[:, j] * (4 - delta) + times[:, j + 1] * delta) / 4)
        q1, q3 = q
        half = n // 2
        median = times[:, half] if n % 2 else (times[:, half - 1] + times[:, half]) / 2
    # Measurement.significant_figures: spread of the interquartile points, in float32.
    upper = int(np.ceil(np.float32(3 * n / 4)))
    points = times[:, n // 4 : upper].astype(np.float32).astype(np.float64)
    std = points.std(axis=1).astype(np.float32).astype(np.float64)
    sqrt_k = float(np.float32(np.sqrt(points.shape[1])))
    ci = np.maximum(1.645 * std / sqrt_k, MIN_CONFIDENCE_INTERVAL)
    figures = np.floor(log10_f32(median / ci)).astype(np.int64)
    return q1, median, q3, np.clip(figures, 1, MAX_SIGNIFICANT_FIGURES)


def quartiles(ordered) -> tuple[float, float, float]:
    """np.percentile(values, [25, 50, 75]) of sorted values to the bit (its linear rule), without its
    per-call overhead: a site judges thousands of rounds, a compare 600 sides' spreads."""
    out = []
    top = len(ordered) - 1
    for q in (0.25, 0.5, 0.75):
        h = top * q
        lo = int(h)
        t = h - lo
        a, b = ordered[lo], ordered[min(lo + 1, top)]
        d = b - a
        out.append(b - d * (1 - t) if t >= 0.5 else a + d * t)
    return out[0], out[1], out[2]


def round_iqr(times) -> float:
    """IQR/median of one round's per-run times (0 below 4 blocks): what torch's Measurement warns about."""
    if len(times) < 4:
        return 0.0
    q1, q2, q3 = quartiles(sorted(times))
    return (q3 - q1) / q2 if q2 > 0 else 0.0


def worst_round_iqr(samples) -> float:
    """The worst `round_iqr` of the rounds."""
    return max((round_iqr(s.times) for s in samples), default=0.0)
