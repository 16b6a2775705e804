"""What a round costs beyond measuring, and `regress run`'s overhead per commit, against one `import torch`.

    python scripts/overhead.py [--commits 8] [--repeats 3] [--pytest 30]

Builds a throwaway git repository with a tiny package, a tiny suite and N
commits, runs the real CLI (`python -m regress run HEAD~N..HEAD`, its default
round plan) with REGRESS_TRACE set, and splits its wall time into measuring
(from each benchmark's start message to its result, as the parent saw them,
plus the reference workload) and everything else: the CLI's start, the fork
server's one `import torch`, and per round the fork and the child's set-up,
the suites' import, and storing. The targets: a round beyond the first costs
far less than a bare `python -c 'import torch'` (at most 0.25x here), and the
overhead per commit stays within 1.5x one `import torch`. Medians over the
repeats, since a shared machine is noisy.

`--pytest N` measures a pytest-benchmark suite of N tests instead (a conftest
fixture with params, `pytest_generate_tests`, parametrize), run unchanged: its
collection (pytest's configuration, conftests, the items) happens once per fork
server and commit, and is counted as overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
TARGET = 1.5
ROUND_TARGET = 0.25

PACKAGE = """
import torch

def scale(x, k):
    return x * k  # commit {i}
"""

SUITE = """
import torch
import torch.utils.benchmark as benchmark
from tinypkg import scale


def bench_scale():
    x = torch.ones(256)
    for k in (2, 3):
        yield benchmark.Timer(stmt="scale(x, k)", globals={"scale": scale, "x": x, "k": k},
                              label="scale", sub_label=f"k={k}")
"""

PYTEST_CONFTEST = """
import pytest
import torch


@pytest.fixture(params=[64, 256], ids=["small", "large"])
def x(request):
    return torch.ones(request.param)


def pytest_generate_tests(metafunc):
    if metafunc.function.__name__ == "test_scale":
        metafunc.parametrize("k", range({ks}), ids=lambda k: f"k{{k}}")
"""

PYTEST_SUITE = """
import pytest
from tinypkg import scale


@pytest.mark.benchmark(group="scale")
def test_scale(benchmark, x, k):
    out = benchmark(scale, x, k)
    assert out.shape == x.shape


@pytest.mark.parametrize("k", [2, 3], ids=["two", "three"])
def test_scale_fixed(benchmark, x, k):
    benchmark(scale, x, k)
"""

PYPROJECT = """
[project]
name = "tinypkg"
version = "0"

[tool.regress]
min_run_time = 0.05
machine = "overhead"
"""


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGRESS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), env.get("PYTHONPATH", "")]))
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        env.setdefault(key, "overhead")
    for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        env.setdefault(key, "overhead@example.com")
    env.update(extra)
    return env


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=_env(), check=True, capture_output=True)


def make_repo(root: Path, commits: int, pytest_tests: int = 0) -> None:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "pyproject.toml").write_text(PYPROJECT.lstrip())
    (root / ".gitignore").write_text(".regress/\n")
    (root / "benchmarks").mkdir()
    if pytest_tests:
        # test_scale: 2 sizes x ks; test_scale_fixed: 2 x 2.
        ks = max(1, -(-(pytest_tests - 4) // 2))
        (root / "benchmarks" / "conftest.py").write_text(PYTEST_CONFTEST.format(ks=ks).lstrip())
        (root / "benchmarks" / "test_scale.py").write_text(PYTEST_SUITE.lstrip())
    else:
        (root / "benchmarks" / "bench_scale.py").write_text(SUITE.lstrip())
    (root / "src" / "tinypkg").mkdir(parents=True)
    for i in range(commits + 1):  # one more, so HEAD~N..HEAD has N
        (root / "src" / "tinypkg" / "__init__.py").write_text(textwrap.dedent(PACKAGE.format(i=i)).lstrip())
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"commit {i}")


def time_import_torch() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, env=_env())
    return time.perf_counter() - started


def one_run(root: Path, commits: int, trace: Path) -> dict:
    shutil.rmtree(root / ".regress", ignore_errors=True)
    trace.unlink(missing_ok=True)
    started = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "regress", "run", f"HEAD~{commits}..HEAD"],
        cwd=root,
        env=_env(REGRESS_TRACE=str(trace)),
        capture_output=True,
        text=True,
    )
    ended = time.time()
    if proc.returncode != 0:
        sys.exit(f"regress run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return split(events, started, ended, commits)


def split(events: list[dict], started: float, ended: float, commits: int) -> dict:
    """Wall time cut into phases, from the parent's trace."""
    t = lambda name: [e["t"] for e in events if e["event"] == name]
    starts, ends = t("bench_start"), t("bench_end")
    workers, hellos, found, refs, done = (
        t("worker_start"),
        t("hello"),
        t("discovered"),
        t("reference"),
        t("worker_done"),
    )
    assert len(starts) == len(ends) and len(workers) == len(done) == len(refs), "unexpected trace"
    measuring = sum(b - a for a, b in zip(starts, ends))
    reference = sum(r - _last_before(ends + found, [r])[0] for r in refs)
    phases = {"measuring": measuring + reference, "wall": ended - started, "rounds": len(workers)}
    phases["benchmarks"] = max((e.get("count", 0) for e in events if e["event"] == "discovered"), default=0)
    phases["cli start (python, imports, resolve, lock, worktrees)"] = workers[0] - started
    # The servers start together at a run's first fork (`pool.ServerPool`): their wall time, once.
    phases["fork server start (one import torch)"] = sum(e["seconds"] for e in events if e["event"] == "server_started")
    phases["fork to hello (child set-up, fingerprint)"] = (
        sum(h - w for w, h in zip(workers, hellos)) - phases["fork server start (one import torch)"]
    )
    phases["hello to discovered (suite imports)"] = sum(d - h for h, d in zip(hellos, found))
    phases["discovered to first benchmark"] = sum(
        _first_after(starts, [d])[0] - d for d in found if any(x >= d for x in starts)
    )
    phases["after the round (save, next fork)"] = sum(w - d for d, w in zip(done, workers[1:] + [t("run_end")[0]]))
    phases["cli end (summary, exit)"] = ended - t("run_end")[0]
    phases["overhead"] = phases["wall"] - phases["measuring"]
    per_round = (
        phases["fork to hello (child set-up, fingerprint)"]
        + phases["hello to discovered (suite imports)"]
        + phases["discovered to first benchmark"]
        + phases["after the round (save, next fork)"]
    )
    phases["per round beyond measuring"] = per_round / len(workers)
    return phases


def _first_after(times: list[float], marks: list[float]) -> list[float]:
    return [min(x for x in times if x >= m) for m in marks]


def _last_before(times: list[float], marks: list[float]) -> list[float]:
    return [max(x for x in times if x <= m) for m in marks]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pytest", type=int, default=0, metavar="N", help="a pytest-benchmark suite of N tests or more")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="regress-overhead-") as tmp:
        root = Path(tmp) / "tinyproject"
        make_repo(root, args.commits, args.pytest)
        imports, runs = [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine
            imports.append(time_import_torch())
            runs.append(one_run(root, args.commits, Path(tmp) / "trace.jsonl"))
            imports.append(time_import_torch())
    torch_import = statistics.median(imports)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    n = args.commits
    per_commit = med["overhead"] / n
    print(f"python -c 'import torch': {torch_import:.3f}s (median of {len(imports)})")
    print(f"suite: {runs[0]['benchmarks']} benchmarks" + (" (pytest-benchmark tests)" if args.pytest else " (Timers)"))
    print(
        f"regress run HEAD~{n}..HEAD: wall {med['wall']:.2f}s, measuring {med['measuring']:.2f}s, "
        f"overhead {med['overhead']:.2f}s, {med['rounds']:.0f} rounds (medians of {args.repeats})"
    )
    print("where the overhead goes, per commit:")
    for k, v in med.items():
        if k not in ("wall", "measuring", "overhead", "rounds", "per round beyond measuring", "benchmarks"):
            print(f"  {k:52s} {v / n:6.3f}s")
    round_ratio = med["per round beyond measuring"] / torch_import
    print(
        f"a round beyond measuring: {med['per round beyond measuring']:.3f}s = {round_ratio:.2f}x one `import torch` "
        f"({'within' if round_ratio <= ROUND_TARGET else 'OVER'} the {ROUND_TARGET}x target)"
    )
    ratio = per_commit / torch_import
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"overhead per commit: {per_commit:.3f}s = {ratio:.2f}x one `import torch` ({verdict} the {TARGET}x target)")
    sys.exit(0 if ratio <= TARGET and round_ratio <= ROUND_TARGET else 1)


if __name__ == "__main__":
    main()
