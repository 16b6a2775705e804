"""`@regress.benchmark(...)`: sugar that produces the same Timers a `bench_*` function would.

    @regress.benchmark(params={"n": [64, 1024]}, threads=[1, 2], description="mul/sum")
    def batched_dot(n):
        x = torch.randn(n, n)
        return lambda: x.mul(x).sum(-1)

The decorated function gets one value of every parameter (the cartesian
product of `params`) and returns either a zero-argument callable (timed as a
call) or, when `stmt=` is given, a dict of globals for that statement.

`device="cuda"` (or a list such as `["cpu", "cuda"]`) adds a `device`
argument; on a machine without CUDA those benchmarks are reported as skipped,
not failed. `fuzzer=Fuzzer(...)` with `samples=N` and `seed=S` draws N inputs
(recipe step 7); the function receives the fuzzed tensors and parameters as
keyword arguments, and each benchmark's sub_label describes the inputs' shapes
and layout. The seed makes the inputs the same at every commit and machine.

`compile=True` (or `mode="max-autotune"` etc., or `backend="aot_eager"`)
times `torch.compile` of the returned callable in steady state and records
its first call's compile time and dynamo's counts (see compiled.py).
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any


def _format(template: str | None, values: Mapping[str, Any], default: str | None) -> str | None:
    if template is None:
        return default
    try:
        return template.format(**values)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"{template!r} names {exc} which is not a parameter") from None


def _fields(template: str | None) -> set[str]:
    if not template:
        return set()
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class BenchmarkDefinition:
    # Discovery recognises definitions by this marker, not by class, so a
    # suite importing another copy of regress still works.
    __regress_benchmark__ = True

    def __init__(
        self,
        fn: Callable,
        *,
        params,
        threads,
        label,
        sub_label,
        description,
        stmt,
        setup,
        device=None,
        fuzzer=None,
        samples=None,
        seed=None,
        compile=False,
        mode=None,
        backend=None,
    ):
        self.fn = fn
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.params: dict[str, Sequence[Any]] = {k: list(v) for k, v in (params or {}).items()}
        self.threads = [int(t) for t in threads]
        self.label = label
        self.sub_label = sub_label
        self.description = description
        self.stmt = stmt
        self.setup = setup
        self.devices = [device] if isinstance(device, str) else list(device or [])
        if self.devices:
            if "device" in self.params:
                raise ValueError(f"{fn.__name__}: give devices with device=, not as a parameter")
            self.params["device"] = self.devices
        self.compile = bool(compile or mode or backend)
        self.mode = mode
        self.backend = backend or "inductor"
        if self.compile and stmt is not None:
            raise ValueError(f"{fn.__name__}: compile= times a returned callable; drop stmt=")
        self.fuzzer = fuzzer
        self.samples = samples
        self.seed = seed
        if fuzzer is not None:
            if not samples or samples < 1:
                raise ValueError(f"{fn.__name__}: fuzzer= needs samples=N (how many inputs to draw)")
            # torch's Fuzzer draws a random seed when given none, so the seed
            # must be regress's to set.
            if seed is None:
                raise ValueError(f"{fn.__name__}: fuzzer= needs seed=S so every commit gets the same inputs")
        for name, values in self.params.items():
            if not values:
                raise ValueError(f"parameter {name!r} of {fn.__name__} has no values")
        if not self.threads or any(t < 1 for t in self.threads):
            raise ValueError(f"threads of {fn.__name__} must be positive integers")

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def fuzzer_names(self, values: Mapping[str, Any]) -> list[str]:
        """Names that come from the fuzzer, not from params (the sub_label describes them)."""
        return [k for k in values if k not in self.params]

    def grid(self) -> Iterator[dict[str, Any]]:
        names = list(self.params)
        for combo in itertools.product(*(self.params[n] for n in names)):
            yield dict(zip(names, combo))

    def _inputs(self) -> Iterator[tuple[dict[str, Any], str | None]]:
        """(keyword arguments, sub_label or None) for every benchmark input."""
        if self.fuzzer is None:
            for values in self.grid():
                yield values, None
            return
        import copy

        fuzzer = copy.copy(self.fuzzer)
        fuzzer._seed = self.seed  # torch's Fuzzer keeps its seed here; take() reseeds from it
        for tensors, properties, fuzzed in fuzzer.take(self.samples):
            for values in self.grid():
                yield {**tensors, **fuzzed, **values}, describe_inputs(tensors, properties)

    def timers(self) -> Iterator[Any]:
        from torch.utils.benchmark import Timer

        for values, fuzzed_sub in self._inputs():
            device = values.get("device") if self.devices else None
            made = None
            skip = _device_unavailable(device) if device else None
            if skip is None and self.compile:
                from regress.suite.compiled import cannot_compile

                skip = cannot_compile(self.backend)
            if skip is None:
                made = self.fn(**values)
            # Parameters the description already shows are left out of the row name.
            shown = _fields(self.description) | set(self.fuzzer_names(values) if fuzzed_sub else ())
            default_sub = ", ".join(f"{k}={v}" for k, v in values.items() if k not in shown) or None
            if fuzzed_sub:
                default_sub = f"{fuzzed_sub}, {default_sub}" if default_sub else fuzzed_sub
            sub_label = _format(self.sub_label, values, default_sub)
            description = _format(self.description, values, None)
            if skip is not None:
                stmt = self.stmt if self.stmt is not None else f"{self.__name__}()"
                for threads in self.threads:
                    yield Skipped(stmt, self.setup, self.label, sub_label, description, threads, skip)
                continue
            if self.stmt is not None:
                if not isinstance(made, Mapping):
                    raise TypeError(f"{self.__name__} must return a dict of globals for stmt={self.stmt!r}")
                stmt, glob = self.stmt, dict(made)
            else:
                if not callable(made):
                    raise TypeError(
                        f"{self.__name__} must return a zero-argument callable to time "
                        "(or pass stmt= and return its globals)"
                    )
                if self.compile:
                    from regress.suite.compiled import CompiledCall

                    made = CompiledCall(made, backend=self.backend, mode=self.mode)
                stmt, glob = f"{self.__name__}()", {self.__name__: made}
            for threads in self.threads:
                timer = Timer(
                    stmt=stmt,
                    setup=self.setup,
                    globals=glob,
                    num_threads=threads,
                    label=self.label,
                    sub_label=sub_label,
                    description=description,
                )
                if self.compile:
                    timer.__regress_compiled__ = made  # type: ignore[attr-defined]  # a mark the worker reads back
                yield timer


def describe_inputs(tensors: Mapping[str, Any], properties: Mapping[str, Mapping[str, Any]]) -> str:
    """e.g. 'x=391x2 (discontiguous), y=64' -- shape and layout of fuzzed tensors."""
    parts = []
    for name, tensor in tensors.items():
        shape = "x".join(str(d) for d in tensor.shape) or "scalar"
        layout = []
        props = properties.get(name, {})
        if not props.get("is_contiguous", True):
            layout.append("discontiguous")
        steps = props.get("steps")
        if steps is not None and any(int(s) != 1 for s in steps):
            layout.append("strided " + "x".join(str(int(s)) for s in steps))
        parts.append(f"{name}={shape}" + (f" ({', '.join(layout)})" if layout else ""))
    return ", ".join(parts)


def _device_unavailable(device: str) -> str | None:
    """Why `device` can't be used here, or None when it can."""
    if str(device).startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return "CUDA is not available on this machine"
    return None


class Skipped:
    """A benchmark that exists but can't run here (e.g. CUDA without a GPU)."""

    __regress_skipped__ = True

    def __init__(self, stmt, setup, label, sub_label, description, num_threads, reason):
        self.stmt, self.setup, self.label = stmt, setup, label
        self.sub_label, self.description = sub_label, description
        self.num_threads, self.reason = num_threads, reason
        self.global_setup, self.env = "", None


def benchmark(
    fn: Callable | None = None,
    *,
    params: Mapping[str, Sequence[Any]] | None = None,
    threads: Sequence[int] = (1,),
    label: str | None = None,
    sub_label: str | None = None,
    description: str | None = None,
    stmt: str | None = None,
    setup: str = "pass",
    device: str | Sequence[str] | None = None,
    fuzzer: Any = None,
    samples: int | None = None,
    seed: int | None = None,
    compile: bool = False,
    mode: str | None = None,
    backend: str | None = None,
):
    """Mark a function as a benchmark; see the module docstring."""

    def wrap(f: Callable) -> BenchmarkDefinition:
        return BenchmarkDefinition(
            f,
            params=params,
            threads=threads,
            label=label,
            sub_label=sub_label,
            description=description,
            stmt=stmt,
            setup=setup,
            device=device,
            fuzzer=fuzzer,
            samples=samples,
            seed=seed,
            compile=compile,
            mode=mode,
            backend=backend,
        )

    return wrap(fn) if fn is not None else wrap
