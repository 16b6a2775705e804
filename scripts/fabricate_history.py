#!/usr/bin/env python
"""Write a large fabricated results folder, for timing `regress report` at scale.

    python scripts/fabricate_history.py /tmp/big-results --commits 1000 --benchmarks 200

Every commit gets a result file (<out>/<machine>/<env>/<sha>.pkl) written
through `regress.storage.store.Store`, shaped like what the default plan
stores: `--rounds` rounds a benchmark (a range, "5-15": the adaptive plan
stops between its floor and ceiling) of `--times` blocks each (a range, "20-40":
what blocked_autorange takes at min_run_time 0.2 s), one memory figure a round,
compile figures for every 20th benchmark, the reference workload's rounds,
and one to three runs per commit (every round names its run and the process it
was forked from, as results format 6 records). A few benchmarks step up or
down at known commits (so change points exist), a few fail at some commits,
and one commit's build fails outright. Deterministic for a given `--seed`:
commit i's figures depend only on the seed, the history's length and i, so
one more commit can be written later (`which`).

Shas are fake (sha1 of the commit number) unless `shas` are given (a real
repository's, oldest first); the history is a single chain.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regress.core.merge import combine
from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    CompileStats,
    Failure,
    Fingerprint,
    MemoryUse,
    Run,
    Sample,
    Settings,
    TaskSpec,
)
from regress.storage.codec import encode
from regress.storage.store import Store

AUTHORS = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"]
VERBS = ["Speed up", "Refactor", "Fix", "Vectorize", "Simplify", "Inline", "Cache", "Tune"]
NOUNS = ["matmul path", "bmm kernel", "dispatcher", "autograd", "allocator", "softmax", "layer norm", "conv2d"]
START = 1_700_000_000  # 2023-11-14
# A paired history's runs: one standard deviation of a hosted runner's speed against the next (log).
SHIFT = 0.03


def sha_of(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def specs(n: int) -> list[TaskSpec]:
    """n benchmark specs: labels of 10, sub_label x description x threads."""
    out = []
    label = 0
    while len(out) < n:
        for sub in ("small", "medium"):
            for desc in ("float32", "float64", "int64"):
                for threads in (1, 4):
                    if len(out) < n and not (desc == "int64" and threads == 4):
                        out.append(
                            TaskSpec(
                                stmt=f"op{label}(x)",
                                label=f"suite{label:03d}.op",
                                sub_label=sub,
                                description=desc,
                                num_threads=threads,
                            )
                        )
        label += 1
    return out


def _write(store: Store, result: CommitResult) -> None:
    path = store.path(result.machine, result.env, result.commit.sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(result))


def span(text: str | int) -> tuple[int, int]:
    """ "5-15" -> (5, 15); "3" -> (3, 3)."""
    lo, _, hi = str(text).partition("-")
    return int(lo), int(hi or lo)


def fabricate(
    out: Path,
    *,
    commits: int = 1000,
    benchmarks: int = 200,
    rounds: str | int = "5-15",
    times: str | int = "20-40",
    machines: tuple[str, ...] = ("ci-runner",),
    envs: tuple[str, ...] = ("default",),
    seed: int = 0,
    shas: list[str] | None = None,
    which: range | list[int] | None = None,
    direct: bool = False,
    paired: bool = False,
) -> list[CommitInfo]:
    """Write commits `which` (default: all of range(commits)) of a history `commits` long.

    direct: write each file as it is (a fresh folder: nothing to merge with), without the
    results summary's entry, which the first command that reads the history then makes.
    paired: as the workflow's pushes measure (`regress run HEAD --paired`): commit i's first run
    measures commit i - 1 again, its rounds merged into that commit's file (so commit i rewrites
    two files), and every run's machine is a few percent faster or slower than the next (SHIFT).
    """
    rng = random.Random(seed)
    all_specs = specs(benchmarks)
    base = {s: 10 ** rng.uniform(-6, -2) for s in all_specs}  # 1 us .. 10 ms
    # Steps: every 10th benchmark gets 1.3x slower at a commit, every 25th 0.75x faster.
    steps: dict[TaskSpec, list[tuple[int, float]]] = {}
    for k, s in enumerate(all_specs):
        if k % 10 == 3:
            steps.setdefault(s, []).append((rng.randrange(commits // 5, commits), 1.3))
        if k % 25 == 7:
            steps.setdefault(s, []).append((rng.randrange(commits // 5, commits), 0.75))
    rounds_lo, rounds_hi = span(rounds)
    times_lo, times_hi = span(times)
    shas = shas or [sha_of(i) for i in range(max(commits, max(which, default=0) + 1 if which else 0))]
    store = Store(out)
    save = (lambda result: _write(store, result)) if direct else store.save

    def shift(run: str) -> float:
        """How much slower the run's machine is (1: unpaired, every run alike, as before)."""
        return math.exp(random.Random(f"{seed} shift {run}").gauss(0.0, SHIFT)) if paired else 1.0

    def level_at(s: TaskSpec, i: int, m_i: int) -> float:
        level = base[s] * (1.0 + 0.1 * m_i)
        for at, factor in steps.get(s, ()):
            if i >= at:
                level *= factor
        return level

    def info_of(i: int) -> CommitInfo:
        crng = random.Random(f"{seed} {commits} {i}")
        return CommitInfo(
            sha=shas[i],
            parents=(shas[i - 1],) if i else (),
            author=AUTHORS[i % len(AUTHORS)],
            author_email=f"dev{i % len(AUTHORS)}@example.com",
            authored_at=START + 3600 * i - 600,
            committed_at=START + 3600 * i,
            subject=f"{crng.choice(VERBS)} {crng.choice(NOUNS)} (#{10000 + i})",
        )

    def run_of(i: int, r: int, fingerprint: Fingerprint) -> Run:
        """Commit i's r-th run (0: its push's)."""
        when = START + 3600 * i + 60 + 600 * r
        return Run(
            id=f"fab-{i}-{r}", kind="run" if r == 0 else "check", started_at=float(when), fingerprint=fingerprint
        )

    def again(i: int, run: Run, machine: str, env: str, m_i: int, fingerprint: Fingerprint) -> CommitResult:
        """Commit i measured again by the next commit's push run (its rounds only)."""
        rng = np.random.default_rng([seed, commits, i, 1])
        results = []
        for k, s in enumerate(all_specs):
            if k % 50 == 11 and i % 97 == 13:
                continue  # it failed at i: measured again, it fails again (the stored failure stands)
            level = level_at(s, i, m_i) * shift(run.id)
            number = max(1, int(2e-4 / level))
            n_rounds = int(rng.integers(rounds_lo, rounds_hi + 1))
            samples = tuple(
                Sample(
                    number_per_run=number,
                    raw_times=tuple((rng.lognormal(0.0, 0.02, size=int(n)) * level * number).tolist()),
                    started_at=run.started_at + 30 + r,
                    run=run.id,
                    process=5000 + r % 3,
                )
                for r, n in enumerate(rng.integers(times_lo, times_hi + 1, size=n_rounds).tolist())
            )
            nbytes = int(1 << (10 + k % 12))
            results.append(
                BenchmarkResult(
                    s,
                    "benchmarks/fabricated.py:1 bench",
                    samples,
                    memory=tuple(MemoryUse(nbytes, nbytes // 2, "cpu", x.started_at) for x in samples),
                )
            )
        return CommitResult(
            commit=info_of(i),
            machine=machine,
            env=env,
            fingerprint=fingerprint,
            settings=Settings(min_rounds=rounds_lo, max_rounds=rounds_hi, budget=25.0),
            results=tuple(results),
            started_at=run.started_at,
            finished_at=run.started_at + 60,
            runs=(run,),
        )

    infos = []
    for i in which if which is not None else range(commits):
        crng = random.Random(f"{seed} {commits} {i}")
        nrng = np.random.default_rng([seed, commits, i])
        info = info_of(i)
        crng.choice(VERBS), crng.choice(NOUNS)  # the subject's draws: the figures' stay as they were
        infos.append(info)
        build_failed = i == commits // 2 and commits > 4
        # Most commits are measured by one run; every 5th is topped up by a second (and a third).
        n_runs = 1 + (i % 5 == 0) + (i % 15 == 0)
        for machine in machines:
            fingerprint = Fingerprint(
                machine=machine, cpu="Fabricated CPU", cores=4, python="3.11.7", torch_version="2.13.0"
            )
            runs = tuple(run_of(i, r, fingerprint) for r in range(n_runs))
            for m_i, env in enumerate(envs):
                results = []
                if not build_failed:
                    for k, s in enumerate(all_specs):
                        if k % 50 == 11 and i % 97 == 13:
                            results.append(
                                BenchmarkResult(
                                    s,
                                    "benchmarks/fabricated.py:1 bench",
                                    failure=Failure("error", "RuntimeError: boom"),
                                )
                            )
                            continue
                        level = level_at(s, i, m_i)
                        number = max(1, int(2e-4 / level))
                        n_rounds = min(rounds_hi, rounds_lo + int(crng.expovariate(0.4)))
                        blocks = nrng.integers(times_lo, times_hi + 1, size=n_rounds)
                        noise = nrng.lognormal(0.0, 0.02, size=int(blocks.sum())) * (level * number)
                        samples, at = [], 0
                        for r, n in enumerate(blocks.tolist()):
                            run = runs[r * n_runs // n_rounds]
                            samples.append(
                                Sample(
                                    number_per_run=number,
                                    raw_times=tuple((noise[at : at + n] * shift(run.id)).tolist()),
                                    started_at=run.started_at + r,
                                    run=run.id,
                                    process=4000 + 3 * (r * n_runs // n_rounds) + r % 3,
                                )
                            )
                            at += n
                        nbytes = int(1 << (10 + k % 12))
                        memory = tuple(MemoryUse(nbytes, nbytes // 2, "cpu", s_.started_at) for s_ in samples)
                        compiled = ()
                        if k % 20 == 5:
                            compiled = tuple(
                                CompileStats(0.5 + 0.01 * crng.random(), 1, 0, 0, s_.started_at) for s_ in samples
                            )
                        results.append(
                            BenchmarkResult(
                                s,
                                "benchmarks/fabricated.py:1 bench",
                                tuple(samples),
                                memory=memory,
                                compiled=compiled,
                            )
                        )
                reference = tuple(
                    Sample(
                        number_per_run=100,
                        raw_times=tuple((nrng.lognormal(0.0, 0.01, size=8) * 1e-3).tolist()),
                        started_at=runs[r * n_runs // rounds_hi].started_at + r,
                        run=runs[r * n_runs // rounds_hi].id,
                        process=4000 + r % 3,
                    )
                    for r in range(rounds_hi)
                )
                result = CommitResult(
                    commit=info,
                    machine=machine,
                    env=env,
                    fingerprint=fingerprint,
                    settings=Settings(min_rounds=rounds_lo, max_rounds=rounds_hi, budget=25.0),
                    results=tuple(results),
                    failures=(Failure("build", "build_command exited 1"),) if build_failed else (),
                    started_at=float(info.committed_at + 60),
                    finished_at=float(info.committed_at + 120),
                    reference=reference,
                    runs=runs,
                )
                # Paired: the successor's push measured this commit again. Within the history its rounds are
                # in this file at once (one write, not a merge a commit); one more commit merges them in.
                if paired and i + 1 < commits and not build_failed and i + 1 != commits // 2:
                    result = combine(result, again(i, run_of(i + 1, 0, fingerprint), machine, env, m_i, fingerprint))[0]
                save(result)
                if paired and i >= commits and i - 1 != commits // 2:
                    store.save(again(i - 1, runs[0], machine, env, m_i, fingerprint))  # a merge, even `direct`
    return infos


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="results folder to write (e.g. /tmp/big/.regress)")
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--benchmarks", type=int, default=200)
    p.add_argument("--rounds", default="5-15", help="rounds a benchmark: a range (the adaptive plan's) or one number")
    p.add_argument("--times", default="20-40", help="raw block times per round: a range or one number")
    p.add_argument("--machines", default="ci-runner", help="comma-separated machine names")
    p.add_argument("--envs", default="default", help="comma-separated environment names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--paired", action="store_true", help="as the workflow's pushes: each measures its parent again")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    fabricate(
        a.out,
        commits=a.commits,
        benchmarks=a.benchmarks,
        rounds=a.rounds,
        times=a.times,
        machines=tuple(a.machines.split(",")),
        envs=tuple(a.envs.split(",")),
        seed=a.seed,
        paired=a.paired,
    )
    print(f"wrote {a.commits} commits x {a.benchmarks} benchmarks to {a.out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
