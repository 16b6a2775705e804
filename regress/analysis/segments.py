"""The segmentation behind `changepoints`: the history's own noise scale, outliers clipped, change points placed."""

from __future__ import annotations

import math

import numpy as np

from regress.analysis import normal, partition

# Penalty per change point, in squared units of the history's noise.
PENALTY = 20.0
# Running-median window and clipping distance (noise units) that tame outliers.
WINDOW = 5
CLIP = 3.0
# Commits on a new level before it counts: 2, so one outlier is never a step.
MIN_SEGMENT = 2
# The noise scale never falls below this (log units), so a nearly constant
# history doesn't turn every wobble into a step.
MIN_NOISE = 0.002


def noise_scale(logs: np.ndarray) -> float:
    """Commit-to-commit noise: the scaled MAD of first differences over sqrt(2).

    Differences cancel the level, so the few real steps barely move it.
    """
    if len(logs) < 3:
        return MIN_NOISE
    d = np.diff(logs)
    # scipy.stats.median_abs_deviation(d, scale="normal"), in its own operations, without importing
    # scipy.stats (0.3-0.5 s, a sixth of an incremental site build).
    mad = float(np.median(np.abs(d - np.median(d)))) / normal.Z_75
    return max(mad / math.sqrt(2), MIN_NOISE)


def robust(logs: np.ndarray, scale: float) -> np.ndarray:
    """Clip each level to within CLIP noise units of its neighbours' running median.

    A wild commit is pulled back to the edge of the noise, so it weighs like
    an ordinary one; a real step moves the running median along with it
    once half the window is on the new level, so steps are left alone.
    """
    if len(logs) < 3:
        return logs
    local = running_median(logs)
    return np.clip(logs, local - CLIP * scale, local + CLIP * scale)


def running_median(logs: np.ndarray) -> np.ndarray:
    """The median of each level's WINDOW neighbours, mirrored at the ends (d c b | a b c d | c b a):
    scipy.ndimage.median_filter(size=WINDOW, mode="mirror"), without scipy.ndimage's import. A
    median of an odd count is one of the values, so it is scipy's to the bit."""
    half = WINDOW // 2
    padded = np.pad(np.asarray(logs, dtype=float), half, mode="reflect")
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, WINDOW), axis=1)


def breakpoints_of(series: list[tuple[np.ndarray, float]], *, penalty: float = PENALTY) -> list[list[int]]:
    """Per (clipped log levels, noise scale): the start of every segment after the first.

    Penalised least squares on the levels in noise units, centred on their
    median, every segment at least MIN_SEGMENT long: the exact optimal
    partition (`partition`), of every benchmark at once.
    """
    z = [np.asarray(c, dtype=float) / scale for c, scale in series]
    centred = [v - np.median(v) if len(v) else v for v in z]
    found = partition.cuts_of(centred, penalty, MIN_SEGMENT)
    return [cuts if len(v) >= 2 * MIN_SEGMENT else [] for cuts, v in zip(found, z)]
