"""Measure commits: worktree, build, worker processes, and what to do when they fail.

The parent never imports torch: each commit costs one worker start. A worker
that dies (segfault, abort) or hangs (per-benchmark timeout) is recorded
against the benchmark it was running and a fresh worker takes the rest.
Interrupted (Ctrl-C, SIGTERM) or killed, a range keeps every finished commit
on disk whole; a commit cut short is kept marked incomplete, and
`--skip-existing` later measures only what it lacks.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Callable, Iterator, Protocol

from regress import __version__
from regress.measure import callgrind
from regress.storage import gitrepo
from regress.measure import pool
from regress.measure import protocol
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.records import (
    WORKTREE,
    merge_results,
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.measure.shard import Shard
from regress.storage.store import Store

WORKER = Path(__file__).with_name("worker.py")

# Starting a worker (interpreter, `import torch`, the suites) is not a
# benchmark: it gets at least this long, however short --timeout is.
DISCOVERY_TIMEOUT_FLOOR = 600.0
# A build_command compiles; a per-benchmark timeout is no limit for it.
BUILD_TIMEOUT_FLOOR = 3600.0
# Finished benchmarks of a long commit are written at least this often, so a
# SIGKILL loses at most this much measuring.
CHECKPOINT_S = 30.0


def _trace(event: str, **fields) -> None:
    """Timestamps for scripts/overhead.py, written only when REGRESS_TRACE names a file."""
    path = os.environ.get("REGRESS_TRACE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")


class Progress(Protocol):
    def benchmarks_found(self, total: int) -> None: ...
    def benchmark_started(self, name: str) -> None: ...
    def benchmark_finished(self) -> None: ...
    def commit_finished(self, result: CommitResult | None, skipped: bool = False) -> None: ...


class NoProgress:
    def benchmarks_found(self, total): ...
    def benchmark_started(self, name): ...
    def benchmark_finished(self): ...
    def commit_finished(self, result, skipped=False): ...


@dataclass(frozen=True)
class Options:
    revisions: tuple[str, ...] = ("HEAD",)
    skip_existing: bool = False
    bench: str = ""
    benchmarks_from: str = "worktree"  # or "commit"
    mode: str = "time"
    shard: Shard | None = None  # --shard K/N: only this share of the benchmarks


@dataclass
class RunSummary:
    measured: list[CommitResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class WorkerDied(Exception):
    pass


class WorkerHung(Exception):
    pass


# -- one worker process -------------------------------------------------


@dataclass
class _Worker:
    proc: pool.Process
    fd: int
    log: IO[bytes]  # the worker's stdout/stderr; unlinked, so a SIGKILL leaves nothing behind
    timeout: float
    buffer: bytes = b""

    def messages(self) -> Iterator[dict]:
        """Messages as they come; WorkerHung if none arrives within `self.timeout` (read anew each time)."""
        sel = selectors.DefaultSelector()
        sel.register(self.fd, selectors.EVENT_READ)
        try:
            while True:
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    yield protocol.decode(line)
                if not sel.select(self.timeout):
                    raise WorkerHung()
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise WorkerDied()
                self.buffer += chunk
        finally:
            sel.close()

    def kill(self) -> None:
        self.proc.kill()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.log.close()

    def tail(self, lines: int = 3) -> str:
        """The last lines it printed; only once it is dead (the file offset is shared)."""
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(max(0, self.log.seek(0, os.SEEK_END) - 4096))
            text = self.log.read().decode("utf-8", errors="replace").strip().splitlines()
            return " | ".join(line.strip() for line in text[-lines:])
        return ""

    def death(self) -> str:
        """Why it died, with the tail of what it printed."""
        code = self.proc.wait()
        if code < 0:
            try:
                why = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                why = f"killed by signal {-code}"
        else:
            why = f"exited with status {code}"
        tail = self.tail()
        return f"worker {why}" + (f"; last output: {tail}" if tail else "")


@functools.cache
def _callgrind_plan() -> callgrind.Plan:
    """Valgrind checked and the helper compiled once per regress process."""
    work = Path(tempfile.mkdtemp(prefix="regress-callgrind-"))
    atexit.register(shutil.rmtree, work, True)
    return callgrind.prepare(work)


def _worker_env(cfg: Config) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "REGRESS_PARENT_PID": str(os.getpid())}
    # Bytecode of the user's suites and of each commit's code goes under the
    # results folder, never into the checkout regress was asked to measure.
    env["PYTHONPYCACHEPREFIX"] = str(cfg.results_dir / ".pycache")
    return env


def _worker_command(cfg: Config, job: dict, fd: int) -> tuple[list[str], dict]:
    env = _worker_env(cfg)
    cmd = [cfg.python_exe, str(WORKER), str(fd)]
    if job["mode"] == "instructions":
        # One valgrind process for the whole suite. One OpenMP/MKL thread and a
        # fixed hash seed keep repeated counts identical.
        cmd = callgrind.command(_callgrind_plan(), cfg.python_exe) + cmd[1:]
        # No bytecode writing either: whether a .pyc is written depends on what an
        # earlier run left, and it moved counts by about 2%.
        env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return cmd, env


# Fork servers by interpreter, for this regress process; closed by close_servers().
_servers: dict[str, pool.ForkServer] = {}
# Set REGRESS_FORK=0 to give every worker a fresh interpreter, as before fork servers.
_FORK = os.environ.get("REGRESS_FORK", "1") != "0"
# Interpreters whose server could not start (no torch, say): fresh workers report why.
_no_server: set[str] = set()


def _server(cfg: Config) -> pool.ForkServer | None:
    if not _FORK:
        return None
    if cfg.python_exe in _no_server:
        return None
    server = _servers.get(cfg.python_exe)
    if server is None:
        server = _servers[cfg.python_exe] = pool.ForkServer(cfg.python_exe, _worker_env(cfg), str(cfg.root))
    return server


def close_servers() -> None:
    while _servers:
        _servers.popitem()[1].close()


atexit.register(close_servers)


def _start_worker(cfg: Config, job: dict, timeout: float) -> _Worker:
    read_fd, write_fd = os.pipe()
    log = tempfile.TemporaryFile(prefix="regress-worker-")
    server = _server(cfg) if job["mode"] != "instructions" else None
    if server is not None:
        starting = not server.alive
        try:
            proc = server.fork(job, write_fd, log)
            if starting:
                _trace("server_started", seconds=server.start_seconds)
        except pool.ServerFailed as exc:
            # The interpreter can't even import torch: a fresh worker fails the
            # way it always did, with its own output, and the range goes on.
            _trace("server_failed", why=str(exc))
            _servers.pop(cfg.python_exe, None)
            _no_server.add(cfg.python_exe)
        else:
            os.close(write_fd)
            return _Worker(proc, read_fd, log, timeout)
    cmd, env = _worker_command(cfg, job, write_fd)
    try:
        popen = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=job["cwd"],
            pass_fds=(write_fd,),
            start_new_session=True,  # Ctrl-C is the parent's to handle; kill takes the whole group
            env=env,
        )
    except OSError as exc:
        os.close(read_fd)
        log.close()
        raise RegressError(f"cannot start the worker interpreter {cfg.python_exe}: {exc.strerror}; check --python") from None
    finally:
        os.close(write_fd)
    assert popen.stdin is not None
    try:
        popen.stdin.write(json.dumps(job).encode())
        popen.stdin.close()
    except BrokenPipeError:
        pass
    return _Worker(pool.Fresh(popen), read_fd, log, timeout)


# -- one commit ---------------------------------------------------------


def _import_path(cfg: Config, code_dir: Path) -> Path:
    if cfg.import_path:
        return code_dir / cfg.import_path
    return code_dir / "src" if (code_dir / "src").is_dir() else code_dir


def key(spec: TaskSpec) -> tuple:
    i = spec.id
    return (i.label, i.sub_label, i.description, i.num_threads)


@dataclass
class Collector:
    """What one commit's workers have reported so far."""

    results: dict[tuple, BenchmarkResult] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    fingerprint: Fingerprint | None = None
    total: int | None = None
    listed: list[tuple[TaskSpec, str, str | None]] = field(default_factory=list)
    reference: list[Sample] = field(default_factory=list)  # the reference workload's round(s)


def measure_commit(
    cfg: Config,
    *,
    code_dir: Path,
    suite_dir: Path,
    shown_root: Path,
    info: CommitInfo,
    settings: Settings,
    progress: Progress,
    skip: set[tuple] = frozenset(),  # type: ignore[assignment]
    mode: str = "measure",
    collector: Collector | None = None,
    on_result: Callable[[], None] | None = None,
    shard: Shard | None = None,
) -> Collector:
    """Run the suite against `code_dir` in as many workers as it takes."""
    got = collector if collector is not None else Collector()
    restarts = 0
    while True:
        job = {
            "cwd": str(code_dir),
            "import_path": str(_import_path(cfg, code_dir)),
            "benchmarks_dir": str(suite_dir),
            "shown_root": str(shown_root),
            "machine": cfg.machine_name,
            "env": cfg.env,
            "min_run_time": settings.min_run_time,
            "warmup": settings.warmup,
            "bench_filter": settings.bench_filter,
            "shard": [shard.index, shard.total] if shard else None,
            "skip": [list(k) for k in set(skip) | set(got.results)],
            "mode": "list" if mode == "list" else settings.mode,
            "reference": mode != "list",
        }
        if job["mode"] == "instructions":
            plan = _callgrind_plan()
            job.update(
                callgrind_dir=str(plan.out_dir),
                callgrind_helper=str(plan.helper) if plan.helper else None,
                instr_number=callgrind.NUMBER,
                instr_repeats=callgrind.REPEATS,
            )
        if _drive(cfg, job, got, progress, settings, first=restarts == 0, on_result=on_result):
            return got
        restarts += 1
        if restarts > (got.total or 0) + 2:  # every benchmark had its chance
            got.failures.append(Failure("crash", f"gave up after {restarts} worker restarts"))
            return got


def _drive(cfg, job, got: Collector, progress: Progress, settings: Settings, *, first: bool, on_result=None) -> bool:
    """One worker's life. True when the suite is done, False to start another."""
    _trace("worker_start", sha_dir=job["cwd"])
    worker = _start_worker(cfg, job, max(settings.timeout, DISCOVERY_TIMEOUT_FLOOR))
    todo: list[tuple[TaskSpec, str]] = []
    current: int | None = None
    discovered = False
    try:
        for msg in worker.messages():
            kind = msg["type"]
            if kind == "hello":
                _trace("hello")
                got.fingerprint = protocol.fingerprint(msg["fingerprint"])
            elif kind == "discovered":
                _trace("discovered", count=len(msg["benchmarks"]))
                discovered = True
                worker.timeout = settings.timeout  # from here on, the per-benchmark limit
                todo = [(protocol.spec(b["spec"]), b["origin"]) for b in msg["benchmarks"]]
                got.listed = [(spec, origin, b.get("skip")) for (spec, origin), b in zip(todo, msg["benchmarks"])]
                if first:
                    got.failures.extend(protocol.failure(f) for f in msg["failures"])
                    got.total = len(todo)
                    progress.benchmarks_found(len(todo))
            elif kind == "start":
                _trace("bench_start", index=msg["index"])
                current = msg["index"]
                progress.benchmark_started(str(todo[current][0].id))
            elif kind in ("result", "counted", "failed"):
                _trace("bench_end", index=msg["index"])
                spec, origin = todo[msg["index"]]
                if kind == "result":
                    res = BenchmarkResult(spec, origin, (protocol.sample(msg["sample"]),))
                elif kind == "counted":
                    res = BenchmarkResult(spec, origin, counts=(protocol.count(msg["count"]),))
                else:
                    res = BenchmarkResult(spec, origin, failure=protocol.failure(msg["failure"]))
                got.results[key(spec)] = res
                current = None
                progress.benchmark_finished()
                if on_result is not None:
                    on_result()
            elif kind == "reference":
                _trace("reference")
                got.reference.append(protocol.sample(msg["sample"]))
            elif kind == "done":
                _trace("worker_done")
                return True
    except WorkerHung:
        worker.kill()
        if current is None:
            phase = "importing the suites" if not discovered else "between benchmarks"
            got.failures.append(Failure("timeout", f"worker silent for {worker.timeout:g}s while {phase}; {worker.tail() or 'no output'}"))
            return True
        spec, origin = todo[current]
        got.results[key(spec)] = BenchmarkResult(
            spec, origin, failure=Failure("timeout", f"still running after {settings.timeout:g}s (timeout; raise it with --timeout)", origin)
        )
        progress.benchmark_finished()
        return False
    except WorkerDied:
        why = worker.death()
        if current is None:
            if not discovered:
                got.failures.append(Failure("crash", f"{why} while importing the suites"))
                return True
            # Died between benchmarks: nothing to blame; a fresh worker takes the rest.
            got.failures.append(Failure("crash", f"{why} between benchmarks"))
            return False
        spec, origin = todo[current]
        got.results[key(spec)] = BenchmarkResult(spec, origin, failure=Failure("crash", why, origin))
        progress.benchmark_finished()
        return False
    finally:
        worker.kill()
    return True


def build(cfg: Config, code_dir: Path) -> Failure | None:
    if not cfg.build_command:
        return None
    limit = max(cfg.timeout, BUILD_TIMEOUT_FLOOR)
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            cfg.build_command,
            shell=True,
            cwd=code_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a timeout or Ctrl-C stops the compiler too, not just the shell
        )
        try:
            code = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return Failure("build", f"build_command still running after {limit:g}s", cfg.build_command)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if code != 0:
            out.seek(0)
            tail = " | ".join(out.read().decode(errors="replace").strip().splitlines()[-3:])
            return Failure("build", f"exited with status {code}: {tail}", cfg.build_command)
    return None


# -- a range of commits -------------------------------------------------


def settings_for(cfg: Config, options: Options) -> Settings:
    return Settings(
        mode=options.mode,
        min_run_time=cfg.min_run_time,
        warmup=cfg.warmup,
        timeout=cfg.timeout,
        benchmarks_from=options.benchmarks_from,
        bench_filter=options.bench,
        regress_version=__version__,
    )


def list_benchmarks(cfg: Config) -> Collector:
    """Discover the working tree's suites against the working tree's code."""
    _require_suites(cfg)
    return measure_commit(
        cfg,
        code_dir=cfg.root,
        suite_dir=cfg.benchmarks_dir,
        shown_root=cfg.root,
        info=CommitInfo(WORKTREE, (), "", "", 0, 0, ""),
        settings=Settings(timeout=cfg.timeout),
        progress=NoProgress(),
        mode="list",
    )


def _require_suites(cfg: Config) -> None:
    if not cfg.benchmarks_dir.is_dir():
        raise RegressError(
            f"no benchmark folder {cfg.benchmarks_dir}; create it with a bench_*.py suite, "
            "or set benchmarks = \"...\" in [tool.regress] of pyproject.toml"
        )


def _check(options: Options) -> None:
    if options.benchmarks_from not in ("worktree", "commit"):
        raise RegressError(f"--benchmarks-from must be 'worktree' or 'commit', not {options.benchmarks_from!r}")
    try:
        re.compile(options.bench)
    except re.error as exc:
        raise RegressError(f"--bench {options.bench!r} is not a regular expression ({exc}); quote it, or escape the special characters") from None


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """A cancelled CI job (SIGTERM) cleans up and keeps finished work, like Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run(cfg: Config, options: Options, progress=None) -> RunSummary:
    """Measure the commits `options` names, interleaved in rounds; each round saved as it finishes."""
    from regress.measure import engine

    progress = progress or engine.RoundProgress()
    _check(options)
    _trace("run_start")
    repo = gitrepo.open_repo(cfg.root)
    if options.benchmarks_from == "worktree":
        _require_suites(cfg)
    revs = list(options.revisions) or ["HEAD"]
    wants_worktree = WORKTREE in revs
    shas = gitrepo.resolve(repo, [r for r in revs if r != WORKTREE])
    store = Store(cfg.results_dir)
    budget = engine.budget_for(cfg, options.mode)
    settings = engine.with_plan(settings_for(cfg, options), budget)
    summary = RunSummary()
    with _sigterm_as_interrupt(), store.lock():
        gitrepo.prune_stale_worktrees(repo)
        plan: list[str] = []
        top_up: dict[str, CommitResult | None] = {}
        for sha in shas:
            existing = store.load(cfg.machine_name, cfg.env, sha) if options.skip_existing else None
            if existing is not None and existing.complete and options.shard is None:
                summary.skipped.append(sha)
                continue
            plan.append(sha)  # interrupted earlier, or holds other shards' share: top up what it lacks
            top_up[sha] = existing
        if wants_worktree:
            plan.append(WORKTREE)
        try:
            with engine.checked_out(cfg, repo, plan, lambda sha: settings, top_up) as targets:
                engine.add_stored_parents(cfg, store, targets)
                try:
                    engine.measure_targets(cfg, store, targets, budget, progress, shard=options.shard)
                finally:
                    summary.measured = [t.measured for t in targets if t.measured is not None]
        finally:
            close_servers()
    _trace("run_end")
    return summary


@dataclass
class Saver:
    """Writes one round of one commit to the store: at checkpoints while it runs, and at the end.

    Each write carries only results not yet written (the store merges them
    into the file), except for the WORKTREE, whose file every write replaces:
    its writes carry `earlier` (this run's previous rounds) merged with this one.
    """

    store: Store
    base: CommitResult
    earlier: CommitResult | None = None
    saved: set = field(default_factory=set)
    reference_saved: int = 0
    last: float = field(default_factory=time.monotonic)

    def unsaved(self, got: Collector) -> list[BenchmarkResult]:
        if self.base.commit.sha == WORKTREE:
            return list(got.results.values())
        return [r for key, r in got.results.items() if key not in self.saved]

    def this_round(self, got: Collector, *, complete: bool, everything: bool = False) -> CommitResult:
        return replace(
            self.base,
            fingerprint=got.fingerprint or self.base.fingerprint,
            results=tuple(got.results.values()) if everything else tuple(self.unsaved(got)),
            failures=tuple(got.failures),
            reference=tuple(got.reference) if everything else tuple(got.reference[self.reference_saved :]),
            complete=complete,
            finished_at=time.time(),
        )

    def merged(self, got: Collector) -> CommitResult:
        """Everything this run measured for the commit, this round included."""
        mine = self.this_round(got, complete=True, everything=True)
        return mine if self.earlier is None else merge_results(self.earlier, mine)

    def save(self, got: Collector, *, complete: bool) -> None:
        if self.base.commit.sha == WORKTREE:
            result = replace(self.merged(got), complete=complete)
        else:
            result = self.this_round(got, complete=complete)
        self.store.save(result)
        self.saved.update(got.results)
        self.reference_saved = len(got.reference)
        self.last = time.monotonic()

    def checkpoint(self, got: Collector, every: float = CHECKPOINT_S) -> None:
        if time.monotonic() - self.last >= every and self.unsaved(got):
            self.save(got, complete=False)
