"""What a person watching a flow sees: one interface from the round engine up to the command line.

Every method does nothing here, so a flow calls them unconditionally and a
command line overrides what it shows (`measure/progress.ConsoleProgress`, the
round lines of `compare --measure`).
"""

from __future__ import annotations


class Reporter:
    def say(self, line: str) -> None:
        """A line for the person (a note, not the answer)."""

    def rounds_planned(self, most: int) -> None:
        """The most rounds any benchmark will get (a topped-up comparison)."""

    def round_started(self, k: int, i: int, n: int, info, left: float | None) -> None:
        """Round k of the i-th of n commits; `left`: seconds of measuring left, when known."""

    def benchmarks_found(self, total: int) -> None: ...

    def benchmark_started(self, name: str) -> None: ...

    def benchmark_finished(self) -> None: ...

    def commit_finished(self, result, skipped: bool = False) -> None: ...


QUIET = Reporter()
