"""Fabricated records for tests of the differ, change points and the engine: no timing, every number chosen."""

from __future__ import annotations

import numpy as np

from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)


def rounds_of(values, *, blocks: int = 6, number: int = 100, within: float = 0.01) -> tuple[Sample, ...]:
    """One Sample per value; the value is the round's fastest block per run, the other blocks a bit slower."""
    return tuple(
        Sample(number, tuple(v * number * (1 + within * k / blocks) for k in range(blocks)), started_at=float(i))
        for i, v in enumerate(values)
    )


def bench(values, *, label="ops", sub="add", description="", threads=1, **kw) -> BenchmarkResult:
    spec = TaskSpec(stmt=f"{sub}()", label=label, sub_label=sub, description=description, num_threads=threads)
    return BenchmarkResult(spec, "benchmarks/bench_ops.py:3 bench_ops", rounds_of(values, **kw))


def commit(sha: str, *results: BenchmarkResult, failures=(), complete=True, bench_filter="", reference=()) -> CommitResult:
    return CommitResult(
        commit=CommitInfo(sha * 40 if len(sha) == 1 else sha, (), "A", "a@x", 0, 0, f"commit {sha}"),
        machine="box",
        env="default",
        fingerprint=Fingerprint("box"),
        settings=Settings(bench_filter=bench_filter),
        results=tuple(results),
        failures=tuple(failures),
        complete=complete,
        reference=rounds_of(reference) if reference else (),
    )


def noisy_rounds(level: float, n: int, *, seed: int, jitter: float = 0.004, busy: float = 0.3) -> list[float]:
    """Rounds as a busy machine gives them: a floor with small jitter, some rounds slowed a lot."""
    rng = np.random.default_rng(seed)
    values = level * np.exp(np.abs(rng.normal(0, jitter, n)))
    slowed = rng.random(n) < busy
    values[slowed] *= rng.uniform(1.2, 2.5, slowed.sum())
    return values.tolist()
