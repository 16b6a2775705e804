"""What a benchmark can detect (analysis/detectable.py), on fabricated rounds of known spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from regress.analysis import detectable, judge, modes, stats


def rounds(rng, level: float, n: int, jitter: float, busy: float = 0.2) -> list[float]:
    """A floor with jitter, a share of rounds slowed 10-60% (a busy neighbour)."""
    v = level * np.exp(np.abs(rng.normal(0, jitter, n)))
    slowed = rng.random(n) < busy
    v[slowed] *= rng.uniform(1.1, 1.6, slowed.sum())
    return v.tolist()


@pytest.mark.parametrize("jitter", [0.003, 0.01, 0.03])
def test_a_change_of_the_stated_size_is_caught_and_no_change_is_not_called_one(jitter):
    rng = np.random.default_rng(7)
    noise = detectable.Noise.of([rounds(rng, 1.0, 10, jitter) for _ in range(20)])
    n = 10
    stated = math.expm1(noise.detectable(n, stats.DRIFT))
    trials = 300

    def called(change: float) -> float:
        kind = "regression" if change > 0 else "improvement"
        hits = 0
        for _ in range(trials):
            v = judge.decide(rounds(rng, 1.0, n, jitter), rounds(rng, 1.0 + change, n, jitter), threshold=stated)
            hits += v.kind == kind
        return hits / trials

    assert called(stated) >= 0.8  # the stated size is caught at least four times in five
    aa = sum(
        judge.decide(rounds(rng, 1.0, n, jitter), rounds(rng, 1.0, n, jitter), threshold=stated).kind
        in ("regression", "improvement")
        for _ in range(trials)
    )
    assert aa / trials <= 0.01  # and no change is called one at most once in a hundred
    # Noisier rounds can detect less, more rounds more.
    assert noise.detectable(5, stats.DRIFT) >= noise.detectable(15, stats.DRIFT)


def test_noisier_benchmarks_state_larger_changes_and_the_rounds_a_threshold_takes():
    rng = np.random.default_rng(1)
    calm = detectable.Noise.of([rounds(rng, 1.0, 10, 0.003, busy=0.0) for _ in range(10)])
    rough = detectable.Noise.of([rounds(rng, 1.0, 10, 0.04, busy=0.3) for _ in range(10)])
    assert calm.detectable(5, stats.DRIFT) < rough.detectable(5, stats.DRIFT)
    need = rough.rounds_for(0.05, stats.DRIFT)
    assert need is not None and rough.detectable(need, stats.DRIFT) <= math.log1p(0.05)
    assert rough.detectable(need - 1, stats.DRIFT) > math.log1p(0.05)
    # An allowance that alone exceeds the threshold: no number of rounds reaches it.
    assert calm.rounds_for(0.05, 0.05) is None


def test_a_machine_with_modes_needs_rounds_before_it_can_tell_a_small_change():
    rng = np.random.default_rng(2)
    groups = [
        list(np.where(rng.random(10) < 0.5, 1.7, 1.0) * np.exp(np.abs(rng.normal(0, 0.005, 10)))) for _ in range(4)
    ]
    noise = detectable.Noise.of(groups)
    # Five rounds can all land in the 1.7x mode: nothing under it can be told; fifteen can't, so 3% can.
    share = float(np.mean(modes.relative(groups) > 0.3))
    assert 0.4 < share < 0.7
    assert math.expm1(noise.detectable(5, stats.DRIFT)) > 0.6
    assert math.expm1(noise.detectable(15, stats.DRIFT)) < 0.05
    need = noise.rounds_for(0.05, stats.DRIFT)
    assert 5 < need <= 15 and need >= modes.rounds_to_rule_out(share) - 2


def test_the_three_figures_and_what_would_help():
    rng = np.random.default_rng(3)
    noise = detectable.Noise.of([rounds(rng, 1.0, 10, 0.01) for _ in range(10)])
    d = detectable.of(noise, threshold=0.05, rounds=5, most_rounds=15, history_noise=0.01)
    assert d.most <= d.paired and d.history is not None and d.history >= d.paired - 1e-12
    assert d.short().startswith(f"detects {d.paired * 100:.1f}% in a paired push at 5 rounds")
    # A 2-thread benchmark on 2 cores: the drift between runs rounds can't beat; the advice names threads.
    two = detectable.of(noise, threshold=0.05, rounds=5, most_rounds=15, threads=2, cores=2)
    assert not two.reaches and two.more is None
    assert "fewer threads (it uses 2 of 2 cores)" in two.advice(threads=2, cores=2)
    assert "instruction counts" in two.advice(threads=2, cores=2)
