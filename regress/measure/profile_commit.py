"""One commit's benchmarks under torch.profiler, in a fresh worker.

The worker (`worker.py`, job mode PROFILE) discovers the suite as for a
round, and for each selected benchmark warms its Timer up and profiles its
statement (`suite/profiling.py`); the Chrome trace comes back as a file.
Not named `profile.py`: that is a stdlib module's name.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from regress.core.config import Config
from regress.core.ops import OpTable
from regress.core.records import BenchmarkId
from regress.measure import one_commit, protocol
from regress.measure.conversation import Conversation
from regress.measure.engine import Target
from regress.measure.job import JobMode
from regress.measure.worker_process import DISCOVERY_TIMEOUT_FLOOR, start_worker


@dataclass(frozen=True)
class Profiled:
    """What the worker reported for one benchmark: its op table and trace, or why not."""

    id: BenchmarkId
    table: OpTable | None = None
    trace: bytes | None = None
    failure: str = ""


def profile_target(cfg: Config, t: Target, bench_filter: str) -> tuple[dict[BenchmarkId, Profiled], list[str]]:
    """Profile `t`'s benchmarks matching `bench_filter`; (by benchmark, commit-level problems)."""
    if t.build_failure is not None:
        return {}, [str(t.build_failure)]
    if not t.suite_dir.exists():
        return {}, [f"no benchmark folder {cfg.benchmarks}/ in {t.info.short}"]
    got: dict[BenchmarkId, Profiled] = {}
    problems: list[str] = []
    settings = replace(t.settings, warmup=max(t.settings.warmup, 1), bench_filter=bench_filter)
    req = one_commit.Request(t.info, settings, t.code_dir, t.suite_dir, t.shown_root)
    with tempfile.TemporaryDirectory(prefix="regress-profile-") as traces:
        job = one_commit.job_for(cfg, req, mode=JobMode.PROFILE, trace_dir=Path(traces))
        worker = start_worker(cfg, job, max(t.settings.timeout, DISCOVERY_TIMEOUT_FLOOR))
        with Conversation(worker, t.settings.timeout) as talk:
            for msg in talk.messages():
                if isinstance(msg, protocol.Discovered):
                    problems += [str(f) for f in msg.failures]
                elif isinstance(msg, protocol.Profiled):
                    bid = talk.listed[msg.index].spec.id
                    trace = Path(traces) / Path(msg.trace).name  # only ever a file in this folder
                    got[bid] = Profiled(
                        bid, OpTable(msg.calls, msg.ops), trace.read_bytes() if trace.is_file() else None
                    )
                elif isinstance(msg, protocol.ENDS_ONE):  # failed (or skipped); or measured, which it wasn't asked
                    bid = talk.listed[msg.index].spec.id
                    why = str(msg.failure) if isinstance(msg, protocol.Failed) else "measured, not profiled"
                    got[bid] = Profiled(bid, failure=why)
        if talk.failure is not None:
            blamed = talk.blamed
            if blamed is None:
                problems.append(talk.failure.message)
            else:
                got[blamed.spec.id] = Profiled(blamed.spec.id, failure=talk.failure.message)
    return got, problems
