"""What a person watching `regress run` sees: round k, commit i/n, benchmark j/m, time left."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from regress.core.records import CommitInfo, CommitResult
from regress.core.reporter import Reporter

if TYPE_CHECKING:
    from rich.progress import Progress


def time_left(elapsed: float, k: int, n: int, done: int, total: int | None) -> float | None:
    """Seconds left at the pace so far, or None before anything finished.

    Commits before the k-th count whole, the k-th by the share of its
    benchmarks done, so the estimate moves within a long commit too.
    """
    progress = (k - 1) + (done / total if total else 0.0)
    if progress <= 0 or elapsed <= 0:
        return None
    return max(0.0, elapsed / progress * (n - progress))


def format_seconds(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ConsoleProgress(Reporter):
    """A live display on a terminal (rich), one line per commit otherwise (CI logs)."""

    def __init__(self, stream=None, clock=time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.clock = clock
        self.started = clock()
        self.k = self.n = self.done = 0
        self.total: int | None = None
        self.estimate: float | None = None
        self._bar: Progress | None = None
        if self.stream.isatty():
            self._start_live()

    def left(self) -> float | None:
        if self.estimate is not None:
            return self.estimate
        return time_left(self.clock() - self.started, self.k, self.n, self.done, self.total)

    def _left_text(self) -> str:
        left = self.left()
        return f"about {format_seconds(left)} left" if left is not None else "estimating time left"

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
        )
        from rich.text import Text

        owner = self

        class TimeLeft(ProgressColumn):
            def render(self, task):  # recomputed at every refresh, not only on events
                return Text(owner._left_text() if task.fields.get("eta") else "")

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeLeft(),
            console=Console(file=self.stream),
            transient=True,
        )
        self._bar.start()
        self._commits = self._bar.add_task("rounds", total=None, eta=True)
        self._benches = self._bar.add_task("benchmarks", total=None, eta=False)

    def round_started(self, k: int, i: int, n: int, info: CommitInfo, left: float | None) -> None:
        """Round k of commit i of the n that still want it; `left`: the engine's estimate of seconds left."""
        self.k, self.n, self.done, self.total = i, n, 0, None
        self.estimate = left
        title = f"round {k}, commit {i}/{n} {info.short} {info.subject[:40]}"
        if self._bar:
            self._bar.update(self._commits, total=n, completed=i - 1, description=title)
            self._bar.remove_task(self._benches)  # a fresh row: this round's benchmark count is not known yet
            self._benches = self._bar.add_task("  importing the suites", total=None, eta=False)
        else:
            left = self.left()
            tail = f" ({format_seconds(left)} left)" if left is not None else ""
            print(f"[round {k}, {i}/{n}] {info.short} {info.subject[:60]}{tail}", file=self.stream, flush=True)

    def say(self, line: str) -> None:
        if self._bar:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def benchmarks_found(self, total: int) -> None:
        self.total = total
        if self._bar:
            self._bar.update(self._benches, total=total, completed=0, description="  benchmark")

    def benchmark_started(self, name: str) -> None:
        if self._bar:
            self._bar.update(self._benches, description=f"  benchmark {self.done + 1}/{self.total or '?'} {name[:60]}")

    def benchmark_finished(self) -> None:
        self.done += 1
        if self._bar:
            self._bar.update(self._benches, completed=self.done)

    def commit_finished(self, result: CommitResult | None, skipped: bool = False) -> None:
        self.done, self.total = 1, 1  # the k-th commit counts whole now
        if self._bar:
            self._bar.update(self._commits, completed=self.k)

    def close(self) -> None:
        if self._bar:
            self._bar.stop()
