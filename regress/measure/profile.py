"""One commit's benchmarks under torch.profiler, in a fresh worker.

The worker (`worker.py`, job mode "profile") discovers the suite as for a
round, and for each selected benchmark warms its Timer up and profiles its
statement (`suite/profiling.py`); the Chrome trace comes back as a file.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from regress.analysis.opdiff import Op, OpTable
from regress.core.config import Config
from regress.core.records import BenchmarkId
from regress.measure import one_commit, protocol
from regress.measure.engine import Target
from regress.measure.worker_process import (
    DISCOVERY_TIMEOUT_FLOOR,
    WorkerDied,
    WorkerHung,
    start_worker,
)


@dataclass(frozen=True)
class Profiled:
    """What the worker reported for one benchmark: its op table and trace, or why not."""

    id: BenchmarkId
    table: OpTable | None = None
    trace: bytes | None = None
    failure: str = ""


def _table(msg: dict) -> OpTable:
    ops = tuple(
        Op(str(o["name"]), int(o["count"]), float(o["self_cpu_us"]), float(o["self_cuda_us"]), bool(o["user"]))
        for o in msg["ops"]
    )
    return OpTable(int(msg["calls"]), ops)


def profile_target(cfg: Config, t: Target, bench_filter: str) -> tuple[dict[BenchmarkId, Profiled], list[str]]:
    """Profile `t`'s benchmarks matching `bench_filter`; (by benchmark, commit-level problems)."""
    if t.build_failure is not None:
        return {}, [str(t.build_failure)]
    if not t.suite_dir.is_dir():
        return {}, [f"no benchmark folder {cfg.benchmarks}/ in {t.info.short}"]
    got: dict[BenchmarkId, Profiled] = {}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="regress-profile-") as traces:
        job = {
            "cwd": str(t.code_dir),
            "import_path": str(one_commit.import_path(cfg, t.code_dir)),
            "benchmarks_dir": str(t.suite_dir),
            "shown_root": str(t.shown_root),
            "machine": cfg.machine_name,
            "env": cfg.env,
            "min_run_time": t.settings.min_run_time,
            "warmup": max(t.settings.warmup, 1),
            "bench_filter": bench_filter,
            "shard": None,
            "skip": [],
            "mode": "profile",
            "reference": False,
            "trace_dir": traces,
        }
        worker = start_worker(cfg, job, max(t.settings.timeout, DISCOVERY_TIMEOUT_FLOOR))
        specs = []
        current = None
        try:
            for msg in worker.messages():
                kind = msg["type"]
                if kind == "discovered":
                    specs = [protocol.spec(b["spec"]) for b in msg["benchmarks"]]
                    problems += [str(protocol.failure(f)) for f in msg["failures"]]
                    worker.timeout = t.settings.timeout
                elif kind == "start":
                    current = specs[msg["index"]].id
                elif kind == "profiled":
                    trace = Path(msg["trace"])
                    got[current] = Profiled(current, _table(msg), trace.read_bytes() if trace.is_file() else None)
                    current = None
                elif kind == "failed":
                    got[current] = Profiled(current, failure=str(protocol.failure(msg["failure"])))
                    current = None
                elif kind == "done":
                    break
        except WorkerHung:
            why = f"no answer within {worker.timeout:g}s"
            if current is None:
                problems.append(why)
            else:
                got[current] = Profiled(current, failure=why)
        except WorkerDied:
            why = worker.death()
            if current is None:
                problems.append(why)
            else:
                got[current] = Profiled(current, failure=why)
        finally:
            worker.kill()
    return got, problems
