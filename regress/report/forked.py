"""Work of a site build done in a forked child, on the second core, while the build goes on.

The site build is one process; a machine (a laptop, a hosted runner) has two
cores or more. Work that reads only what the build holds in memory (the
change points' search: `steps_beside`; the chart pages' data files:
`publishers.BenchPages`) can run in a child forked from it, which sends its
answer back as bytes through a pipe. Where fork is not to be had (not Linux,
one CPU, other threads running), or the child fails or stops using the CPU
before it has answered (stuck on a lock it inherited, say: stopped after
STALLED seconds), `get` says so (None) and the build does the work itself:
the same answer either way.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

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


class Forked:
    """`work()`'s bytes, made in a forked child from now on (where `fork`, default `can_fork()`); `get()`
    waits for them: None where no child ran, or it failed."""

    def __init__(self, work: Callable[[], bytes], *, fork: bool | None = None) -> None:
        self.pid: int | None = None
        self.fd: int | None = None
        if fork if fork is not None else can_fork():
            self._start(work)

    @property
    def started(self) -> bool:
        return self.pid is not None

    def _start(self, work: Callable[[], bytes]) -> None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: work, send, and leave without running the parent's exit handlers
            status = 1
            try:
                os.close(r)
                data = work()
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(w)
        self.pid, self.fd = pid, r

    def get(self) -> bytes | None:
        """What the child sent; None where there was no child, it failed, or it stopped working."""
        if self.pid is None:
            return None
        data = self._read()
        if data is None:  # the child stopped working (a lock it inherited, say): it goes
            self.stop()
            return None
        _, status = os.waitpid(self.pid, 0)
        assert self.fd is not None  # set with the pid
        os.close(self.fd)
        self.pid = self.fd = None
        return data if os.waitstatus_to_exitcode(status) == 0 else None

    def stop(self) -> None:
        """The child, if still running, killed and reaped (the build failed before it asked)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            assert self.fd is not None  # set with the pid
            os.close(self.fd)
            self.pid = self.fd = None

    def _read(self) -> bytes | None:
        """All the child sends, or None once it has used no CPU for STALLED seconds without finishing."""
        pid, fd = self.pid, self.fd
        assert pid is not None and fd is not None  # `get` reads only a started child
        parts: list[bytes] = []
        used = _cpu_ticks(pid)
        while True:
            ready, _, _ = select.select([fd], [], [], STALLED)
            if ready:
                part = os.read(fd, 1 << 20)
                if not part:
                    return b"".join(parts)
                parts.append(part)
                continue
            now = _cpu_ticks(pid)
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
