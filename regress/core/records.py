"""The records regress keeps: frozen, pure, and the only classes a result file may hold.

Mirrors torch.utils.benchmark's split between a frozen task spec (`TaskSpec`)
and what was measured for it (`Sample`, one per worker process = one round).
torch's own Measurement is not pickled: its private caches change between
releases. `tables.py` rebuilds Measurements from these records on load.

Nothing here does I/O.
"""

from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass, replace

# Name under which the uncommitted working tree is stored; can never be a sha.
WORKTREE = "WORKTREE"


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
        return BenchmarkId(
            self.label,
            self.sub_label or self.stmt,
            self.description or "",
            self.num_threads,
        )


@dataclass(frozen=True)
class Sample:
    """One round: one blocked_autorange in one worker process.

    raw_times are seconds per block of `number_per_run` executions, exactly as
    torch's Measurement keeps them.
    """

    number_per_run: int
    raw_times: tuple[float, ...]
    started_at: float = 0.0

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
class Failure:
    """Why a benchmark or a whole commit has no (or incomplete) samples.

    kind: "error" (raised), "crash" (worker died), "timeout", "suite" (a suite
    file failed to load), "build" (build_command failed), "skipped".
    """

    kind: str
    message: str
    where: str = ""

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

    @property
    def quartiles(self) -> tuple[float, float, float]:
        """25th, 50th and 75th percentile of `times` (one time: all three equal)."""
        times = self.times
        if len(times) < 2:
            return (times[0],) * 3
        q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive")
        return q1, q2, q3


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


def history_order(commits: list[CommitInfo]) -> list[CommitInfo]:
    """Oldest first: a parent always before its child, else by commit date.

    Dates alone can't order commits made within one second (scripts, rebases,
    `git am`), so recorded parents decide wherever both ends are in the list;
    dates (then sha, for a stable order) break the rest.
    """
    by_sha = {c.sha: c for c in commits}
    children: dict[str, list[str]] = {sha: [] for sha in by_sha}
    waiting = dict.fromkeys(by_sha, 0)
    for c in by_sha.values():
        for parent in set(c.parents):
            if parent in by_sha and parent != c.sha:
                children[parent].append(c.sha)
                waiting[c.sha] += 1

    def when(sha: str) -> tuple:
        c = by_sha[sha]
        return (c.committed_at, c.authored_at, sha)

    ready = [(when(sha), sha) for sha, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, sha = heapq.heappop(ready)
        out.append(by_sha[sha])
        for child in children[sha]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (when(child), child))
    return out


def neighbours(history: list, base_sha: str, head_sha: str) -> tuple:
    """(the result just before base, the result just after head) in a history list, or None for each."""
    shas = [r.commit.sha for r in history]
    before = after = None
    if base_sha not in shas or head_sha not in shas or shas.index(base_sha) >= shas.index(head_sha):
        return None, None  # not a step forward in this history: no neighbours to speak of
    if shas.index(base_sha) > 0:
        before = history[shas.index(base_sha) - 1]
    if shas.index(head_sha) + 1 < len(shas):
        after = history[shas.index(head_sha) + 1]
    return before, after


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
class Settings:
    """How a commit was measured."""

    mode: str = "time"
    min_run_time: float = 0.2
    warmup: int = 1
    timeout: float = 600.0
    benchmarks_from: str = "worktree"
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

    def by_id(self) -> dict[BenchmarkId, BenchmarkResult]:
        return {r.id: r for r in self.results}

    @property
    def failed(self) -> tuple[BenchmarkResult, ...]:
        """Benchmarks whose latest attempt failed (a skip is not a failure)."""
        return tuple(r for r in self.results if r.failure is not None and r.failure.kind != "skipped")

    @property
    def skipped(self) -> tuple[BenchmarkResult, ...]:
        return tuple(r for r in self.results if r.failure is not None and r.failure.kind == "skipped")

    @property
    def problems(self) -> tuple[Failure, ...]:
        """Commit-level failures: broken suites, a failed build (skips left out)."""
        return tuple(f for f in self.failures if f.kind != "skipped")


def merge_results(
    old: CommitResult, new: CommitResult, *, replace_all: bool = False
) -> CommitResult:
    """Add a new run of a commit to what is already stored for it.

    Nothing measured is dropped: a benchmark measured again with the same spec
    keeps its old rounds and instruction counts and gains the new ones; its
    failure state is the latest attempt's (a skip changes nothing). Only a
    changed spec (a different benchmark under the same identity) replaces it.
    Benchmarks not measured this time are kept. `replace_all` is for the
    WORKTREE, which is re-measured from scratch.
    """
    if replace_all:
        return new
    merged = old.by_id()
    for res in new.results:
        prev = merged.get(res.id)
        if prev is not None and prev.spec == res.spec:
            skipped = res.failure is not None and res.failure.kind == "skipped"
            res = replace(
                res,
                origin=res.origin,
                samples=prev.samples + res.samples,
                counts=prev.counts + res.counts,
                failure=prev.failure if skipped else res.failure,
            )
        merged[res.id] = res
    return replace(
        new,
        results=tuple(merged.values()),
        reference=old.reference + new.reference,
        started_at=min(old.started_at, new.started_at) if old.started_at else new.started_at,
        complete=new.complete or old.complete,
    )
