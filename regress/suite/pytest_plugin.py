"""regress's `benchmark` fixture, a pytest plugin: pytest-benchmark's API, timed through torch's Timer.

Registered by `pytest_suite` when it collects a benchmark folder's pytest
modules (pytest-benchmark itself, where installed, is blocked there with
`-p no:benchmark`, so this fixture is the one tests get). A test calls

    result = benchmark(fn, *args, **kwargs)
    result = benchmark.pedantic(fn, args=(...), kwargs={...}, setup=make_inputs, rounds=..., iterations=...)

and gets `fn`'s result back, as with pytest-benchmark. Before returning, the
call is handed to the worker (`Plugin.timed`) as a `torch.utils.benchmark.Timer`
whose statement calls `fn`; the worker times it with regress's rounds,
warm-up and threads (and its memory, instructions or profile, by mode). The
test body around the call is its setup: its assertions run after, never
inside a timed block. `pedantic`'s `setup` runs before every timed call
(each block is then one call); its `rounds`, `iterations` and
`warmup_rounds` are regress's to choose and are not used.

pytest-benchmark's command-line options are accepted (so `pytest_args` and a
conftest that reads them keep working); `--benchmark-group-by` names the
benchmarks' labels (`pytest_suite.label`), the rest are regress's settings'
to decide (README, "Bring your benchmarks").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

STMT = "__regress_fn(*__regress_args, **__regress_kwargs)"
SETUP = "__regress_args, __regress_kwargs = __regress_setup()"

# pytest-benchmark's options: (flag, takes a value: True, optional value: None, none: False).
OPTIONS = (
    ("--benchmark-min-time", True),
    ("--benchmark-max-time", True),
    ("--benchmark-min-rounds", True),
    ("--benchmark-timer", True),
    ("--benchmark-calibration-precision", True),
    ("--benchmark-warmup", None),
    ("--benchmark-warmup-iterations", True),
    ("--benchmark-disable-gc", False),
    ("--benchmark-skip", False),
    ("--benchmark-disable", False),
    ("--benchmark-enable", False),
    ("--benchmark-only", False),
    ("--benchmark-save", True),
    ("--benchmark-autosave", False),
    ("--benchmark-save-data", False),
    ("--benchmark-json", True),
    ("--benchmark-compare", None),
    ("--benchmark-compare-fail", True),
    ("--benchmark-cprofile", True),
    ("--benchmark-cprofile-loops", True),
    ("--benchmark-cprofile-top", True),
    ("--benchmark-cprofile-dump", None),
    ("--benchmark-time-unit", True),
    ("--benchmark-storage", True),
    ("--benchmark-netrc", True),
    ("--benchmark-verbose", False),
    ("--benchmark-quiet", False),
    ("--benchmark-sort", True),
    ("--benchmark-group-by", True),
    ("--benchmark-columns", True),
    ("--benchmark-name", True),
    ("--benchmark-histogram", None),
)


class Plugin:
    """The hooks and the fixture; `timed` is what the worker runs on each benchmark's call."""

    def __init__(self) -> None:
        self.errors: list[Any] = []  # failed collect reports
        self.skips: list[Any] = []  # skipped collect reports (module-level skip, importorskip)
        self.timed: Callable[[Any, bool], None] | None = None

    def pytest_addoption(self, parser) -> None:
        group = parser.getgroup("benchmark", "pytest-benchmark's options, as regress reads them")
        for flag, value in OPTIONS:
            dest = flag.lstrip("-").replace("-", "_")
            if value is False:
                group.addoption(flag, action="store_true", dest=dest, default=False)
            elif value is None:
                group.addoption(flag, nargs="?", const="on", default=None, dest=dest)
            else:
                group.addoption(flag, dest=dest, default="group" if dest == "benchmark_group_by" else None)

    def pytest_configure(self, config) -> None:
        config.addinivalue_line("markers", "benchmark(group=None, ...): pytest-benchmark's marker; regress reads group")

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(report)
        elif report.skipped:
            self.skips.append(report)

    @pytest.fixture
    def benchmark(self, request):
        return BenchmarkFixture(request.node, self)


class BenchmarkFixture:
    """pytest-benchmark's fixture object, as far as a test sees it."""

    def __init__(self, node, plugin: Plugin) -> None:
        self._plugin = plugin
        self._used = False
        callspec = getattr(node, "callspec", None)
        marker = node.get_closest_marker("benchmark")
        self.name = node.name
        self.fullname = node.nodeid
        self.param = callspec.id if callspec is not None else None
        self.params = dict(callspec.params) if callspec is not None else None
        self.group = marker.kwargs.get("group") if marker is not None else None
        self.extra_info: dict[str, Any] = {}
        self.disabled = False
        self.stats = None

    def __call__(self, function_to_benchmark, *args, **kwargs):
        return self._measure(function_to_benchmark, args, kwargs, None)

    def pedantic(self, target, args=(), kwargs=None, setup=None, rounds=1, warmup_rounds=0, iterations=1):
        if iterations < 1:
            raise ValueError("Must have positive int for `iterations`.")
        if rounds < 1:
            raise ValueError("Must have positive int for `rounds`.")
        if warmup_rounds < 0:
            raise ValueError("Must have non-negative int for `warmup_rounds`.")
        if setup is not None and iterations > 1:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        return self._measure(target, tuple(args), dict(kwargs or {}), setup)

    def weave(self, target, **kwargs):
        raise NotImplementedError("regress times calls, not woven functions: call benchmark(fn, ...) in the test")

    patch = weave

    def _measure(self, fn, args: tuple, kwargs: dict, setup):
        if self._used:
            raise RuntimeError("the benchmark fixture can be called once per test (as with pytest-benchmark)")
        self._used = True
        if not callable(fn):
            raise TypeError(f"benchmark() needs a function to call, got {type(fn).__name__}")

        def fresh():
            got = setup()
            if got is None:
                return args, kwargs
            a, k = got
            return tuple(a), dict(k or {})

        a, k = fresh() if setup is not None else (args, kwargs)
        result = fn(*a, **k)  # the call whose result the test goes on with
        if self._plugin.timed is not None:
            from torch.utils.benchmark import Timer

            made = {"__regress_fn": fn, "__regress_args": args, "__regress_kwargs": kwargs}
            if setup is not None:
                made["__regress_setup"] = fresh
            timer = Timer(stmt=STMT, setup=SETUP if setup is not None else "pass", globals=made)
            self._plugin.timed(timer, setup is not None)
        return result
