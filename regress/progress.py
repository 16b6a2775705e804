"""What a person watching `regress run` sees: commit k/n, benchmark i/m, time left."""

from __future__ import annotations

import sys
import time

from .model import CommitInfo, CommitResult


class ConsoleProgress:
    """A live bar on a terminal, one line per commit otherwise (CI logs)."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.started = time.monotonic()
        self.commit_started_at = self.started
        self.n = 0
        self._bar = None
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._bar.start()
            self._commits = self._bar.add_task("commits", total=None)
            self._benches = self._bar.add_task("benchmarks", total=None)

    def commit_started(self, k: int, n: int, info: CommitInfo) -> None:
        self.n = n
        self.commit_started_at = time.monotonic()
        title = f"[{k}/{n}] {info.short} {info.subject[:60]}"
        if self._bar:
            self._bar.update(self._commits, total=n, completed=k - 1, description=f"commit {title}")
            self._bar.update(self._benches, total=None, completed=0, description="benchmarks (importing)")
        else:
            print(title, file=self.stream, flush=True)

    def benchmarks_found(self, total: int) -> None:
        if self._bar:
            self._bar.update(self._benches, total=total, completed=0)

    def benchmark_started(self, name: str) -> None:
        if self._bar:
            self._bar.update(self._benches, description=f"  {name[:70]}")

    def benchmark_finished(self) -> None:
        if self._bar:
            self._bar.advance(self._benches)

    def commit_finished(self, result: CommitResult | None, skipped: bool = False) -> None:
        if self._bar:
            self._bar.advance(self._commits)
            return
        if result is not None:
            ok = sum(r.ok for r in result.results)
            failed = len(result.failed) + len(result.failures)
            took = time.monotonic() - self.commit_started_at
            print(f"  {ok} measured, {failed} failed ({took:.1f}s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar:
            self._bar.stop()
