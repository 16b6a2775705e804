"""What a worker is asked to do: one frozen record, sent as JSON and parsed with field checks.

The runner builds a `WorkerJob` (`one_commit.job_for`) and sends `plain()`: on
a fresh worker's stdin, or inside the fork server's request. The worker
(`worker.main`, `forkserver`) builds it back with `parse`, which checks
every field as a results file's are (`core/checks.py`): a job that is not
one stops that worker with one line, not a KeyError deep in a benchmark.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from regress.core.checks import Invalid, from_plain
from regress.core.records import BenchmarkId
from regress.measure.shard import Shard


class JobMode(str, Enum):
    """What the worker does with each benchmark it discovers."""

    TIME = "time"  # a round of wall time (and memory, compile figures, tracked values)
    INSTRUCTIONS = "instructions"  # callgrind's instruction counts
    LIST = "list"  # discover only: `regress list`
    PROFILE = "profile"  # torch.profiler's operators: `regress explain`


@dataclass(frozen=True)
class Callgrind:
    """An instruction-count job's counter: where callgrind dumps, its helper, and how many calls."""

    out_dir: Path
    helper: Path | None
    number: int
    repeats: int


@dataclass(frozen=True)
class WorkerJob:
    cwd: Path  # the commit's checkout: the worker's working folder
    import_path: Path  # the commit's code, first on sys.path
    benchmarks_dir: Path
    shown_root: Path  # file names in origins are shown relative to it
    machine: str
    env: str
    mode: JobMode
    min_run_time: float = 0.2
    warmup: int = 1
    bench_filter: str = ""
    shard: Shard | None = None
    skip: tuple[BenchmarkId, ...] = ()  # measured already, or wanting no more rounds
    reference: bool = False  # also time the reference workload (time mode)
    callgrind: Callgrind | None = None  # instructions mode
    trace_dir: Path | None = None  # profile mode: where the Chrome traces go
    pytest_args: tuple[str, ...] = ()  # for the benchmark path's pytest modules (`pytest_args`, `--pytest-args`)

    def plain(self) -> dict:
        """As JSON-ready values: what the worker reads."""
        return _plain(dataclasses.asdict(self))

    @classmethod
    def parse(cls, data) -> WorkerJob:
        """The job `plain()` gave; ValueError saying what is wrong with anything else."""
        try:
            return from_plain(cls, data)
        except Invalid as exc:
            raise ValueError(f"not a worker job: {exc.under('job')}") from None


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
