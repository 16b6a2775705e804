"""A commit's process inside a fork server: its pytest suites collected once, each round forked from it.

Off by default (`REGRESS_COMMIT_PROCESS=1` turns it on). Every round of a
commit forked from one process shares that process's layout of the
commit's code (its modules, the collected tests), so the commit's level
carries that luck, which the next commit's processes do not share: in the
range evaluation (`scripts/eval_rounds.py range --pytest`) it gave 7 false
alarms in 72 comparisons of the Timer suite and 11 of the pytest one. By
default each round collects for itself in a fresh fork of the server, which
imported pytest once (`forkserver.serve`), as every Timer round imports its
suite: a layout of its own.

Collecting pytest-benchmark tests (pytest's configuration, plugins and
conftests, the test modules and the project they import, the items) costs a
good part of an `import torch`; doing it in every round would cost more than
the round. So the fork server (`forkserver.py`), asked for a round of a
commit whose benchmark path holds pytest modules, forks a *commit process*
once: it puts the commit's code on sys.path (`worker.setup`), collects
(`worker.prepare`) and then forks each of that commit's rounds on that
server, which start with everything collected (`worker.run_job(prepared=)`).
A commit's rounds still come from the several servers (one commit process
each), so its level still rests on several independently started processes.

The commit process runs with one torch thread while it collects: a process
that has run a parallel region of OpenMP cannot fork a child that uses
OpenMP again (the child hangs); each round gets the server's thread count
back. CUDA is never initialised by collecting (`PYTORCH_NVML_BASED_CUDA_CHECK`
keeps `torch.cuda.is_available()` fork-safe); a commit process that finds it
initialised anyway, or that has nothing to collect, answers "direct" and
exits, and the server forks that commit's rounds itself, each collecting
what it needs, as every round did before.

Protocol (SOCK_SEQPACKET, JSON, as the server's): the commit process first
sends `{"ready": true}` or `{"direct": "why"}`; then it serves
`{"op": "fork", "job": ...}` with the two descriptors (answer `{"pid": N}`) and
`{"op": "wait"|"poll", "pid": N}` (answer `{"status": code}`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_MESSAGE = 1 << 22


def requests(sock: socket.socket):
    """Each request on a server's socket, as (its JSON, the file descriptors sent with it), until the runner
    closes its end: the fork server's loop and a commit process's alike."""
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 2)
        except OSError:
            return
        if not data:
            return
        yield json.loads(data), fds


# Commit processes kept per server; the least recently used goes first.
KEPT = 16
# How long a commit process may take to collect before its commit's rounds collect for themselves
# (each then under the runner's own timeout).
COLLECT_TIMEOUT = 600.0
# The job's fields that make one commit process: the same code and benchmark path, collected the same way.
KEY = ("cwd", "import_path", "benchmarks_dir", "shown_root", "env", "pytest_args")
# The job modes whose rounds come from a commit process (a listing runs once; instruction counts run fresh).
MODES = ("time", "profile")


def key(job: dict) -> str:
    return json.dumps([job.get(k) for k in KEY])


def kept() -> int:
    text = os.environ.get("REGRESS_COMMIT_PROCESSES", "").strip()
    return int(text) if text.isdigit() else KEPT


@dataclass
class _Commit:
    pid: int
    sock: socket.socket

    def ask(self, request: dict, fds: list[int] = ()) -> dict:  # type: ignore[assignment]
        socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
        answer = self.sock.recv(4096)
        if not answer:
            raise OSError("the commit process exited")
        return json.loads(answer)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


class Commits:
    """The server's commit processes, by job key; and which rounds each forked."""

    def __init__(self, server: socket.socket, child, wait_status) -> None:
        """`child` and `wait_status`: the server's own (forkserver.py), so a round starts and is reaped alike."""
        self.server = server
        self.child, self.wait_status = child, wait_status
        self.by_key: OrderedDict[str, _Commit] = OrderedDict()
        self.direct: set[str] = set()  # keys whose rounds the server forks itself
        self.owner: dict[int, _Commit] = {}  # round pid -> its commit process

    def fork(self, job: dict, report_fd: int, log_fd: int) -> int | None:
        """A round of `job` forked from its commit process: its pid; None when the server must fork it."""
        if job.get("mode") not in MODES or os.environ.get("REGRESS_COMMIT_PROCESS", "0") != "1":
            return None
        k = key(job)
        if k in self.direct:
            return None
        commit = self.by_key.get(k)
        if commit is None:
            commit = self._start(job)
            if commit is None:
                self.direct.add(k)
                return None
            self.by_key[k] = commit
            while len(self.by_key) > max(1, kept()):
                _, old = self.by_key.popitem(last=False)
                self._drop(old)
        self.by_key.move_to_end(k)
        try:
            pid = int(commit.ask({"op": "fork", "job": job}, [report_fd, log_fd])["pid"])
        except (OSError, ValueError, KeyError):
            self.by_key.pop(k, None)
            self._drop(commit)
            return None
        self.owner[pid] = commit
        return pid

    def status(self, pid: int, block: bool) -> tuple[bool, int | None]:
        """(whether `pid` is a round of a commit process, its status)."""
        commit = self.owner.get(pid)
        if commit is None:
            return False, None
        try:
            status = commit.ask({"op": "wait" if block else "poll", "pid": pid})["status"]
        except (OSError, ValueError, KeyError):
            status = -signal.SIGKILL  # its commit process is gone, and the round with it
        if status is not None:
            self.owner.pop(pid, None)
        return True, status

    def _drop(self, commit: _Commit) -> None:
        for pid in [p for p, c in self.owner.items() if c is commit]:
            del self.owner[pid]
        commit.close()

    def _start(self, job: dict) -> _Commit | None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                mine.close()
                self.server.close()
                for other in self.by_key.values():
                    other.sock.close()
                serve(theirs, job, self.child, self.wait_status)
            except BaseException:  # noqa: BLE001 - whatever happens ends this process only
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        commit = _Commit(pid, mine)
        mine.settimeout(COLLECT_TIMEOUT)
        try:
            first = json.loads(mine.recv(4096) or b"{}")
        except (OSError, ValueError):
            first = {}
        mine.settimeout(None)
        if not first.get("ready"):
            commit.close()
            return None
        return commit


def serve(sock: socket.socket, job_data: dict, child, wait_status) -> None:
    """The commit process: prepare once, then fork rounds until the server closes its end."""
    import torch

    from regress.measure import worker
    from regress.measure.job import WorkerJob

    worker.die_with_parent(os.getppid())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP pool in a process that forks (see the module docstring)
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    # Its output (pytest's, a conftest's) goes nowhere: each round's own goes to its log.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    started = time.monotonic()
    job = WorkerJob.parse(job_data)
    worker.setup(job)
    prepared = worker.prepare(job)
    why = ""
    if not prepared.has_pytest:
        why = "nothing to collect once"
    elif torch.cuda.is_initialized():
        why = "collecting initialised CUDA"
    if why:
        sock.send(json.dumps({"direct": why}).encode())
        return
    sock.send(json.dumps({"ready": True, "seconds": time.monotonic() - started}).encode())
    for req, fds in requests(sock):
        if req["op"] == "fork":
            report_fd, log_fd = fds
            pid = os.fork()
            if pid == 0:
                torch.set_num_threads(threads)
                child(sock, req["job"], report_fd, log_fd, prepared)
            os.close(report_fd)
            os.close(log_fd)
            answer = {"pid": pid}
        else:
            for extra in fds:
                os.close(extra)
            flags = os.WNOHANG if req["op"] == "poll" else 0
            answer = {"status": wait_status(int(req["pid"]), flags)}
        sock.send(json.dumps(answer).encode())


if __name__ == "__main__":  # pragma: no cover - started by the fork server only
    sys.exit("regress: the commit process is forked by the fork server, not run")
