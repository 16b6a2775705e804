"""The one set of fabricated records every test builds histories from: no timing, every number chosen."""

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

ORIGIN = "benchmarks/bench_ops.py:3 bench_ops"


def rounds_of(values, *, blocks: int = 6, number: int = 100, within: float = 0.01) -> tuple[Sample, ...]:
    """One Sample per value; the value is the round's fastest block per run, the other blocks a bit slower."""
    return tuple(
        Sample(number, tuple(v * number * (1 + within * k / blocks) for k in range(blocks)), started_at=float(i))
        for i, v in enumerate(values)
    )


def spec(sub="add", *, label="ops", description="", threads=1, stmt=None) -> TaskSpec:
    return TaskSpec(stmt=stmt or f"{sub}()", label=label, sub_label=sub, description=description, num_threads=threads)


def bench(
    values=(),
    *,
    label="ops",
    sub="add",
    description="",
    threads=1,
    task=None,
    failure=None,
    samples=None,
    origin=ORIGIN,
    **kw,
) -> BenchmarkResult:
    """A benchmark's result: one round per value (see `rounds_of`), or the given `samples`."""
    task = task or spec(sub, label=label, description=description, threads=threads)
    return BenchmarkResult(task, origin, samples if samples is not None else rounds_of(values, **kw), failure)


def timed(
    task: TaskSpec, *times: float, number: int = 10, at: float = 1.0, failure=None, origin=ORIGIN
) -> BenchmarkResult:
    """One single-block round per time (seconds per block of `number` runs), started one second apart."""
    return BenchmarkResult(task, origin, tuple(Sample(number, (t,), at + i) for i, t in enumerate(times)), failure)


def commit(
    sha: str,
    *results: BenchmarkResult,
    failures=(),
    complete=True,
    bench_filter="",
    reference=(),
    machine="box",
    env="default",
    torch="",
    python="",
    when=0,
    subject=None,
    parents=(),
    started_at=0.0,
    finished_at=0.0,
    cores=0,
) -> CommitResult:
    """One commit's stored result; a one-letter `sha` is repeated to 40."""
    full = sha * 40 if len(sha) == 1 else sha
    return CommitResult(
        commit=CommitInfo(
            full, tuple(parents), "A", "a@x", when, when, f"commit {sha}" if subject is None else subject
        ),
        machine=machine,
        env=env,
        fingerprint=Fingerprint(machine, cores=cores, torch_version=torch, python=python),
        settings=Settings(bench_filter=bench_filter),
        results=tuple(results),
        failures=tuple(failures),
        complete=complete,
        reference=rounds_of(reference) if reference else (),
        started_at=started_at,
        finished_at=finished_at,
    )


def noisy_rounds(level: float, n: int, *, seed: int, jitter: float = 0.004, busy: float = 0.3) -> list[float]:
    """Rounds as a busy machine gives them: a floor with small jitter, some rounds slowed a lot."""
    rng = np.random.default_rng(seed)
    values = level * np.exp(np.abs(rng.normal(0, jitter, n)))
    slowed = rng.random(n) < busy
    values[slowed] *= rng.uniform(1.2, 2.5, slowed.sum())
    return values.tolist()


def in_run(result: BenchmarkResult, run: str, *, process: int = 0) -> BenchmarkResult:
    """The result with every round taken by `run` (format 6's Sample.run)."""
    from dataclasses import replace

    return replace(result, samples=tuple(replace(s, run=run, process=process) for s in result.samples))


def pushes(
    levels, shifts, *, rounds: int = 5, jitter: float = 0.002, seed: int = 0, sub: str = "add", paired=True, cpus=None
):
    """A push history as the workflow makes it: push k is run k, on its own runner.

    levels[k]: commit k's true level; shifts[k]: how much slower run k's
    machine is (a ratio); cpus[k]: its CPU model (its fingerprint says).
    Run k measures commit k and, `paired`, commit k-1 again. Returns the
    CommitResults, oldest first, each holding every run's rounds.
    """
    from dataclasses import replace

    from regress.core.records import Run

    cpus = cpus or ["Test CPU"] * len(levels)
    rng = np.random.default_rng(seed)
    n = len(levels)
    held: list[list[Sample]] = [[] for _ in range(n)]
    run_ids = [f"20260101T{k:06d}-run{k}" for k in range(n)]
    for k in range(n):
        for c in (k - 1, k) if paired and k else (k,):
            base = levels[c] * shifts[k]
            values = base * np.exp(np.abs(rng.normal(0, jitter, rounds)))
            for s in rounds_of(values.tolist()):
                held[c].append(replace(s, run=run_ids[k]))
    out = []
    order = {r: i for i, r in enumerate(run_ids)}
    for c in range(n):
        runs = tuple(
            Run(r, started_at=float(i), fingerprint=Fingerprint("box", cpu=cpus[i]))
            for r, i in sorted(((r, order[r]) for r in {s.run for s in held[c]}), key=lambda p: p[1])
        )
        result = commit(_sha(c), bench(sub=sub, samples=tuple(held[c])), when=c, parents=(_sha(c - 1),) if c else ())
        out.append(replace(result, runs=runs))
    return out


def _sha(k: int) -> str:
    """A distinct 40-hex sha whose short form differs too."""
    return (f"{k + 1:04x}" * 10)[:40]
