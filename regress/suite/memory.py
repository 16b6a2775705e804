"""Memory per call of a time benchmark: one call after warm-up, as torch's allocator saw it.

CPU: torch's profiler with profile_memory=True reports every allocation and
free of the CPU allocator with its size and time, so the bytes of one call are
exact (no sampling, no load dependence). The legacy (non-kineto) profiler is
used: its first start costs milliseconds where kineto's costs seconds, and it
records the same raw memory events. CUDA (when the benchmark initialised it):
the caching allocator's own counters, reset just before the call.

Only the statement is profiled, never its setup: the statement is wrapped
between two calls that switch the profiler on and off, inside one timeit run.
"""

from __future__ import annotations

import time
import timeit
from typing import Any

from regress.core.records import MemoryUse
from regress.suite.timing import is_cpp


class _Window:
    """Switches the allocator bookkeeping on right before the statement and off right after."""

    def __init__(self, torch) -> None:
        self.torch = torch
        # torch's legacy profiler, once on: read dynamically, as its events' API differs between torch versions.
        self.prof: Any = None
        self.cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.cuda_use: MemoryUse | None = None

    def on(self) -> None:
        torch = self.torch
        if self.cuda:
            torch.cuda.synchronize()
            self.held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            self.total = torch.cuda.memory_stats().get("allocated_bytes.all.allocated", 0)
        self.prof = torch.autograd.profiler.profile(profile_memory=True, use_kineto=False)
        self.prof.__enter__()

    def off(self) -> None:
        torch = self.torch
        if self.prof is not None:
            self.prof.__exit__(None, None, None)
        if self.cuda:
            torch.cuda.synchronize()
            allocated = torch.cuda.memory_stats().get("allocated_bytes.all.allocated", 0) - self.total
            peak = max(0, torch.cuda.max_memory_allocated() - self.held)
            self.cuda_use = MemoryUse(int(allocated), int(peak), "cuda")


def cpu_figures(sizes: list[int]) -> tuple[int, int]:
    """(allocated, peak above the start) from allocation sizes (+) and frees (-) in time order."""
    allocated = sum(s for s in sizes if s > 0)
    held = peak = 0
    for s in sizes:
        held += s
        peak = max(peak, held)
    return allocated, peak


def measure(timer) -> tuple[MemoryUse, ...]:
    """Memory of one call of `timer`'s statement (a Python torch Timer); () for C++ timers."""
    import torch

    if is_cpp(timer):
        return ()
    spec = timer._task_spec
    window = _Window(torch)
    stmt = f"_regress_memory_on()\ntry:\n{_indent(spec.stmt)}\nfinally:\n    _regress_memory_off()"
    env = dict(timer._globals)
    env.update(_regress_memory_on=window.on, _regress_memory_off=window.off)
    started = time.time()
    threads = torch.get_num_threads()
    torch.set_num_threads(spec.num_threads)
    try:
        timeit.Timer(stmt=stmt, setup=spec.setup, globals=env).timeit(number=1)
    finally:
        torch.set_num_threads(threads)
    events = [e for e in window.prof.kineto_results.events() if e.name() == "[memory]"]
    # Only the CPU allocator's events (device type 0); CUDA's come from its own counters.
    events = (
        [e for e in events if int(e.device_type()) == 0] if events and hasattr(events[0], "device_type") else events
    )
    events.sort(key=lambda e: e.start_ns())
    allocated, peak = cpu_figures([int(e.nbytes()) for e in events])
    uses = [MemoryUse(allocated, peak, "cpu", started)]
    if window.cuda_use is not None:
        uses.append(MemoryUse(window.cuda_use.allocated, window.cuda_use.peak, "cuda", started))
    return tuple(uses)


def _indent(stmt: str) -> str:
    return "\n".join("    " + line for line in stmt.splitlines() or ["pass"])
