"""Where worker processes come from: forks of a warm server, or fresh interpreters.

Wall-time rounds are forked from a fork server (`forkserver.py`) that has
imported torch once, so a round costs milliseconds of process start instead
of an interpreter start plus `import torch`. Instruction counts run under
valgrind, which needs its own fresh interpreter. Both kinds of process look
the same to the runner (`Process`): a pid to kill, a status to wait for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import IO

from regress.core.errors import RegressError
from regress.measure import launch
from regress.measure.job import JobMode, WorkerJob

# The server imports torch; on a loaded machine that can take a while.
SERVER_START_TIMEOUT = 600.0


class Process:
    """A worker process: what the runner needs to wait for it or kill it."""

    pid: int

    @abstractmethod
    def poll(self) -> int | None: ...
    @abstractmethod
    def wait(self) -> int: ...

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (it leads its own session)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self.wait()


@dataclass
class Fresh(Process):
    """A worker in a fresh interpreter (subprocess.Popen)."""

    proc: subprocess.Popen

    @property
    def pid(self) -> int:  # type: ignore[override]
        return self.proc.pid

    @property
    def origin(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self) -> int:
        return self.proc.wait()


@dataclass
class Forked(Process):
    """A worker forked by the server; only the server can reap it."""

    server: ForkServer
    pid: int
    status: int | None = None

    @property
    def origin(self) -> int:
        """The server it was forked from: rounds of one origin share its process luck."""
        return self.server.pid

    def poll(self) -> int | None:
        if self.status is None:
            self.status = self.server.status(self.pid, block=False)
        return self.status

    def wait(self) -> int:
        if self.status is None:
            self.status = self.server.status(self.pid, block=True)
        return self.status if self.status is not None else -signal.SIGKILL


class ForkServer:
    """One warm interpreter that forks workers; started on first use, stopped by close()."""

    def __init__(self, python: str, env: dict[str, str], cwd: str) -> None:
        self.python, self.env, self.cwd = python, env, cwd
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self.forks = 0
        self.start_seconds = 0.0
        self._started = 0.0
        self.pid = 0

    def _start(self) -> None:
        self.spawn()
        self.ready()

    def spawn(self) -> None:
        """Start the interpreter; `ready` waits for it (several servers import torch at once)."""
        self._started = time.monotonic()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                launch.command(self.python, "regress.measure.forkserver", str(theirs.fileno())),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                env=self.env,
            )
        except OSError as exc:
            mine.close()
            raise RegressError(
                f"cannot start the worker interpreter {self.python}: {exc.strerror}; check --python"
            ) from None
        finally:
            theirs.close()
        self._sock = mine

    def ready(self) -> None:
        mine, proc = self._sock, self._proc
        assert mine is not None and proc is not None
        mine.settimeout(SERVER_START_TIMEOUT)
        try:
            ready = mine.recv(4096)
        except OSError:
            ready = b""
        if not ready:
            proc.kill()
            err = proc.communicate()[1].decode(errors="replace").strip().splitlines()
            mine.close()
            self._sock, self._proc = None, None
            raise ServerFailed(" | ".join(err[-3:]) or "no output")
        mine.settimeout(None)
        # Its stderr is only for a start that fails; later output would fill the pipe.
        assert proc.stderr is not None
        proc.stderr.close()
        self.start_seconds = time.monotonic() - self._started
        self.pid = proc.pid

    def _ask(self, request: dict, fds: list[int] = ()) -> dict:  # type: ignore[assignment]
        assert self._sock is not None
        socket.send_fds(self._sock, [json.dumps(request).encode()], list(fds))
        answer = self._sock.recv(4096)
        if not answer:
            raise ServerFailed("the fork server exited")
        return json.loads(answer)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def fork(self, job: WorkerJob, report_fd: int, log: IO[bytes]) -> Forked:
        """A new worker running `job`; it reports on `report_fd` and prints to `log`."""
        if not self.alive:
            self.close()
            self._start()
        request = {"op": "fork", "job": job.plain()}
        try:
            pid = int(self._ask(request, [report_fd, log.fileno()])["pid"])
        except (OSError, ServerFailed):
            # The server died between rounds (killed, out of memory): one more try on a new one.
            self.close()
            self._start()
            pid = int(self._ask(request, [report_fd, log.fileno()])["pid"])
        self.forks += 1
        return Forked(self, pid)

    def status(self, pid: int, *, block: bool) -> int | None:
        try:
            return self._ask({"op": "wait" if block else "poll", "pid": pid})["status"]
        except (OSError, ServerFailed, AssertionError):
            return -signal.SIGKILL  # the server is gone, and its children with it

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
            self._proc = None


class ServerPool:
    """Several fork servers, each started on first use; forks go round them in turn.

    Forks of one server share its process luck (where the shared libraries
    were mapped, the hash seed, the allocator's arenas): measured here, one
    server's rounds agree within 1% while a benchmark's floor moves 1.5-7%
    between servers. Rounds spread over several servers carry that luck in
    their spread, and a level rests on more than one process. Consecutive
    forks go to different servers, so the rounds a range takes together
    (round k of every commit) see every server alike.
    """

    def __init__(self, python: str, env: dict[str, str], cwd: str, size: int) -> None:
        self.servers = [ForkServer(python, env, cwd) for _ in range(max(1, size))]
        self.forks = 0
        # What the last fork started: (servers, seconds of wall time), or None when it started none.
        self.started: tuple[int, float] | None = None

    def fork(self, job: WorkerJob, report_fd: int, log: IO[bytes]) -> Forked:
        """A worker from the next server in turn. The first fork starts every server at once and waits for
        all of them, so their imports of torch overlap one another and never a measurement (a listing, which
        measures nothing, starts only the one it forks from); a server that is not alive later is started
        on its own."""
        self.started = None
        if self.forks == 0 and not any(s.alive for s in self.servers):
            began = time.monotonic()
            starting = self.servers[:1] if job.mode is JobMode.LIST else self.servers
            try:
                for server in starting:
                    server.spawn()
                for server in starting:
                    server.ready()
            except ServerFailed:
                self.close()
                raise
            self.started = (len(starting), time.monotonic() - began)
        server = self.servers[self.forks % len(self.servers)]
        self.forks += 1
        restart = not server.alive
        forked = server.fork(job, report_fd, log)
        if restart:
            self.started = (1, server.start_seconds)
        return forked

    def close(self) -> None:
        for server in self.servers:
            server.close()


class ServerFailed(Exception):
    """The fork server could not start or went away; the text is its last output."""
