"""The one number the site shows for a benchmark at a commit, wherever it shows one.

The overview's benchmark list, its latest-commit tables, the label pages'
Compare tables and the trend charts all show the **level**: the fastest
round's fastest block per run, the statistic the verdicts beside them and
the change points are reached with (`stats.level`). A median in one place
and a level in the next read as a bug. Times are written to `FIGURES`
significant figures.
"""

from __future__ import annotations

import numpy as np

from regress.core.units import fmt_time

# Significant figures of a shown time (the chart's hover writes `.4s`, `fmt_time` 4 too).
FIGURES = 4


def values(track) -> np.ndarray:
    """A `data.Track`'s shown number per commit."""
    return track.level


def text(seconds: float | None) -> str:
    """One shown time as text, with its unit (3.653 ms)."""
    return fmt_time(seconds, "")
