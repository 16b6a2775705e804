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
    SKIPPED = "skipped"  # cannot run here (no GPU, no compiler): not a failure
