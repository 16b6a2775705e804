"""The kinds regress names: a verdict's and a failure's, each an Enum with one order.

Both are `str` Enums, so they read, compare, print and serialise (JSON,
templates) as their plain names ("regression", "skipped"), which is what
the command line, the JSON output and older result files use.
"""

from __future__ import annotations

from enum import Enum


class _Named(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Kind(_Named):
    """A verdict. Declared in the one order every listing uses: what needs
    attention first (tables, summaries, the site's lists)."""

    REGRESSION = "regression"
    FAILED = "failed"
    IMPROVEMENT = "improvement"
    NOISY = "noisy"
    NEW = "new"
    MISSING = "missing"
    UNCHANGED = "unchanged"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {k: i for i, k in enumerate(Kind)}
# The verdicts that say the code changed speed.
CHANGES = (Kind.REGRESSION, Kind.IMPROVEMENT)


class FailureKind(_Named):
    """Why a benchmark or a commit has no (or incomplete) samples."""

    ERROR = "error"  # the benchmark raised
    CRASH = "crash"  # the worker died
    TIMEOUT = "timeout"
    SUITE = "suite"  # a suite file failed to load
    BUILD = "build"  # build_command failed
    CHECKOUT = "checkout"  # git could not check the commit out (a blob missing from the clone)
    SKIPPED = "skipped"  # cannot run here (no GPU, no compiler): not a failure


class Metric(_Named):
    """What a verdict is about. Each has its own rule: exact figures (bytes,
    dynamo's counts) are decided by one round against a small threshold;
    time-like ones (wall time, compile time, a tracked value that varies) by
    rounds and the differ. Its facts (unit, threshold, wording) are in `metric_specs`."""

    TIME = "time"
    INSTRUCTIONS = "instructions"
    ALLOCATED = "allocated"  # bytes allocated per call (torch's allocator)
    PEAK = "peak"  # most bytes held during a call above what was held before it
    COMPILE_TIME = "compile_time"  # seconds of a compiled benchmark's first call
    GRAPHS = "graphs"
    GRAPH_BREAKS = "graph_breaks"
    RECOMPILES = "recompiles"
    TRACKED = "tracked"  # a track_* function's value


# dynamo's counts: any change is reported (their threshold is 0).
COUNTED = (Metric.GRAPHS, Metric.GRAPH_BREAKS, Metric.RECOMPILES)
MEMORY = (Metric.ALLOCATED, Metric.PEAK)


# The settings a result records, and the states a bisection gives a commit: each a str Enum,
# so it reads, prints and serialises as the plain name older result files hold.


class Mode(_Named):
    """What a commit was measured for (`Settings.mode`, `regress run --mode`)."""

    TIME = "time"  # wall time
    INSTRUCTIONS = "instructions"  # callgrind's instruction counts


class BenchmarksFrom(_Named):
    """Where the suite's definitions come from (`Settings.benchmarks_from`, `--benchmarks-from`)."""

    WORKTREE = "worktree"
    COMMIT = "commit"  # each measured commit's own benchmark folder


class Better(_Named):
    """Which way a `track_*` value improves (`TrackedValue.better`)."""

    LOWER = "lower"
    HIGHER = "higher"


class ProbeState(_Named):
    """Where a bisection placed a commit it looked at."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"  # could not be measured for the moved benchmarks
