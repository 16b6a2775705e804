#!/usr/bin/env python
"""Write a large fabricated results folder, for timing `regress report` at scale.

    python scripts/fabricate_history.py /tmp/big-results --commits 1000 --benchmarks 200

Every commit gets a result file (<out>/<machine>/<env>/<sha>.pkl) written
through `regress.storage.store.Store`, with `--rounds` samples of `--times` raw block
times per benchmark, as `regress run` would store them. A few benchmarks step
up or down at known commits (so change points exist), a few benchmarks fail
at some commits, and one commit's build fails outright. Deterministic for a
given `--seed`.

Shas are fake (sha1 of the commit number); the history is a single chain.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.storage.store import Store

AUTHORS = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"]
VERBS = ["Speed up", "Refactor", "Fix", "Vectorize", "Simplify", "Inline", "Cache", "Tune"]
NOUNS = ["matmul path", "bmm kernel", "dispatcher", "autograd", "allocator", "softmax", "layer norm", "conv2d"]
START = 1_700_000_000  # 2023-11-14


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


def fabricate(
    out: Path,
    *,
    commits: int = 1000,
    benchmarks: int = 200,
    rounds: int = 3,
    times: int = 10,
    machines: tuple[str, ...] = ("ci-runner",),
    envs: tuple[str, ...] = ("default",),
    seed: int = 0,
) -> list[CommitInfo]:
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
    store = Store(out)
    infos = []
    for i in range(commits):
        sha = sha_of(i)
        info = CommitInfo(
            sha=sha,
            parents=(sha_of(i - 1),) if i else (),
            author=AUTHORS[i % len(AUTHORS)],
            author_email=f"dev{i % len(AUTHORS)}@example.com",
            authored_at=START + 3600 * i - 600,
            committed_at=START + 3600 * i,
            subject=f"{rng.choice(VERBS)} {rng.choice(NOUNS)} (#{10000 + i})",
        )
        infos.append(info)
        build_failed = i == commits // 2 and commits > 4
        for machine in machines:
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
                        level = base[s] * (1.0 + 0.1 * m_i)
                        for at, factor in steps.get(s, ()):
                            if i >= at:
                                level *= factor
                        number = max(1, int(1e-3 / level))
                        samples = tuple(
                            Sample(
                                number_per_run=number,
                                raw_times=tuple(level * number * rng.lognormvariate(0, 0.02) for _ in range(times)),
                                started_at=float(info.committed_at + 60 + r),
                            )
                            for r in range(rounds)
                        )
                        results.append(BenchmarkResult(s, "benchmarks/fabricated.py:1 bench", samples))
                store.save(
                    CommitResult(
                        commit=info,
                        machine=machine,
                        env=env,
                        fingerprint=Fingerprint(
                            machine=machine, cpu="Fabricated CPU", cores=4, python="3.11.7", torch_version="2.13.0"
                        ),
                        settings=Settings(),
                        results=tuple(results),
                        failures=(Failure("build", "build_command exited 1"),) if build_failed else (),
                        started_at=float(info.committed_at + 60),
                        finished_at=float(info.committed_at + 120),
                    )
                )
    return infos


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="results folder to write (e.g. /tmp/big/.regress)")
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--benchmarks", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--times", type=int, default=10, help="raw block times per round")
    p.add_argument("--machines", default="ci-runner", help="comma-separated machine names")
    p.add_argument("--envs", default="default", help="comma-separated environment names")
    p.add_argument("--seed", type=int, default=0)
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
    )
    print(f"wrote {a.commits} commits x {a.benchmarks} benchmarks to {a.out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
