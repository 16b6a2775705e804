"""One worker process: started forked from a server or as a fresh interpreter,
read message by message, killed whole; and how it died when it did."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from regress.core.config import Config
from regress.core.errors import RegressError
from regress.measure import bytecode, callgrind, launch, pool, protocol
from regress.measure.job import JobMode, WorkerJob
from regress.suite import files

# A report line longer than this is no message regress's worker sends.
MAX_LINE = 1 << 26

# Starting a worker (interpreter, `import torch`, the suites) is not a
# benchmark: it gets at least this long, however short --timeout is.
DISCOVERY_TIMEOUT_FLOOR = 600.0


def trace(event: str, **fields) -> None:
    """Timestamps for scripts/overhead.py, written only when REGRESS_TRACE names a file."""
    path = os.environ.get("REGRESS_TRACE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")


class WorkerDied(Exception):
    pass


class WorkerHung(Exception):
    pass


@dataclass
class Worker:
    proc: pool.Process
    fd: int
    log: IO[bytes]  # the worker's stdout/stderr; unlinked, so a SIGKILL leaves nothing behind
    timeout: float
    buffer: bytes = b""

    def lines(self) -> Iterator[bytes]:
        """Report lines as they come; WorkerHung if none arrives within `self.timeout` (read anew each time)."""
        sel = selectors.DefaultSelector()
        sel.register(self.fd, selectors.EVENT_READ)
        try:
            while True:
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    yield line
                if len(self.buffer) > MAX_LINE:
                    raise protocol.Malformed(f"a line over {MAX_LINE} bytes")
                if not sel.select(self.timeout):
                    raise WorkerHung()
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise WorkerDied()
                self.buffer += chunk
        finally:
            sel.close()

    def kill(self) -> None:
        self.proc.kill()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.log.close()

    def tail(self, lines: int = 3) -> str:
        """The last lines it printed; only once it is dead (the file offset is shared)."""
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(max(0, self.log.seek(0, os.SEEK_END) - 4096))
            text = self.log.read().decode("utf-8", errors="replace").strip().splitlines()
            return " | ".join(line.strip() for line in text[-lines:])
        return ""

    def death(self) -> str:
        """Why it died, with the tail of what it printed."""
        code = self.proc.wait()
        if code < 0:
            try:
                why = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                why = f"killed by signal {-code}"
        else:
            why = f"exited with status {code}"
        tail = self.tail()
        return f"worker {why}" + (f"; last output: {tail}" if tail else "")


@functools.cache
def callgrind_plan() -> callgrind.Plan:
    """Valgrind checked and the helper compiled once per regress process."""
    work = Path(tempfile.mkdtemp(prefix="regress-callgrind-"))
    atexit.register(shutil.rmtree, work, True)
    return callgrind.prepare(work)


def _worker_env(cfg: Config) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "REGRESS_PARENT_PID": str(os.getpid())}
    # Bytecode of the user's suites and of each commit's code goes under the
    # results folder, never into the checkout regress was asked to measure.
    env["PYTHONPYCACHEPREFIX"] = str(cfg.results_dir / ".pycache")
    if files.holds_pytest_modules(cfg.benchmarks_dir):
        env["REGRESS_PRELOAD_PYTEST"] = "1"  # the fork servers import pytest once (forkserver.serve)
    return env


def worker_command(cfg: Config, job: WorkerJob, fd: int) -> tuple[list[str], dict]:
    """argv and environment of a fresh worker (not forked) that reports on `fd`."""
    env = _worker_env(cfg)
    cmd = launch.command(cfg.python_exe, "regress.measure.worker", str(fd))
    if job.mode is JobMode.INSTRUCTIONS:
        # One valgrind process for the whole suite. One OpenMP/MKL thread and a
        # fixed hash seed keep repeated counts identical.
        cmd = callgrind.command(callgrind_plan(), cfg.python_exe) + cmd[1:]
        # No bytecode writing either: `bytecode.write_for` has written it all before the
        # first count, so every count reads the same .pyc files, whatever earlier runs left.
        env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return cmd, env


# Fork servers by interpreter, for this regress process; closed by close_servers().
_servers: dict[str, pool.ServerPool] = {}
# Servers a run's rounds go round (REGRESS_SERVERS overrides, for the evaluations):
# a commit's rounds then come from this many independently started processes.
SERVERS = 3
# Interpreters whose server could not start (no torch, say): fresh workers report why.
_no_server: set[str] = set()


def server_count() -> int:
    """REGRESS_SERVERS, read when a pool starts (never at import), else SERVERS."""
    text = os.environ.get("REGRESS_SERVERS", "").strip()
    if not text:
        return SERVERS
    if not text.isdigit() or int(text) < 1:
        raise RegressError(
            f"REGRESS_SERVERS={text!r} is not a whole number of fork servers; set it to 1 or more, or unset it"
        )
    return int(text)


def _server(cfg: Config) -> pool.ServerPool | None:
    # Set REGRESS_FORK=0 to give every worker a fresh interpreter, as before fork servers.
    if os.environ.get("REGRESS_FORK", "1") == "0" or cfg.python_exe in _no_server:
        return None
    server = _servers.get(cfg.python_exe)
    if server is None:
        if not _servers:
            atexit.register(close_servers)  # once a server is started, not when the module is imported
        count = server_count()
        server = _servers[cfg.python_exe] = pool.ServerPool(cfg.python_exe, _worker_env(cfg), str(cfg.root), count)
    return server


def close_servers() -> None:
    while _servers:
        _servers.popitem()[1].close()
    atexit.unregister(close_servers)


def start_worker(cfg: Config, job: WorkerJob, timeout: float) -> Worker:
    read_fd, write_fd = os.pipe()
    log = tempfile.TemporaryFile(prefix="regress-worker-")  # noqa: SIM115 - lives as long as the worker
    server = _server(cfg) if job.mode is not JobMode.INSTRUCTIONS else None
    if server is not None:
        try:
            proc = server.fork(job, write_fd, log)
            if server.started is not None:
                trace("server_started", servers=server.started[0], seconds=server.started[1])
        except pool.ServerFailed as exc:
            # The interpreter can't even import torch: a fresh worker fails the
            # way it always did, with its own output, and the range goes on.
            trace("server_failed", why=str(exc))
            _servers.pop(cfg.python_exe, None)
            _no_server.add(cfg.python_exe)
        else:
            os.close(write_fd)
            return Worker(proc, read_fd, log, timeout)
    if job.mode is JobMode.INSTRUCTIONS:
        bytecode.write_for(cfg, job, worker_command)
    cmd, env = worker_command(cfg, job, write_fd)
    try:
        popen = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=job.cwd,
            pass_fds=(write_fd,),
            start_new_session=True,  # Ctrl-C is the parent's to handle; kill takes the whole group
            env=env,
        )
    except OSError as exc:
        os.close(read_fd)
        log.close()
        raise RegressError(
            f"cannot start the worker interpreter {cfg.python_exe}: {exc.strerror}; check --python"
        ) from None
    finally:
        os.close(write_fd)
    assert popen.stdin is not None
    try:
        popen.stdin.write(json.dumps(job.plain()).encode())
        popen.stdin.close()
    except BrokenPipeError:
        pass
    return Worker(pool.Fresh(popen), read_fd, log, timeout)
