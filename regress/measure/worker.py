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
    sys.path[0:0] = [str(job.import_path), str(job.benchmarks_dir)]
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


def run_job(job: WorkerJob, out) -> None:
    """Discover the suites of `job` and measure them, reporting on `out` (a binary file)."""
    from regress.core.kinds import FailureKind
    from regress.core.ops import Op
    from regress.core.records import Failure, InstructionCount, TrackedValue
    from regress.measure import protocol
    from regress.suite import discover, machine, memory, reference, timing

    def send(msg) -> None:
        out.write(protocol.encode(msg))

    _setup_path(job)
    send(protocol.Hello(os.getpid(), machine.fingerprint(job.machine)))

    entries, failures = discover.discover(job.benchmarks_dir, env=job.env, shown_root=job.shown_root)
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
    send(protocol.Discovered(tuple(protocol.Listed(e.spec, e.origin, e.skip) for e in todo), tuple(failures)))
    if job.mode is JobMode.LIST:
        send(protocol.Done())
        return

    counter = None
    main_module = sys.modules.get("__main__")
    for index, e in enumerate(todo):
        send(protocol.Start(index))
        if e.skip:
            send(protocol.Failed(index, Failure(FailureKind.SKIPPED, e.skip, e.origin)))
            continue
        # Recipe-style Timers say setup='from __main__ import f': let __main__
        # be the suite module while its benchmarks run.
        sys.modules["__main__"] = e.module
        try:
            if job.mode is JobMode.PROFILE:  # `regress explain`: the operators, not the time
                from regress.suite import profiling

                trace_path = str(Path(job.trace_dir or ".") / f"{index}.json")
                got = profiling.profile(e.timer, trace_path=trace_path, warmup=job.warmup)
                send(protocol.Profiled(index, trace_path, got["calls"], tuple(Op(**o) for o in got["ops"])))
                continue
            if job.mode is JobMode.INSTRUCTIONS:
                plan = job.callgrind
                if counter is None:  # only now: imports and discovery ran uninstrumented
                    from regress.measure import callgrind

                    counter = callgrind.Counter(str(plan.out_dir), str(plan.helper) if plan.helper else None)
                if getattr(e.timer, "__regress_compiled__", None) is not None:
                    e.timer.__regress_compiled__.first_call(e.spec.num_threads)  # count steady state, not compiling
                started = time.time()
                per_call = counter.count(e.timer, number=plan.number, repeats=plan.repeats)
                send(protocol.Counted(index, InstructionCount(plan.number, tuple(per_call), started)))
                continue
            if e.track is not None:
                started = time.time()
                value = TrackedValue(e.track.value(), e.track.unit, e.track.better, started)
                send(protocol.Result(index, tracked=value))
                continue
            compiled = getattr(e.timer, "__regress_compiled__", None)
            if compiled is not None:
                compiled.first_call(e.spec.num_threads)  # timed apart: the Timer's warm-up must not hide it
            s = timing.measure(e.timer, min_run_time=job.min_run_time, warmup=job.warmup)
            stats = compiled.stats() if compiled is not None else None
            # After warm-up and timing, so lazy initialisation is not counted as the call's.
            try:
                used = memory.measure(e.timer)
            except Exception:  # noqa: BLE001 - e.g. the benchmark runs a profiler of its own: keep its times
                used = ()
        except Exception as exc:  # noqa: BLE001 - the benchmark's failure is data
            tb = traceback.extract_tb(exc.__traceback__)
            frame = next((f for f in reversed(tb) if not f.filename.startswith(str(Path(__file__).parent))), None)
            where = f"{frame.filename}:{frame.lineno}" if frame else e.origin
            send(protocol.Failed(index, Failure(FailureKind.ERROR, discover.describe(exc), where)))
        else:
            send(protocol.Result(index, s, tuple(used), stats))
        finally:
            sys.modules["__main__"] = main_module
    if job.reference and job.mode is JobMode.TIME:
        # Fixed code that is not the project's, timed in the same process state
        # as the suite: it tells a slow machine from a slow commit.
        send(protocol.Reference(reference.measure(min(reference.MIN_RUN_TIME, job.min_run_time))))
    send(protocol.Done())
