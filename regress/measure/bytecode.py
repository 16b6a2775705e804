"""Bytecode written before a commit's first instruction count.

A count moves by several per cent with whether the worker's modules came from
source or from a .pyc (the heap the compiler leaves behind differs), so a first
count after a fresh checkout read differently from the next one of the same code.
Before a commit's first count, one listing worker outside valgrind imports what
the counting worker will (regress's worker, torch, the suites) with bytecode
writing on, into the results folder's cache; every count then reads them from
.pyc, whatever earlier runs left. The counting workers themselves write none.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import replace

from regress.core.config import Config
from regress.measure.job import JobMode, WorkerJob

_written: set[tuple[str, str]] = set()


def write_for(cfg: Config, job: WorkerJob, command) -> None:
    """Once per interpreter and checkout in this regress process; `command` builds a fresh worker's (cmd, env).

    Best effort and bounded: a listing worker that fails only leaves the counts as they would have been, and
    one that hangs (a suite stuck at import) is killed after the benchmark timeout, as a counting worker would be.
    """
    key = (cfg.python_exe, str(job.cwd))
    if key in _written:
        return
    _written.add(key)
    listing = replace(job, mode=JobMode.LIST, callgrind=None)
    read_fd, write_fd = os.pipe()
    cmd, env = command(cfg, listing, write_fd)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=job.cwd,
            pass_fds=(write_fd,),
            start_new_session=True,  # its whole group is killed on a hang
            env=env,
        )
    except OSError:
        os.close(read_fd)
        return
    finally:
        os.close(write_fd)
    assert proc.stdin is not None  # stdin=PIPE
    try:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps(listing.plain()).encode())
            proc.stdin.close()
        _drain(read_fd, time.monotonic() + cfg.timeout)
    finally:
        os.close(read_fd)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _drain(fd: int, deadline: float) -> None:
    """Read what the worker reports (not needed; read so it never blocks) until it ends or the deadline."""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if sel.select(left) and not os.read(fd, 1 << 16):
                return
