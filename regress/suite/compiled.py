"""`compile=True` benchmarks: the first call's compile time and dynamo's counts.

The Timer times the compiled callable in steady state (its warm-up absorbs no
compilation: the first call is made, and timed, before the Timer runs). The
counts come from dynamo's counters, cleared (with dynamo's caches) before the
first call, so each benchmark's figures are its own:
graphs = unique graphs dynamo produced, graph breaks = graph-break events,
recompiles = frames compiled after the first call (a guard failed in steady state).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

from regress.core.records import CompileStats

INDUCTOR = "inductor"


def cannot_compile(backend: str) -> str | None:
    """Why torch.compile with `backend` can't run here (no C++ compiler for inductor), or None."""
    if backend != INDUCTOR:
        return None
    try:
        from torch._inductor import cpp_builder

        compiler = cpp_builder.get_cpp_compiler()
    except Exception:  # noqa: BLE001 - torch raises various errors when it finds no compiler
        compiler = None
    if not compiler:
        return "torch.compile (inductor) needs a C++ compiler, which this machine lacks"
    return None


class _CompileArgs(TypedDict, total=False):
    """What `first_call` passes torch.compile."""

    backend: str
    mode: str


class CompiledCall:
    """The callable a compiled benchmark's Timer calls, and its compile figures."""

    def __init__(self, fn: Callable[[], Any], *, backend: str = INDUCTOR, mode: str | None = None) -> None:
        self.fn = fn
        self.backend = backend
        self.mode = mode
        self.compiled: Callable[[], Any] | None = None
        self.first: tuple[float, float, int] | None = None  # started, seconds, frames compiled

    def __call__(self):
        if self.compiled is None:
            self.first_call()
        return self.compiled()

    def first_call(self, num_threads: int | None = None) -> None:
        """Compile and make the first call, under the Timer's thread count (dynamo guards on it)."""
        import torch
        import torch._dynamo
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        kwargs: _CompileArgs = {"backend": self.backend}
        if self.mode is not None:
            kwargs["mode"] = self.mode
        self.compiled = torch.compile(self.fn, **kwargs)
        threads = torch.get_num_threads()
        if num_threads:
            torch.set_num_threads(num_threads)
        try:
            started = time.time()
            t0 = time.perf_counter()
            self.compiled()
            seconds = time.perf_counter() - t0
        finally:
            torch.set_num_threads(threads)
        self.first = (started, seconds, int(counters["frames"]["total"]))

    def stats(self) -> CompileStats:
        from torch._dynamo.utils import counters

        if self.first is None:
            self.first_call()
        assert self.first is not None  # `first_call` sets it
        started, seconds, frames = self.first
        return CompileStats(
            compile_time=seconds,
            graphs=int(counters["stats"]["unique_graphs"]),
            graph_breaks=int(sum(counters["graph_break"].values())),
            recompiles=max(0, int(counters["frames"]["total"]) - frames),
            started_at=started,
        )
