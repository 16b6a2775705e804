"""Find the benchmarks in a suite folder: `bench_*` functions and `@regress.benchmark` definitions.

Runs inside the worker, where the measured commit's code is importable. A
suite file that fails to load, or a benchmark function that raises while
building its Timers, becomes a Failure naming the file and line; the other
suites are still collected.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regress.core.kinds import FailureKind
from regress.core.records import TRACK_STMT, BenchmarkId, Failure, TaskSpec


@dataclass
class Entry:
    spec: TaskSpec
    origin: str
    timer: Any  # torch.utils.benchmark.Timer, or None when skipped
    module: types.ModuleType | None  # None for a pytest test (`item`)
    skip: str | None = None  # why it can't run on this machine
    track: Any = None  # a TrackDefinition: a value to record instead of a Timer to time
    item: Any = None  # a pytest Item (pytest_suite.py): its test's benchmark call is what is timed


def suite_files(folder: Path) -> list[Path]:
    """Every `*.py` of a benchmark path (a folder or a file); `files.py` decides which are suites."""
    from regress.suite.files import benchmark_files

    return benchmark_files(folder)


def _where(exc: BaseException, path: Path, shown: str) -> str:
    """file:line of the innermost frame in the suite file, or of the error itself."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{shown}:{exc.lineno or 0}"
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == str(path):
            line = frame.lineno or 0
    return f"{shown}:{line}" if line else shown


def describe(exc: BaseException) -> str:
    """An exception in one line, as regress reports a suite's or a benchmark's error."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _module_name(rel: Path) -> str:
    return ".".join(rel.with_suffix("").parts)


def _ensure_parents(name: str, folder: Path) -> None:
    parts = name.split(".")[:-1]
    for i in range(1, len(parts) + 1):
        pkg = ".".join(parts[:i])
        if pkg not in sys.modules:
            mod = types.ModuleType(pkg)
            mod.__path__ = [str(folder.joinpath(*parts[:i]))]
            sys.modules[pkg] = mod


def load_module(path: Path, folder: Path) -> types.ModuleType:
    rel = path.relative_to(folder)
    name = _module_name(rel)
    _ensure_parents(name, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _takes_arguments(fn: Any) -> bool:
    """A plain function a call with no arguments could not run (a helper, not a benchmark; files.py names it)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return any(p.default is inspect.Parameter.empty and p.kind not in kinds for p in params)


def _definitions(module: types.ModuleType) -> Iterable[tuple[str, Any]]:
    """Decorated definitions (benchmarks and tracked values), `bench_*` and `track_*` functions."""
    for name, obj in list(vars(module).items()):
        marked = getattr(obj, "__regress_benchmark__", False) or getattr(obj, "__regress_track__", False)
        plain = name.startswith(("bench_", "track_")) and inspect.isfunction(obj) and not _takes_arguments(obj)
        if (marked or plain) and getattr(obj, "__module__", None) == module.__name__:
            yield name, obj


def _timers(obj: Any) -> Iterable[Any]:
    from torch.utils.benchmark import Timer

    made = obj.timers() if getattr(obj, "__regress_benchmark__", False) else obj()
    if isinstance(made, Timer):
        return [made]
    if made is None:
        raise TypeError("returned None; a bench_ function must return a Timer or an iterable of Timers")
    out = list(made)
    for t in out:
        if not isinstance(t, Timer) and not getattr(t, "__regress_skipped__", False):
            raise TypeError(f"yielded {type(t).__name__}; expected torch.utils.benchmark.Timer")
    return out


def _needs_missing_cuda(exc: BaseException) -> bool:
    """A plain bench_ function that needs CUDA, on a machine without it.

    Decided by where the exception came from, not by its text: torch raises
    from inside `torch.cuda` (its lazy initialisation) whenever code touches
    a GPU it doesn't have. An error that merely mentions CUDA, or any error
    on a machine that has CUDA, is the benchmark's failure.
    """
    try:
        import torch

        if torch.cuda.is_available():
            return False
        cuda_dir = Path(torch.cuda.__file__).resolve().parent
    except Exception:  # noqa: BLE001 - no usable torch: nothing to say about CUDA
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().parent == cuda_dir


def _spec(timer: Any, default_label: str, env: str) -> TaskSpec:
    # torch's frozen TaskSpec (unchanged since 1.8), or regress's Skipped marker.
    ts = timer if getattr(timer, "__regress_skipped__", False) else timer._task_spec
    return TaskSpec(
        stmt=ts.stmt,
        setup=ts.setup,
        global_setup=ts.global_setup,
        label=ts.label or default_label,
        sub_label=ts.sub_label,
        description=ts.description,
        env=ts.env or env,
        num_threads=int(ts.num_threads),
    )


def _tracked(obj: Any, name: str, origin: str, module: types.ModuleType, label: str, env: str) -> Entry:
    from regress.suite.track import TrackDefinition

    definition = obj if getattr(obj, "__regress_track__", False) else TrackDefinition(obj)
    # Named like a benchmark (module, then function); the stmt marks it as a tracked value (never executed).
    spec = TaskSpec(
        stmt=f"{TRACK_STMT}{name}()", label=definition.label or label.rsplit(".", 1)[0], sub_label=name, env=env
    )
    return Entry(spec, origin, None, module, track=definition)


def discover(
    folder: Path, *, env: str, shown_root: Path | None = None, files: list[Path] | None = None
) -> tuple[list[Entry], list[Failure]]:
    """All benchmarks of the regress suites under `folder` (a folder or one file; `files`: only these),
    and the failures met while collecting them."""
    if folder.is_file():
        files = [folder] if files is None else files
        folder = folder.parent
    shown_root = shown_root or folder.parent
    entries: list[Entry] = []
    failures: list[Failure] = []
    for path in suite_files(folder) if files is None else files:
        shown = str(path.relative_to(shown_root)) if path.is_relative_to(shown_root) else str(path)
        try:
            module = load_module(path, folder)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(Failure(FailureKind.SUITE, describe(exc), _where(exc, path, shown)))
            continue
        prefix = _module_name(path.relative_to(folder))
        for name, obj in _definitions(module):
            fn = getattr(obj, "__wrapped__", obj)
            line = getattr(getattr(fn, "__code__", None), "co_firstlineno", 0)
            origin = f"{shown}:{line} {name}"
            if getattr(obj, "__regress_track__", False) or (
                not getattr(obj, "__regress_benchmark__", False) and name.startswith("track_")
            ):
                entries.append(_tracked(obj, name, origin, module, f"{prefix}.{name}", env))
                continue
            try:
                timers = _timers(obj)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                where = _where(exc, path, shown)
                if _needs_missing_cuda(exc):
                    failures.append(
                        Failure(FailureKind.SKIPPED, f"{name} needs CUDA, which this machine lacks", origin)
                    )
                else:
                    failures.append(
                        Failure(FailureKind.SUITE, f"{name} {describe(exc)}", where if ":" in where else origin)
                    )
                continue
            for timer in timers:
                spec = _spec(timer, f"{prefix}.{name}", env)
                if getattr(timer, "__regress_skipped__", False):
                    entries.append(Entry(spec, origin, None, module, skip=timer.reason))
                else:
                    entries.append(Entry(spec, origin, timer, module))
    return drop_duplicates(entries, failures)


def drop_duplicates(entries: list[Entry], failures: list[Failure]) -> tuple[list[Entry], list[Failure]]:
    seen: dict[BenchmarkId, Entry] = {}
    dupes: dict[BenchmarkId, list[str]] = {}
    for e in entries:
        if e.spec.id in seen:
            dupes.setdefault(e.spec.id, [seen[e.spec.id].origin]).append(e.origin)
        else:
            seen[e.spec.id] = e
    for bid, origins in dupes.items():
        failures.append(
            Failure(
                FailureKind.SUITE,
                f"two benchmarks share the identity '{bid}' ({' and '.join(origins)}); "
                "give them distinct label, sub_label, description or num_threads",
                origins[0].split(" ")[0],
            )
        )
    return [e for e in entries if e.spec.id not in dupes], failures
