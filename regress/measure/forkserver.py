"""A process that imports torch once and forks a fresh worker for every round.

An interpreter start plus `import torch` costs about 2 s on a shared 2-core
runner; a fork of a process that has already paid it costs milliseconds. The
server imports torch and regress's worker code, never the project's code and
never anything that starts threads or touches CUDA, so each forked child
starts from the same clean state a fresh interpreter would reach after
`import torch`: it then puts the commit's code on its path, imports the
suites, initialises CUDA if it needs it, and measures (`worker.run_job`).

Protocol, on a SOCK_SEQPACKET socket the runner passes as argv[1]: each
request is one JSON message. `{"op": "fork", "job": {...}}` comes with two
file descriptors (the child's report pipe and its log file); the answer is
`{"pid": N}`. `{"op": "wait"|"poll", "pid": N}` answers `{"status": code}`
(None while it runs; negative: killed by that signal). The server exits when
the runner closes its end, and dies with the runner (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import traceback


def wait_status(pid: int, flags: int) -> int | None:
    try:
        got, status = os.waitpid(pid, flags)
    except ChildProcessError:
        return -9  # already reaped: it can only have been killed
    if got == 0:
        return None
    return os.waitstatus_to_exitcode(status)


# Kept alive for the child's whole life: see _shuffle_layout.
_padding: list = []


def _shuffle_layout() -> None:
    """Give this child a heap layout of its own, as a fresh interpreter's ASLR would.

    Forks of one server start from identical memory, so every round of one
    commit would place the commit's objects and tensors at the same addresses
    and share the same layout luck (measured here: floors of identical code
    5% apart between two commits, each commit's rounds agreeing within 1%).
    A random amount of live padding in each of the allocators the benchmarks
    use (Python's small-object pools, malloc, torch's CPU allocator) moves
    everything allocated after it, so layout luck varies between rounds,
    where the rounds' spread shows it, instead of between commits.
    """
    import random

    import torch

    rng = random.Random(os.urandom(16))
    _padding.append([(0,) * rng.randrange(1, 8) for _ in range(rng.randrange(0, 4096))])
    _padding.append([bytearray(rng.randrange(64, 8192)) for _ in range(rng.randrange(1, 32))])
    _padding.append([torch.empty(rng.randrange(1, 1 << 14), dtype=torch.uint8) for _ in range(rng.randrange(1, 8))])


def child(server: socket.socket, job: dict, report_fd: int, log_fd: int, prepared=None) -> None:
    """The forked worker: its own session, output to its log, then the job (checked here, in the child).

    `prepared`: forked from a commit process (`zygote.py`), what it collected."""
    from regress.measure import worker
    from regress.measure.job import WorkerJob

    code = 0
    try:
        server.close()
        _shuffle_layout()
        os.setsid()  # the runner kills the child's whole group on a hang
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        worker.die_with_parent(os.getppid())
        with os.fdopen(report_fd, "wb", buffering=0) as out:
            worker.run_job(WorkerJob.parse(job), out, prepared)
    except BaseException:  # noqa: BLE001 - anything the job raises ends this child only
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    """Started by `launch.command`: the socket to serve is argv[1]."""
    serve(int(sys.argv[1]))


def serve(fd: int) -> None:
    from regress.measure import worker

    worker.die_with_parent()
    server = socket.socket(fileno=fd)
    import torch
    import torch.utils.benchmark  # noqa: F401

    from regress.measure import job, protocol, zygote  # noqa: F401 - what every worker imports, imported once
    from regress.suite import discover, machine, reference, timing  # noqa: F401

    if os.environ.get("REGRESS_PRELOAD_PYTEST") == "1":
        # The benchmark path holds pytest modules: each round collects them, so pytest's own import (half of
        # a collection) is paid once here. Where it is not installed, the round says so (`suite/folder.py`).
        with contextlib.suppress(ImportError):
            import _pytest.python  # noqa: F401
            import pytest  # noqa: F401
    commits = zygote.Commits(server, child, wait_status)
    server.send(json.dumps({"ready": os.getpid()}).encode())
    for req, fds in zygote.requests(server):
        if req["op"] == "fork":
            report_fd, log_fd = fds
            # A commit whose suites are collected once forks its rounds itself (zygote.py).
            pid = commits.fork(req["job"], report_fd, log_fd)
            if pid is None:
                pid = os.fork()
                if pid == 0:
                    child(server, req["job"], report_fd, log_fd)
            os.close(report_fd)
            os.close(log_fd)
            answer: dict[str, int | None] = {"pid": pid}
        else:
            for extra in fds:
                os.close(extra)
            theirs, status = commits.status(int(req["pid"]), req["op"] == "wait")
            if not theirs:
                status = wait_status(int(req["pid"]), os.WNOHANG if req["op"] == "poll" else 0)
            answer = {"status": status}
        server.send(json.dumps(answer).encode())
