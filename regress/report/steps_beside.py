"""The change points' search, beside the rest of a site build: in a forked process, on a second core.

After one new commit a site build spends a third of its time finding the
change points afresh (`changepoints.candidates`: every benchmark's levels
fitted and segmented), and the pages that don't show them (each chart's
points, the label pages' tables, the recent verdicts) need none of it. The
search is pure numpy over the series' table, already in memory, and reads
no file: a forked child runs it and sends its candidates back as JSON,
while the build goes on; the build judges them (compare across each,
through the kept verdicts) once a page needs the steps. Where fork is not
to be had (not Linux, one CPU, other threads running) the build runs the search itself when asked,
and it does so too if the child fails or sends what does not read back:
the same candidates either way. A child that stops using the CPU before it
has answered (stuck on a lock it inherited from the parent) is stopped
after STALLED seconds and the build searches itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.analysis.changepoints import Candidate, Search
from regress.core.records import BenchmarkId
from regress.report import prefix_cache
from regress.report.verdict_cache import bid_fields

# A child that has used no CPU for this long without finishing is stuck (it only computes): stopped.
STALLED = 10.0


def can_fork() -> bool:
    """Linux, more than one CPU to run on, and no other thread (one could hold a lock the child needs)."""
    return sys.platform.startswith("linux") and _cpus() > 1 and threading.active_count() == 1


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Found:
    """A search's candidates, and its sealed prefix's bytes where it is new (to keep: report/prefix_cache.py)."""

    candidates: list[Candidate]
    keep: bytes | None = None


def found_of(search: Search) -> Found:
    return Found(search.found, prefix_cache.encode(search.prefix) if search.changed and search.prefix else None)


def _frame(found: Found) -> bytes:
    head = encode(found.candidates)
    return len(head).to_bytes(8, "little") + head + (found.keep or b"")


def _unframe(data: bytes) -> Found:
    n = int.from_bytes(data[:8], "little")
    if len(data) < 8 + n:
        raise ValueError("a short answer")
    return Found(decode(data[8 : 8 + n]), data[8 + n :] or None)


def encode(found: list[Candidate]) -> bytes:
    rows = [[bid_fields(c.id), c.start, c.end, c.prior, c.ratio, c.own_before, c.own_after, c.p_value] for c in found]
    return json.dumps(rows).encode()


def decode(data: bytes) -> list[Candidate]:
    return [Candidate(BenchmarkId(*bid), *rest) for bid, *rest in json.loads(data)]


class Beside:
    """`compute()`'s search, computed in a forked child from now on; `get()` waits for what it found."""

    def __init__(self, compute: Callable[[], Search], *, fork: bool | None = None) -> None:
        self.compute = lambda: found_of(compute())
        self.pid: int | None = None
        self.fd: int | None = None
        self.value: Found | None = None
        if fork if fork is not None else can_fork():
            self._start()

    def _start(self) -> None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running the parent's exit handlers
            status = 1
            try:
                os.close(r)
                data = _frame(self.compute())
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(w)
        self.pid, self.fd = pid, r

    def get(self) -> Found:
        if self.value is None:
            self.value = self._collect()
        return self.value

    def stop(self) -> None:
        """The child, if still running, killed and reaped (the build failed before it asked)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            os.close(self.fd)
            self.pid = self.fd = None

    def _collect(self) -> Found:
        if self.pid is None:
            return self.compute()
        data = self._read()
        if data is None:  # the child stopped working (a lock it inherited, say): it goes, the search is done here
            self.stop()
            return self.compute()
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.pid = self.fd = None
        if os.waitstatus_to_exitcode(status) == 0:
            try:
                return _unframe(data)
            except (ValueError, TypeError):
                pass
        return self.compute()  # the child failed: the same search here

    def _read(self) -> bytes | None:
        """All the child sends, or None once it has used no CPU for STALLED seconds without finishing."""
        parts, used = [], _cpu_ticks(self.pid)
        while True:
            ready, _, _ = select.select([self.fd], [], [], STALLED)
            if ready:
                part = os.read(self.fd, 1 << 20)
                if not part:
                    return b"".join(parts)
                parts.append(part)
                continue
            now = _cpu_ticks(self.pid)
            if now is not None and now == used:
                return None
            used = now


def _cpu_ticks(pid: int) -> int | None:
    """The process's user + system CPU time so far, in clock ticks (/proc/<pid>/stat); None if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None
