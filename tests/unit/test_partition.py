"""The pruned optimal partition (`analysis/changepoints.py`'s `search`) against the unpruned programme and ruptures."""

from __future__ import annotations

import numpy as np
import ruptures

from regress.analysis.changepoints import search


def _cost(x: np.ndarray, cuts: list[int], penalty: float) -> float:
    bounds = [0, *cuts, len(x)]
    return sum(float(((x[a:b] - x[a:b].mean()) ** 2).sum()) for a, b in zip(bounds, bounds[1:])) + penalty * len(cuts)


def _unpruned(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    """Every start for every point: the textbook programme, quadratic and plainly right."""
    n = len(x)
    s1, s2 = np.r_[0.0, np.cumsum(x)], np.r_[0.0, np.cumsum(x * x)]
    best, back = np.full(n + 1, np.inf), np.zeros(n + 1, dtype=int)
    best[0] = -penalty
    for t in range(min_size, n + 1):
        tau = np.arange(0, t - min_size + 1)
        total = best[tau] + (s2[t] - s2[tau]) - (s1[t] - s1[tau]) ** 2 / (t - tau) + penalty
        back[t], best[t] = tau[np.argmin(total)], total.min()
    cuts, t = [], n
    while t > 0:
        t = back[t]
        if t > 0:
            cuts.append(int(t))
    return cuts[::-1]


def _history(rng, n: int) -> np.ndarray:
    """Noise in noise units, a few steps, now and then outliers."""
    x = rng.normal(size=n)
    if n == 0:
        return x
    for _ in range(int(rng.integers(0, 6))):
        x[int(rng.integers(0, n)) :] += rng.choice([-8, -3, -1, 1, 3, 8])
    if rng.random() < 0.3:
        x[rng.integers(0, n, size=max(1, n // 15))] += 10
    return x


def test_the_pruned_partition_is_the_unpruned_programmes_optimum():
    rng = np.random.default_rng(7)
    series = [_history(rng, int(rng.integers(1, 400))) for _ in range(120)]
    for penalty in (5.0, 20.0, 60.0):
        for min_size in (1, 2, 3):
            found = search(series, penalty, min_size)[0]
            for x, cuts in zip(series, found):
                expected = _unpruned(x, penalty, min_size) if len(x) >= min_size else []
                assert cuts == expected, (len(x), penalty, min_size)
                if len(x) >= min_size:
                    assert all(b - a >= min_size for a, b in zip([0, *cuts], [*cuts, len(x)]))


def test_series_of_every_length_together_are_each_as_alone():
    rng = np.random.default_rng(3)
    series = [_history(rng, n) for n in (0, 1, 2, 3, 5, 50, 700, 2)]
    together = search(series, 20.0)[0]
    assert together == [search([x], 20.0)[0][0] for x in series]
    assert together[:4] == [[], [], [], []]


def test_it_agrees_with_ruptures_kernelcpd_and_is_never_worse():
    """The search it replaced: the same cuts on ordinary histories; where the two differ, ruptures'
    partition costs more (its pruning with a minimum segment length can drop the optimum)."""
    rng = np.random.default_rng(11)
    same = 0
    for _ in range(150):
        x = _history(rng, int(rng.integers(4, 300)))
        ours = search([x], 20.0)[0][0]
        theirs = [
            int(b) for b in ruptures.KernelCPD(kernel="linear", min_size=2).fit(x.reshape(-1, 1)).predict(pen=20.0)
        ][:-1]
        same += ours == theirs
        assert _cost(x, ours, 20.0) <= _cost(x, theirs, 20.0) + 1e-9
    assert same >= 140, same
