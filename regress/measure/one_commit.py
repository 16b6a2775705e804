"""One commit: its build, the workers that measure its suite, and saving what they report."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind
from regress.core.merge import Conflict, combine
from regress.core.records import (
    WORKTREE,
    BenchmarkId,
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.core.reporter import QUIET, Reporter
from regress.measure import callgrind, protocol
from regress.measure.conversation import Conversation
from regress.measure.job import Callgrind, JobMode, WorkerJob
from regress.measure.shard import Shard
from regress.measure.worker_process import DISCOVERY_TIMEOUT_FLOOR, callgrind_plan, start_worker, trace
from regress.storage.store import Store

# Finished benchmarks of a long commit are written at least this often, so a
# SIGKILL loses at most this much measuring.
CHECKPOINT_S = 30.0


def import_path(cfg: Config, code_dir: Path) -> Path:
    """Where a commit's code is imported from: `import_path` of the config, else src/ if it has one."""
    if cfg.import_path:
        return code_dir / cfg.import_path
    return code_dir / "src" if (code_dir / "src").is_dir() else code_dir


def key(spec: TaskSpec) -> BenchmarkId:
    """What a commit's results are keyed by: the benchmark's identity, whole."""
    return spec.id


@dataclass(frozen=True)
class Request:
    """One commit to measure: where its code and suite are, how, and what to leave out."""

    info: CommitInfo
    settings: Settings
    code_dir: Path
    suite_dir: Path
    shown_root: Path  # file names in origins are shown relative to it
    skip: frozenset[BenchmarkId] = frozenset()
    shard: Shard | None = None
    listing: bool = False  # discover only (`regress list`)


def job_for(cfg: Config, req: Request, *, mode: JobMode | None = None, trace_dir: Path | None = None) -> WorkerJob:
    """The worker's job for `req`: the one place a job is built (`mode`: other than the settings' mode)."""
    mode = mode or (JobMode.LIST if req.listing else JobMode(req.settings.mode))
    counter = None
    if mode is JobMode.INSTRUCTIONS:
        plan = callgrind_plan()
        counter = Callgrind(plan.out_dir, plan.helper, callgrind.NUMBER, callgrind.REPEATS)
    return WorkerJob(
        cwd=req.code_dir,
        import_path=import_path(cfg, req.code_dir),
        benchmarks_dir=req.suite_dir,
        shown_root=req.shown_root,
        machine=cfg.machine_name,
        env=cfg.env,
        mode=mode,
        min_run_time=req.settings.min_run_time,
        warmup=req.settings.warmup,
        bench_filter=req.settings.bench_filter,
        shard=req.shard,
        skip=tuple(sorted(req.skip)),
        reference=mode is JobMode.TIME,
        callgrind=counter,
        trace_dir=trace_dir,
        pytest_args=cfg.pytest_args,
    )


@dataclass
class Collector:
    """What one commit's workers have reported so far."""

    results: dict[BenchmarkId, BenchmarkResult] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    fingerprint: Fingerprint | None = None
    total: int | None = None
    listed: list[tuple[TaskSpec, str, str | None]] = field(default_factory=list)
    reference: list[Sample] = field(default_factory=list)  # the reference workload's round(s)
    run: str = ""  # the run these rounds belong to: stamped on every Sample
    notes: list = field(default_factory=list)  # what under the benchmark path is not a benchmark (files.Note)


def measure_commit(
    cfg: Config,
    req: Request,
    progress: Reporter = QUIET,
    *,
    collector: Collector | None = None,
    on_result: Callable[[], None] | None = None,
) -> Collector:
    """Run the suite of `req` in as many workers as it takes (`on_result`: after each benchmark)."""
    got = collector if collector is not None else Collector()
    restarts = 0
    while True:
        job = job_for(cfg, replace(req, skip=frozenset(req.skip) | set(got.results)))
        if not _drive(cfg, job, got, progress, req.settings, first=restarts == 0, on_result=on_result):
            return got
        restarts += 1
        if restarts > (got.total or 0) + 2:  # every benchmark had its chance
            got.failures.append(Failure(FailureKind.CRASH, f"gave up after {restarts} worker restarts"))
            return got


# Notes said in this process: `run` names each thing that is not a benchmark once, not once a commit.
_said: set[str] = set()


def _drive(cfg, job: WorkerJob, got: Collector, progress: Reporter, settings: Settings, *, first: bool, on_result):
    """One worker's life; True when a fresh worker should take the benchmarks left."""
    trace("worker_start", sha_dir=str(job.cwd))
    worker = start_worker(cfg, job, max(settings.timeout, DISCOVERY_TIMEOUT_FLOOR))
    with Conversation(worker, settings.timeout) as talk:
        for msg in talk.messages():
            if isinstance(msg, protocol.Hello):
                trace("hello")
                got.fingerprint = msg.fingerprint
            elif isinstance(msg, protocol.Discovered):
                trace("discovered", count=len(msg.benchmarks))
                got.listed = [(b.spec, b.origin, b.skip) for b in msg.benchmarks]
                if msg.mistake:
                    raise RegressError(msg.mistake)
                if first:
                    got.notes = list(msg.notes)
                    for note in msg.notes:
                        if str(note) not in _said:
                            _said.add(str(note))
                            progress.say(str(note))
                    got.failures.extend(msg.failures)
                    got.total = len(msg.benchmarks)
                    progress.benchmarks_found(len(msg.benchmarks))
            elif isinstance(msg, protocol.Start):
                trace("bench_start", index=msg.index)
                progress.benchmark_started(str(talk.listed[msg.index].spec.id))
            elif isinstance(msg, protocol.ENDS_ONE):
                trace("bench_end", index=msg.index)
                _record(got, talk.listed[msg.index], msg, worker)
                progress.benchmark_finished()
                if on_result is not None:
                    on_result()
            elif isinstance(msg, protocol.Reference):
                trace("reference")
                got.reference.append(_stamped(msg.sample, got, worker))
            elif isinstance(msg, protocol.Done):
                trace("worker_done")
    if talk.failure is not None:
        blamed = talk.blamed
        if blamed is None:
            got.failures.append(talk.failure)
        else:
            got.results[key(blamed.spec)] = BenchmarkResult(blamed.spec, blamed.origin, failure=talk.failure)
            progress.benchmark_finished()
    return talk.restart


def _record(got: Collector, b: protocol.Listed, msg, worker) -> None:
    """One benchmark's end, as the result kept for it."""
    if isinstance(msg, protocol.Result):
        samples = (_stamped(msg.sample, got, worker),) if msg.sample is not None else ()
        tracked = (msg.tracked,) if msg.tracked is not None else ()
        compiled = (msg.compiled,) if msg.compiled is not None else ()
        res = BenchmarkResult(b.spec, b.origin, samples, memory=msg.memory, compiled=compiled, tracked=tracked)
    elif isinstance(msg, protocol.Counted):
        res = BenchmarkResult(b.spec, b.origin, counts=(msg.count,))
    elif isinstance(msg, protocol.Failed):
        res = BenchmarkResult(b.spec, b.origin, failure=msg.failure)
    else:  # a profile is not a measurement: `profile_commit` reads those
        res = BenchmarkResult(b.spec, b.origin, failure=Failure(FailureKind.CRASH, "profiled when asked to measure"))
    got.results[key(b.spec)] = res


def _stamped(sample: Sample, got: Collector, worker) -> Sample:
    """A reported round, with the run and the process it came from."""
    return replace(sample, run=got.run, process=worker.proc.origin)


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
    replaced: list[Conflict] = field(default_factory=list)

    def unsaved(self, got: Collector) -> list[BenchmarkResult]:
        if self.base.commit.sha == WORKTREE:
            return list(got.results.values())
        return [r for key, r in got.results.items() if key not in self.saved]

    def this_round(self, got: Collector, *, complete: bool, everything: bool = False) -> CommitResult:
        fingerprint = got.fingerprint or self.base.fingerprint
        return replace(
            self.base,
            fingerprint=fingerprint,
            runs=tuple(replace(r, fingerprint=r.fingerprint or got.fingerprint) for r in self.base.runs),
            results=tuple(got.results.values()) if everything else tuple(self.unsaved(got)),
            failures=tuple(got.failures),
            reference=tuple(got.reference) if everything else tuple(got.reference[self.reference_saved :]),
            complete=complete,
            finished_at=time.time(),
        )

    def merged(self, got: Collector) -> CommitResult:
        """Everything this run measured for the commit, this round included."""
        mine = self.this_round(got, complete=True, everything=True)
        return mine if self.earlier is None else combine(self.earlier, mine, latest=True)[0]

    def save(self, got: Collector, *, complete: bool) -> None:
        if self.base.commit.sha == WORKTREE:
            result = replace(self.merged(got), complete=complete)
        else:
            result = self.this_round(got, complete=complete)
        self.store.save(result, self.replaced)
        self.saved.update(got.results)
        self.reference_saved = len(got.reference)
        self.last = time.monotonic()

    def checkpoint(self, got: Collector, every: float = CHECKPOINT_S) -> None:
        if time.monotonic() - self.last >= every and self.unsaved(got):
            self.save(got, complete=False)
