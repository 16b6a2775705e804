"""One benchmark's Timer under torch.profiler: which operators its statement runs.

Runs inside the worker. The profiler starts at the end of the Timer's own
setup and stops when its loop ends, so what is recorded is exactly `calls`
executions of the statement, after warm-up, with the Timer's globals and
thread count: the same work `blocked_autorange` times, nothing of setup.
"""

from __future__ import annotations

import time

from regress.suite.timing import is_cpp

# Profiled executions: enough for `target` seconds, within these bounds
# (a trace holds every op event of every call: keep it loadable).
MIN_CALLS = 5
MAX_CALLS = 500
TARGET_S = 0.2


def _calls(timer, warmup: int) -> int:
    """How many executions fill TARGET_S, from a timed warm-up (which also warms caches)."""
    timer.timeit(number=max(warmup, 1))
    per_call = timer.timeit(number=3).median
    return max(MIN_CALLS, min(MAX_CALLS, int(TARGET_S / max(per_call, 1e-9))))


def profile(timer, *, trace_path: str, warmup: int = 1, calls: int | None = None) -> dict:
    """Profile `calls` executions of `timer`'s statement; write the Chrome trace to `trace_path`.

    Returns {"calls": N, "ops": [{"name", "count", "self_cpu_us", "self_cuda_us", "user"}]}:
    totals over the N executions, per operator (key_averages).
    """
    import timeit

    import torch
    from torch.profiler import ProfilerActivity
    from torch.utils.benchmark.utils.common import set_torch_threads

    if is_cpp(timer):
        raise TypeError("C++ Timers can't be profiled from Python; explain profiles Python statements only")
    ts = timer._task_spec
    n = calls or _calls(timer, warmup)
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities, record_shapes=False)
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    started = []

    def start() -> None:
        prof.start()
        started.append(True)

    globs = {**getattr(timer, "_globals", {}), "__regress_profile_start__": start}
    inner = timeit.Timer(
        stmt=ts.stmt, setup=f"{ts.setup}\n__regress_profile_start__()", timer=time.perf_counter, globals=globs
    )
    with set_torch_threads(ts.num_threads):
        try:
            inner.timeit(number=n)
            sync()
        finally:
            if started:
                prof.stop()
    prof.export_chrome_trace(trace_path)
    ops = []
    for e in prof.key_averages():
        cuda = getattr(e, "self_device_time_total", None)
        if cuda is None:
            cuda = getattr(e, "self_cuda_time_total", 0.0)
        ops.append(
            {
                "name": e.key,
                "count": int(e.count),
                "self_cpu_us": float(e.self_cpu_time_total),
                "self_cuda_us": float(cuda or 0.0),
                "user": bool(getattr(e, "is_user_annotation", False)),
            }
        )
    return {"calls": n, "ops": ops}
