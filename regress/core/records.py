"""The records regress keeps: frozen, pure, and the only classes a result file may hold.

Mirrors torch's split between a frozen task spec (`TaskSpec`) and what was measured
for it (`Sample`, one round). torch's Measurement is not pickled (its private caches
change between releases); `output/compare_tables.py` rebuilds it on load. No I/O.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from regress.core.kinds import BenchmarksFrom, Better, FailureKind, Mode
from regress.core.plain_kinds import PlainKinds
from regress.core.timing import Timing

WORKTREE = "WORKTREE"  # the uncommitted working tree's name; can never be a sha
# A track_* value's TaskSpec.stmt starts so: it is returned, not timed.
TRACK_STMT = "track: "


@dataclass(frozen=True, order=True)
class BenchmarkId:
    """A benchmark's identity: what a row of history is keyed by."""

    label: str
    sub_label: str
    description: str
    num_threads: int

    def __str__(self) -> str:
        parts = [self.label, self.sub_label]
        if self.description:
            parts.append(self.description)
        threads = "thread" if self.num_threads == 1 else "threads"
        return " / ".join(parts) + f" [{self.num_threads} {threads}]"


@dataclass(frozen=True)
class TaskSpec:
    """What torch's TaskSpec holds, with the defaults regress fills in."""

    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    label: str = ""
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def id(self) -> BenchmarkId:
        # torch's Compare names a row by sub_label, else by stmt.
        return BenchmarkId(self.label, self.sub_label or self.stmt, self.description or "", self.num_threads)


@dataclass(frozen=True)
class Sample:
    """One round: one blocked_autorange in one worker process.

    raw_times are seconds per block of `number_per_run` executions, exactly as
    torch's Measurement keeps them.
    """

    number_per_run: int
    raw_times: tuple[float, ...]
    started_at: float = 0.0
    # Format 6: the run that took this round; the process it was forked from (a server's pid).
    run: str = ""
    process: int = 0

    @property
    def times(self) -> tuple[float, ...]:
        """Seconds per single execution, one per block."""
        return tuple(t / self.number_per_run for t in self.raw_times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass(frozen=True)
class InstructionCount:
    """One callgrind run of a benchmark: instructions per call, one per repeat.

    Kept apart from wall times, never averaged with them. The first repeat is
    kept but not used: Python specialises its bytecode during it.
    """

    number: int
    per_call: tuple[int, ...]
    started_at: float = 0.0

    @property
    def value(self) -> int:
        kept = self.per_call[1:] if len(self.per_call) > 1 else self.per_call
        return int(statistics.median(kept))


@dataclass(frozen=True)
class MemoryUse:
    """One call after warm-up, as torch's allocator saw it: exact bytes, not load-dependent.

    allocated: bytes allocated during the call (every allocation, freed or not);
    peak: the most bytes held during the call above what was held before it.
    device: "cpu" (the profiler's memory events) or "cuda" (the caching allocator's stats).
    """

    allocated: int
    peak: int
    device: str = "cpu"
    started_at: float = 0.0


@dataclass(frozen=True)
class CompileStats:
    """A `compile=True` benchmark's first call and dynamo's counts after steady state.

    recompiles: frames dynamo compiled after the first call (guards that failed).
    """

    compile_time: float
    graphs: int
    graph_breaks: int
    recompiles: int
    started_at: float = 0.0


@dataclass(frozen=True)
class TrackedValue(PlainKinds):
    """What a `track_*` function returned at a commit, one per round (`better`: a Better or its name)."""

    value: float
    unit: str = ""
    better: Better = Better.LOWER
    started_at: float = 0.0


@dataclass(frozen=True)
class Failure:
    """Why a benchmark or a whole commit has no (or incomplete) samples (`kind`: a FailureKind or its name)."""

    kind: FailureKind
    message: str
    where: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", FailureKind(self.kind))

    def __str__(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}{self.kind}: {self.message}"


@dataclass(frozen=True)
class BenchmarkResult:
    spec: TaskSpec
    origin: str
    samples: tuple[Sample, ...] = ()
    failure: Failure | None = None
    counts: tuple[InstructionCount, ...] = ()
    # Format 5: memory per call (one or two a round: cpu, cuda), a compiled
    # benchmark's figures (one a round), a track_* function's values.
    memory: tuple[MemoryUse, ...] = ()
    compiled: tuple[CompileStats, ...] = ()
    tracked: tuple[TrackedValue, ...] = ()

    @property
    def id(self) -> BenchmarkId:
        return self.spec.id

    @property
    def ok(self) -> bool:
        """Has wall-time samples and its latest attempt did not fail."""
        return self.failure is None and bool(self.samples)

    @property
    def counted(self) -> bool:
        """Has instruction counts and its latest attempt did not fail."""
        return self.failure is None and bool(self.counts)

    @property
    def is_tracked(self) -> bool:
        """A track_* value, not a timed benchmark (its spec's stmt says so)."""
        return bool(self.tracked) or self.spec.stmt.startswith(TRACK_STMT)

    @property
    def instructions(self) -> int:
        """Instructions per call: median over every stored callgrind run."""
        return int(statistics.median(c.value for c in self.counts))

    @property
    def times(self) -> tuple[float, ...]:
        """Per-execution times of every round together."""
        return tuple(t for s in self.samples for t in s.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author: str
    author_email: str
    authored_at: int
    committed_at: int
    subject: str

    @property
    def short(self) -> str:
        return self.sha if self.sha == WORKTREE else self.sha[:10]


@dataclass(frozen=True)
class Fingerprint:
    """The machine and environment a result was measured on."""

    machine: str
    hostname: str = ""
    platform: str = ""
    cpu: str = ""
    cores: int = 0
    python: str = ""
    executable: str = ""
    torch_version: str = ""
    torch_git: str = ""
    torch_debug: bool = False
    torch_config: str = ""
    cuda_version: str = ""
    cuda_device: str = ""
    cuda_driver: str = ""


@dataclass(frozen=True)
class Run:
    """One invocation that measured (kind: run, check, bisect, measure; "file" for format <= 5):
    rounds of one run share its machine and its luck."""

    id: str
    kind: str = "run"
    started_at: float = 0.0
    fingerprint: Fingerprint | None = None


@dataclass(frozen=True)
class Settings(Timing, PlainKinds):
    """How a commit was measured (mode and benchmarks_from given as their Enums or their names)."""

    mode: Mode = Mode.TIME
    benchmarks_from: BenchmarksFrom = BenchmarksFrom.WORKTREE
    bench_filter: str = ""
    regress_version: str = ""
    # The round plan (`adaptive.Budget`); results older than rounds by default read as 1/1/0.
    min_rounds: int = 1
    max_rounds: int = 1
    budget: float = 0.0


@dataclass(frozen=True)
class CommitResult:
    """Everything measured for one commit on one machine in one environment."""

    commit: CommitInfo
    machine: str
    env: str
    fingerprint: Fingerprint
    settings: Settings
    results: tuple[BenchmarkResult, ...] = ()
    # Problems that are not one benchmark's: broken suite files, failed build.
    failures: tuple[Failure, ...] = ()
    complete: bool = True
    started_at: float = 0.0
    finished_at: float = 0.0
    # The reference workload (`reference.py`), one Sample per round, timed in
    # the same worker processes as the benchmarks: the machine's speed then.
    reference: tuple[Sample, ...] = ()
    # Format 6: every run whose rounds this file holds (Sample.run names one).
    runs: tuple[Run, ...] = ()

    def by_id(self) -> dict[BenchmarkId, BenchmarkResult]:
        return {r.id: r for r in self.results}

    @property
    def failed(self) -> tuple[BenchmarkResult, ...]:
        """Benchmarks whose latest attempt failed (a skip is not a failure)."""
        return tuple(r for r in self.results if r.failure is not None and r.failure.kind != FailureKind.SKIPPED)

    @property
    def skipped(self) -> tuple[BenchmarkResult, ...]:
        return tuple(r for r in self.results if r.failure is not None and r.failure.kind == FailureKind.SKIPPED)

    @property
    def problems(self) -> tuple[Failure, ...]:
        """Commit-level failures: broken suites, a failed build (skips left out)."""
        return tuple(f for f in self.failures if f.kind != FailureKind.SKIPPED)
