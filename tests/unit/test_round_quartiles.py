"""The quartiles of rounds and of blocks within a round: numpy's percentile to the bit, without its per-call cost."""

from __future__ import annotations

import random

import numpy as np

from regress.analysis import stats
from regress.core import blocks


def test_quartiles_match_numpy_percentile_exactly():
    rng = random.Random(18)
    for _ in range(3000):
        n = rng.randrange(4, 80)
        times = [rng.lognormvariate(-10, 0.3) for _ in range(n)]
        if rng.random() < 0.3:  # timer readings repeat: ties
            times = [round(t, 8) for t in times]
        expected = tuple(float(v) for v in np.percentile(times, [25, 50, 75]))
        assert blocks.quartiles(sorted(times)) == expected


def test_round_spreads_match_numpy_percentile_exactly():
    # A benchmark's rounds (2 and up, ties and all): the IQR compare stores and prints.
    rng = random.Random(19)
    for _ in range(3000):
        n = rng.randrange(2, 40)
        values = [rng.lognormvariate(-9, 0.2) for _ in range(n)]
        if rng.random() < 0.3:
            values = [round(v, 7) for v in values]
        q1, q3 = np.percentile(values, [25, 75])
        assert stats.spread(values) == (float(q1), float(q3))
        assert stats.spread(tuple(values)) == stats.spread(np.asarray(values))
    assert stats.spread([1.0]) is None
