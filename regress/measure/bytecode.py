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
import subprocess
from dataclasses import replace

from regress.core.config import Config
from regress.measure.job import JobMode, WorkerJob

_written: set[tuple[str, str]] = set()


def write_for(cfg: Config, job: WorkerJob, command) -> None:
    """Once per interpreter and checkout in this regress process; `command` builds a fresh worker's (cmd, env)."""
    key = (cfg.python_exe, str(job.cwd))
    if key in _written:
        return
    _written.add(key)
    listing = replace(job, mode=JobMode.LIST, callgrind=None)
    read_fd, write_fd = os.pipe()
    cmd, env = command(cfg, listing, write_fd)
    with contextlib.suppress(OSError):
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=job.cwd,
            pass_fds=(write_fd,),
            start_new_session=True,
            env=env,
        )
        os.close(write_fd)
        write_fd = -1
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps(listing.plain()).encode())
            proc.stdin.close()
        while os.read(read_fd, 1 << 16):  # what it reports is not needed; read so it never blocks
            pass
        proc.wait()
    if write_fd >= 0:
        os.close(write_fd)
    os.close(read_fd)
