"""One commit: its build, the workers that measure its suite, and saving what they report."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from regress.core.config import Config
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
from regress.core.reporter import Reporter
from regress.measure import callgrind, protocol
from regress.measure.shard import Shard
from regress.measure.worker_process import (
    DISCOVERY_TIMEOUT_FLOOR,
    WorkerDied,
    WorkerHung,
    callgrind_plan,
    start_worker,
    trace,
)
from regress.storage.store import Store

# Finished benchmarks of a long commit are written at least this often, so a
# SIGKILL loses at most this much measuring.
CHECKPOINT_S = 30.0


def _import_path(cfg: Config, code_dir: Path) -> Path:
    if cfg.import_path:
        return code_dir / cfg.import_path
    return code_dir / "src" if (code_dir / "src").is_dir() else code_dir


# Public: `profile` starts workers of its own for the same commit checkouts.
import_path = _import_path


def key(spec: TaskSpec) -> BenchmarkId:
    """What a commit's results are keyed by: the benchmark's identity, whole."""
    return spec.id


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


def measure_commit(
    cfg: Config,
    *,
    code_dir: Path,
    suite_dir: Path,
    shown_root: Path,
    info: CommitInfo,
    settings: Settings,
    progress: Reporter,
    skip: set[BenchmarkId] = frozenset(),  # type: ignore[assignment]
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
            "skip": [dataclasses.astuple(k) for k in set(skip) | set(got.results)],
            "mode": "list" if mode == "list" else settings.mode,
            "reference": mode != "list",
        }
        if job["mode"] == "instructions":
            plan = callgrind_plan()
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
            got.failures.append(Failure(FailureKind.CRASH, f"gave up after {restarts} worker restarts"))
            return got


def _drive(cfg, job, got: Collector, progress: Reporter, settings: Settings, *, first: bool, on_result=None) -> bool:
    """One worker's life. True when the suite is done, False to start another."""
    trace("worker_start", sha_dir=job["cwd"])
    worker = start_worker(cfg, job, max(settings.timeout, DISCOVERY_TIMEOUT_FLOOR))
    todo: list[tuple[TaskSpec, str]] = []
    current: int | None = None
    discovered = False
    try:
        for msg in worker.messages():
            kind = msg["type"]
            if kind == "hello":
                trace("hello")
                got.fingerprint = protocol.fingerprint(msg["fingerprint"])
            elif kind == "discovered":
                trace("discovered", count=len(msg["benchmarks"]))
                discovered = True
                worker.timeout = settings.timeout  # from here on, the per-benchmark limit
                todo = [(protocol.spec(b["spec"]), b["origin"]) for b in msg["benchmarks"]]
                got.listed = [(spec, origin, b.get("skip")) for (spec, origin), b in zip(todo, msg["benchmarks"])]
                if first:
                    got.failures.extend(protocol.failure(f) for f in msg["failures"])
                    got.total = len(todo)
                    progress.benchmarks_found(len(todo))
            elif kind == "start":
                trace("bench_start", index=msg["index"])
                current = msg["index"]
                progress.benchmark_started(str(todo[current][0].id))
            elif kind in ("result", "counted", "failed"):
                trace("bench_end", index=msg["index"])
                spec, origin = todo[msg["index"]]
                if kind == "result":
                    res = BenchmarkResult(
                        spec,
                        origin,
                        (_stamped(msg["sample"], got, worker),) if msg.get("sample") else (),
                        memory=protocol.memory(msg.get("memory")),
                        compiled=protocol.compiled(msg.get("compiled")),
                        tracked=protocol.tracked(msg.get("tracked")),
                    )
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
                trace("reference")
                got.reference.append(_stamped(msg["sample"], got, worker))
            elif kind == "done":
                trace("worker_done")
                return True
    except WorkerHung:
        worker.kill()
        if current is None:
            phase = "importing the suites" if not discovered else "between benchmarks"
            got.failures.append(
                Failure(
                    FailureKind.TIMEOUT,
                    f"worker silent for {worker.timeout:g}s while {phase}; {worker.tail() or 'no output'}",
                )
            )
            return True
        spec, origin = todo[current]
        got.results[key(spec)] = BenchmarkResult(
            spec,
            origin,
            failure=Failure(
                FailureKind.TIMEOUT,
                f"still running after {settings.timeout:g}s (timeout; raise it with --timeout)",
                origin,
            ),
        )
        progress.benchmark_finished()
        return False
    except WorkerDied:
        why = worker.death()
        if current is None:
            if not discovered:
                got.failures.append(Failure(FailureKind.CRASH, f"{why} while importing the suites"))
                return True
            # Died between benchmarks: nothing to blame; a fresh worker takes the rest.
            got.failures.append(Failure(FailureKind.CRASH, f"{why} between benchmarks"))
            return False
        spec, origin = todo[current]
        got.results[key(spec)] = BenchmarkResult(spec, origin, failure=Failure(FailureKind.CRASH, why, origin))
        progress.benchmark_finished()
        return False
    finally:
        worker.kill()
    return True


def _stamped(raw, got: Collector, worker) -> Sample:
    """A reported round, with the run and the process it came from."""
    return replace(protocol.sample(raw), run=got.run, process=worker.proc.origin)


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
