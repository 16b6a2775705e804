"""The child process that imports a commit's code and measures its whole suite.

One worker per round of a commit, forked from a fork server that has
imported torch (`forkserver.py`), or started fresh (`launch.py`, never as a
script): it then reads its job (`job.py`) as JSON on stdin and reports on the
pipe named by argv[1] (see protocol.py). If it dies or hangs, the runner
starts another for the benchmarks left.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
import traceback
import types
from pathlib import Path

from regress.measure.job import JobMode, WorkerJob


def _setup_path(job: WorkerJob) -> None:
    """The measured commit's code first; regress's own folder last.

    regress itself is purged from sys.modules so that a project which *is*
    regress measures its own commit's code, not the installed copy.
    """
    own = str(Path(__file__).resolve().parents[2])  # the folder holding the regress package
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(own)]
    for name in [m for m in sys.modules if m == "regress" or m.startswith("regress.")]:
        del sys.modules[name]
    suites = job.benchmarks_dir if not job.benchmarks_dir.is_file() else job.benchmarks_dir.parent
    sys.path[0:0] = [str(job.import_path), str(suites)]
    sys.path.append(own)
    os.chdir(job.cwd)


def die_with_parent(parent: int = 0) -> None:
    """A worker orphaned by a killed regress (or fork server) must not go on measuring."""
    parent = parent or int(os.environ.get("REGRESS_PARENT_PID", "0") or 0)
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        os._exit(1)


def main() -> None:
    """A fresh worker: the job on stdin, reports on the file descriptor argv[1]."""
    die_with_parent()
    out = os.fdopen(int(sys.argv[1]), "wb", buffering=0)
    try:
        job = WorkerJob.parse(json.loads(sys.stdin.read()))
    except ValueError as exc:
        sys.exit(f"regress worker: {exc}")
    run_job(job, out)


def _leave_out(job: WorkerJob) -> frozenset[str]:
    """The benchmark path's top-level name: never pinned to the commit (it may come from the working tree)."""
    where = job.benchmarks_dir
    for base in (job.shown_root, job.cwd):
        if where.is_relative_to(base) and where != base:
            first = where.relative_to(base).parts[0]
            return frozenset({first.removesuffix(".py")})
    return frozenset()


_OWN: dict = {}


def _own_modules():
    """regress's own modules a worker uses, imported once, before `_setup_path` takes regress out of
    sys.modules (later imports of regress are the measured commit's, when the project is regress):
    a round forked from a commit process uses the very modules that prepared it."""
    if not _OWN:
        from regress.core import kinds, ops, records
        from regress.measure import protocol
        from regress.suite import discover, folder, installed, machine, memory, pytest_suite, reference, timing

        _OWN.update(
            kinds=kinds,
            ops=ops,
            records=records,
            protocol=protocol,
            discover=discover,
            folder=folder,
            installed=installed,
            machine=machine,
            memory=memory,
            pytest_suite=pytest_suite,
            reference=reference,
            timing=timing,
        )
    return types.SimpleNamespace(**_OWN)


def setup(job: WorkerJob) -> None:
    """The commit's code first on sys.path, importable as if installed (`suite/installed.py`)."""
    own = _own_modules()
    _setup_path(job)
    own.installed.install(job.cwd, job.import_path, _leave_out(job))


def prepare(job: WorkerJob):
    """The benchmark path classified and its pytest modules collected (`suite/folder.py`), once `setup`
    has run: in the fork server's commit process (`zygote.py`), or in the worker itself."""
    return _own_modules().folder.prepare(
        job.benchmarks_dir, root=job.shown_root, shown_root=job.shown_root, pytest_args=job.pytest_args, env=job.env
    )


def run_job(job: WorkerJob, out, prepared=None) -> None:
    """Discover the suites of `job` and measure them, reporting on `out` (a binary file).

    `prepared`: what `prepare` made in the process this one was forked from (the commit's
    code already imported, its pytest modules collected); None: prepared here."""
    own = _own_modules()
    FailureKind, Op = own.kinds.FailureKind, own.ops.Op
    Failure, InstructionCount, TrackedValue = (
        own.records.Failure,
        own.records.InstructionCount,
        own.records.TrackedValue,
    )
    protocol, discover, machine, memory = own.protocol, own.discover, own.machine, own.memory
    pytest_suite, reference, timing = own.pytest_suite, own.reference, own.timing

    def send(msg) -> None:
        out.write(protocol.encode(msg))

    if prepared is None:
        setup(job)
    send(protocol.Hello(os.getpid(), machine.fingerprint(job.machine)))
    if prepared is None:
        prepared = prepare(job)

    found, failures = discover.discover(
        job.benchmarks_dir, env=job.env, shown_root=job.shown_root, files=prepared.suites
    )
    entries, failures = discover.drop_duplicates(found + prepared.pytest_entries, prepared.failures + failures)
    pattern = re.compile(job.bench_filter)
    skip = set(job.skip)
    todo = []
    for e in entries:
        bid = e.spec.id
        if not pattern.search(str(bid)) or (job.shard is not None and not job.shard.takes(bid)):
            continue
        if bid in skip or (e.track is not None and job.mode is JobMode.INSTRUCTIONS):
            continue  # a tracked value has no instruction count
        todo.append(e)
    if job.mode is JobMode.TIME:
        # A new order every round: what ran just before a benchmark (caches, the
        # allocator's free lists) is then round-to-round noise the rounds' spread
        # shows, not an offset shared by every round of one commit.
        import random

        random.Random(os.urandom(8)).shuffle(todo)
    listed = tuple(protocol.Listed(e.spec, e.origin, e.skip) for e in todo)
    send(protocol.Discovered(listed, tuple(failures), tuple(prepared.notes), prepared.mistake))
    if job.mode is JobMode.LIST or prepared.mistake:
        send(protocol.Done())
        return

    counter = None

    def measured(index: int, e, timer, per_call: bool = False):
        """The message for one benchmark's Timer, by the job's mode."""
        nonlocal counter
        if job.mode is JobMode.PROFILE:  # `regress explain`: the operators, not the time
            from regress.suite import profiling

            trace_path = str(Path(job.trace_dir or ".") / f"{index}.json")
            got = profiling.profile(timer, trace_path=trace_path, warmup=job.warmup)
            return protocol.Profiled(index, trace_path, got["calls"], tuple(Op(**o) for o in got["ops"]))
        if job.mode is JobMode.INSTRUCTIONS:
            plan = job.callgrind
            assert plan is not None  # an instructions job carries its callgrind plan
            if counter is None:  # only now: imports and discovery ran uninstrumented
                from regress.measure import callgrind

                counter = callgrind.Counter(str(plan.out_dir), str(plan.helper) if plan.helper else None)
            if getattr(timer, "__regress_compiled__", None) is not None:
                timer.__regress_compiled__.first_call(e.spec.num_threads)  # count steady state, not compiling
            started = time.time()
            per_call_count = counter.count(timer, number=plan.number, repeats=plan.repeats)
            return protocol.Counted(index, InstructionCount(plan.number, tuple(per_call_count), started))
        compiled = getattr(timer, "__regress_compiled__", None)
        if compiled is not None:
            compiled.first_call(e.spec.num_threads)  # timed apart: the Timer's warm-up must not hide it
        if per_call:
            s = timing.measure_each(timer, min_run_time=job.min_run_time, warmup=job.warmup)
        else:
            s = timing.measure(timer, min_run_time=job.min_run_time, warmup=job.warmup)
        stats = compiled.stats() if compiled is not None else None
        # After warm-up and timing, so lazy initialisation is not counted as the call's.
        try:
            used = memory.measure(timer)
        except Exception:  # noqa: BLE001 - e.g. the benchmark runs a profiler of its own: keep its times
            used = ()
        return protocol.Result(index, s, tuple(used), stats)

    items = [e for e in todo if e.item is not None and not e.skip]
    following = {id(a): b.item for a, b in zip(items, items[1:])}
    main_module = sys.modules.get("__main__")
    for index, e in enumerate(todo):
        send(protocol.Start(index))
        if e.skip:
            send(protocol.Failed(index, Failure(FailureKind.SKIPPED, e.skip, e.origin)))
            continue
        # Recipe-style Timers say setup='from __main__ import f': let __main__
        # be the suite module while its benchmarks run.
        if e.module is not None:
            sys.modules["__main__"] = e.module
        try:
            if e.item is not None:  # a pytest test: its body runs, its benchmark call is measured
                done = pytest_suite.run(
                    e,
                    following.get(id(e)),
                    prepared.plugin,
                    lambda timer, per_call, i=index, e=e: measured(i, e, timer, per_call),
                )
                msg = done.measured if done.failure is None else protocol.Failed(index, done.failure)
            elif e.track is not None:
                started = time.time()
                value = TrackedValue(e.track.value(), e.track.unit, e.track.better, started)
                msg = protocol.Result(index, tracked=value)
            else:
                msg = measured(index, e, e.timer)
        except Exception as exc:  # noqa: BLE001 - the benchmark's failure is data
            tb = traceback.extract_tb(exc.__traceback__)
            frame = next((f for f in reversed(tb) if not f.filename.startswith(str(Path(__file__).parent))), None)
            where = f"{frame.filename}:{frame.lineno}" if frame else e.origin
            send(protocol.Failed(index, Failure(FailureKind.ERROR, discover.describe(exc), where)))
        else:
            send(msg)
        finally:
            sys.modules["__main__"] = main_module  # type: ignore[assignment]  # restored as found (a worker has one)
    if job.reference and job.mode is JobMode.TIME:
        # Fixed code that is not the project's, timed in the same process state
        # as the suite: it tells a slow machine from a slow commit.
        send(protocol.Reference(reference.measure(min(reference.MIN_RUN_TIME, job.min_run_time))))
    send(protocol.Done())
