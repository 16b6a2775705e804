"""The statistics are a function of the history alone: its length draws no line through them.

A history of 999 commits and the same history with two more commits at the
same level (1,001: past any round number a cache might have cut at) give the
same change points, each measured by paired pushes as the workflow makes them.
"""

from __future__ import annotations

import factories
import numpy as np

from regress.analysis import changepoints, levels


def _levels(n: int) -> list[float]:
    rng = np.random.default_rng(7)
    base = np.full(n, 1e-4)
    base[300:] *= 1.25  # a regression at 300
    base[640:] *= 0.8  # an improvement at 640
    base[880:] *= 1.1  # a small regression at 880
    return (base * np.exp(rng.normal(0, 0.004, n))).tolist()


def _history(n: int):
    levels = _levels(1001)[:n]
    shifts = np.exp(np.random.default_rng(3).normal(0, 0.03, 1001))[:n].tolist()
    return factories.pushes(levels, shifts, rounds=5, seed=11)


def test_999_and_1001_commits_give_the_same_steps():
    short, long = _history(999), _history(1001)
    assert [c.commit.sha for c in long[:999]] == [c.commit.sha for c in short]
    found_short = changepoints.find_steps(short, threshold=0.05)
    found_long = changepoints.find_steps(long, threshold=0.05)
    assert [(s.sha, s.direction, s.end_sha) for s in found_short] == [
        (s.sha, s.direction, s.end_sha) for s in found_long
    ]
    assert [s.index for s in found_long] == [300, 640, 880]
    for a, b in zip(found_short, found_long):
        assert abs(a.ratio / b.ratio - 1) < 1e-3


def test_levels_of_the_older_commits_do_not_depend_on_the_length_cut():
    """The trusted levels of the first 999 commits, fitted with two more pushes, stay where they were
    but for the last few (the new pushes' runs tie into them)."""
    short = levels.trusted(_history(999))
    long = levels.trusted(_history(1001))
    ((positions_short, levels_short),) = short.values()
    ((positions_long, levels_long),) = long.values()
    assert positions_long[:999] == positions_short
    drift = np.abs(np.log(np.asarray(levels_long[:990]) / np.asarray(levels_short[:990])))
    assert float(drift.max()) < 1e-3


def test_a_push_leaves_the_levels_of_older_commits_as_they_were_to_the_bit():
    """A new push refits the newest few dozen levels; every older one is what it was, exactly (the
    fit's Huber scale is read from the calibration span, not from every residual: docs/statistics.md)."""
    ((positions_short, levels_short),) = levels.trusted(_history(999)).values()
    ((positions_long, levels_long),) = levels.trusted(_history(1000)).values()
    assert positions_long[:999] == positions_short
    assert levels_long[: 999 - 60] == levels_short[: 999 - 60]
    assert levels_long[998] != levels_short[998]  # the push measured it again: its level moved
