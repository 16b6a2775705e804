"""The timer plumbing, deterministic: torch's Timer driven by a fake clock."""

from __future__ import annotations

import math

import torch.utils.benchmark as benchmark

from regress.suite.timing import measure


class FakeClock:
    """Time moves only when the benchmarked statement runs: `cost` seconds a call.

    Costs are powers of two so the clock's arithmetic is exact.
    """

    def __init__(self, cost: float) -> None:
        self.cost = cost
        self.now = 0.0
        self.calls = 0

    def tick(self) -> None:
        self.calls += 1
        self.now += self.cost

    def __call__(self) -> float:
        return self.now


def test_blocked_autorange_samples_come_back_whole():
    cost = 2.0**-20  # about 1 us
    clock = FakeClock(cost)
    timer = benchmark.Timer(stmt="clock.tick()", globals={"clock": clock}, timer=clock)
    sample = measure(timer, min_run_time=0.2, warmup=0)
    # torch grows the block by tens until it lasts min_run_time/1000.
    assert sample.number_per_run == 1000
    block = 1000 * cost
    assert len(sample.raw_times) == math.ceil(0.2 / block)
    assert set(sample.raw_times) == {block}
    assert sample.median == cost
    assert sample.started_at > 0


def test_warmup_runs_are_not_in_the_sample():
    clock = FakeClock(cost=2.0**-20)
    timer = benchmark.Timer(stmt="clock.tick()", globals={"clock": clock}, timer=clock)
    cold = measure(timer, min_run_time=0.01, warmup=0)
    calls_cold = clock.calls
    clock.calls = 0
    warm = measure(timer, min_run_time=0.01, warmup=5)
    # Warm-up executions happened (Timer.timeit runs its own 2 first)...
    assert clock.calls >= calls_cold + 5
    # ...but the sample is the same shape as without them.
    assert warm.number_per_run == cold.number_per_run
    assert len(warm.raw_times) == len(cold.raw_times)


def test_first_call_cost_never_lands_in_a_sample():
    """The recipe's cuBLAS case: the first call pays a one-off load."""

    class FirstCallSlow(FakeClock):
        def tick(self) -> None:
            self.calls += 1
            self.now += 2.0**-8 if self.calls == 1 else 2.0**-15  # ~3.9 ms once, then ~31 us

    clock = FirstCallSlow(cost=0)
    timer = benchmark.Timer(stmt="clock.tick()", globals={"clock": clock}, timer=clock)
    sample = measure(timer, min_run_time=0.05, warmup=1)
    per_run = [t / sample.number_per_run for t in sample.raw_times]
    assert max(per_run) == 2.0**-15
