"""How one benchmark is timed: always through torch's Timer, never bare timeit.

torch's Timer sets the thread count, synchronises CUDA around each block and
gives raw block times; regress adds an explicit warm-up so a first call's
library load (cuBLAS, say) never lands in a sample, then `blocked_autorange`.
"""

from __future__ import annotations

import time

from regress.core.records import Sample


def is_cpp(timer) -> bool:
    """A C++ Timer (`language="c++"`): its statement is C++, which only the Timer's own loop can run."""
    from torch.utils.benchmark.utils.timer import Language

    return getattr(timer, "_language", None) == Language.CPP


def measure(timer, *, min_run_time: float, warmup: int = 1) -> Sample:
    """One round of `timer`: explicit warm-up, then blocked_autorange."""
    started = time.time()
    if warmup > 0:
        # Timer.timeit runs the statement a few times before it times `number`
        # runs; both are discarded here.
        timer.timeit(number=warmup)
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Sample(int(m.number_per_run), tuple(float(t) for t in m.raw_times), started)


def measure_each(timer, *, min_run_time: float, warmup: int = 1) -> Sample:
    """One round of a statement whose setup must run before every call (pytest-benchmark's
    `pedantic(setup=...)`): blocks of one call each, the Timer's setup outside the timed part,
    under its thread count; until the calls add up to `min_run_time` (or ten times that has
    passed, setups included), and at least a few."""
    from torch.utils.benchmark.utils.common import set_torch_threads

    started = time.time()
    times: list[float] = []
    with set_torch_threads(timer._task_spec.num_threads):
        for _ in range(max(warmup, 0)):
            timer._timeit(1)
        begun = time.perf_counter()
        while len(times) < 5 or (sum(times) < min_run_time and time.perf_counter() - begun < 10 * min_run_time):
            times.append(float(timer._timeit(1)))
    return Sample(1, tuple(times), started)
