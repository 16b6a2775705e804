"""judge's within-round quartiles: numpy's percentile to the bit, without its per-call cost."""

from __future__ import annotations

import random

import numpy as np

from regress.analysis import judge


def test_quartiles_match_numpy_percentile_exactly():
    rng = random.Random(18)
    for _ in range(3000):
        n = rng.randrange(4, 80)
        times = [rng.lognormvariate(-10, 0.3) for _ in range(n)]
        if rng.random() < 0.3:  # timer readings repeat: ties
            times = [round(t, 8) for t in times]
        expected = tuple(float(v) for v in np.percentile(times, [25, 50, 75]))
        assert judge._quartiles(sorted(times)) == expected
