"""The reference workload: fixed code, not the project's, timed in every round.

A commit measured while the machine was slow (a neighbour's build, thermal
throttling, a noisy hour on a shared runner) looks slower on every benchmark
at once. Timing the same fixed workload in the same worker process tells the
two apart: when the reference moved too, the machine moved, not the code
(`diff` and `changepoints` use it). It mixes what benchmarks spend their time
on: small-op dispatch, a matrix product and an elementwise pass, one thread.
Runs inside the worker; imports torch.
"""

from __future__ import annotations

# Short on purpose: it runs once per round of every commit.
MIN_RUN_TIME = 0.1
LABEL = "regress reference"


def timer():
    import torch
    from torch.utils.benchmark import Timer

    a = torch.linspace(-1.0, 1.0, 96 * 96).reshape(96, 96)
    return Timer(
        stmt="torch.mm(a, a).add_(a).relu_().sum()",
        globals={"a": a, "torch": torch},
        num_threads=1,
        label=LABEL,
    )


def measure(min_run_time: float = MIN_RUN_TIME):
    from regress.suite import timing

    return timing.measure(timer(), min_run_time=min_run_time, warmup=1)
