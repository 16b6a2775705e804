"""regress measuring itself: what reads a long history (issue 18's guard against the next 19x).

Four benchmarks on a small fabricated history (made once per worker process,
in a temporary folder): the site build, decoding one results file, the change
points of the history, and one verdict (`regress compare` of two commits).
The history is written here from the records alone (no scripts/ import), so
the suite runs against older commits' code too: `regress run OLD..NEW`
measures the same work at each.
"""

from __future__ import annotations

import functools
import random
import tempfile
from pathlib import Path

import torch.utils.benchmark as benchmark

COMMITS, BENCHMARKS, ROUNDS, BLOCKS = 40, 60, 6, 25
LABEL = "regress itself"


@functools.cache
def _folder() -> Path:
    """A results folder of COMMITS x BENCHMARKS, shaped like a default run's (rounds of blocks, memory figures)."""
    from regress.core.records import (
        BenchmarkResult,
        CommitInfo,
        CommitResult,
        Fingerprint,
        MemoryUse,
        Sample,
        Settings,
        TaskSpec,
    )
    from regress.storage.store import Store

    rng = random.Random(18)
    root = Path(tempfile.mkdtemp(prefix="regress-self-"))
    store = Store(root / "results")
    specs = [TaskSpec(f"op{k}(x)", label=f"suite{k // 6}", sub_label=f"case{k}") for k in range(BENCHMARKS)]
    levels = [10 ** rng.uniform(-6, -3) for _ in specs]
    for i in range(COMMITS):
        info = CommitInfo(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "A", "a@x", 1000 + i, 1000 + i, f"c{i}")
        results = []
        for k, spec in enumerate(specs):
            level = levels[k] * (1.3 if k % 7 == 0 and i >= COMMITS // 2 else 1.0)
            samples = tuple(
                Sample(1, tuple(level * rng.lognormvariate(0, 0.02) for _ in range(BLOCKS)), float(r))
                for r in range(ROUNDS)
            )
            memory = tuple(MemoryUse(4096, 2048, "cpu", float(r)) for r in range(ROUNDS))
            results.append(BenchmarkResult(spec, "benchmarks/x.py:1 bench", samples, memory=memory))
        store.save(CommitResult(info, "self", "default", Fingerprint("self", cores=4), Settings(), tuple(results)))
    return root


@functools.cache
def _history():
    from regress.storage.store import Store

    return Store(_folder() / "results").history("self", "default")


def site_build():
    from regress.report import data, site
    from regress.storage.store import Store

    # Verdicts for the newest 3 commits, not 30: their bootstraps would hide what the build itself costs.
    data.VERDICT_COMMITS = 3
    site.build(Store(_folder() / "results"), _folder() / "site")


def decode_file():
    from regress.storage.codec import decode

    decode(_bytes(), "x.pkl")


@functools.cache
def _bytes() -> bytes:
    return next((_folder() / "results" / "self" / "default").glob("*.pkl")).read_bytes()


def change_points():
    from regress.analysis.changepoints import find_steps

    find_steps(_history(), threshold=0.05)


def verdict():
    from regress.analysis.diff import compare

    history = _history()
    compare(history[COMMITS // 2 - 1], history[COMMITS // 2], threshold=0.05)


def prepare():
    _history(), _bytes()


def bench_regress_itself():
    what = {
        "site_build": f"site build ({COMMITS} commits x {BENCHMARKS} benchmarks)",
        "decode_file": f"results file decode ({BENCHMARKS} benchmarks)",
        "change_points": f"change points ({COMMITS} x {BENCHMARKS})",
        "verdict": f"verdict of two commits ({BENCHMARKS} benchmarks)",
    }
    for name, sub_label in what.items():
        yield benchmark.Timer(
            stmt=f"{name}()",
            setup=f"from __main__ import {name}, prepare; prepare()",
            label=LABEL,
            sub_label=sub_label,
            description="python",
        )
