"""Instruction-count mode against torch's own collect_callgrind, and its repeatability.

    python scripts/instructions_check.py

Builds a temporary repository whose suite has 10 small torch benchmarks, then:
  1. times one `Timer.collect_callgrind()` call (torch starts a valgrind
     process that imports torch under full instrumentation);
  2. times `regress run HEAD --mode instructions` (one valgrind process for
     the whole suite), twice, and compares the two runs' counts per benchmark.
Targets (issue 7): the suite in at most 2x one collect_callgrind call, and
the two runs agreeing within 0.5% per benchmark. Exits 1 if either is missed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regress.storage.store import Store  # noqa: E402

SUITE = textwrap.dedent(
    """
    import torch
    import torch.utils.benchmark as benchmark

    def bench_small_ops():
        x = torch.ones(64, 64)
        v = torch.ones(1000)
        stmts = ["x + x", "x * 2", "x.sum()", "x.mul(x).sum(-1)", "x @ x", "torch.relu(v)",
                 "v.softmax(-1)", "v.cumsum(0)", "torch.cat([v, v])", "x.t().contiguous()"]
        for stmt in stmts:
            yield benchmark.Timer(stmt=stmt, globals={"x": x, "v": v, "torch": torch}, label="ops", sub_label=stmt)
    """
)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=check", "-c", "user.email=check@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "project"
        (repo / "benchmarks").mkdir(parents=True)
        (repo / "benchmarks" / "bench_ops.py").write_text(SUITE)
        (repo / "pyproject.toml").write_text('[tool.regress]\nmachine = "check"\n')
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "ops")

        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import torch.utils.benchmark as b; "
                "print(b.Timer('x + x', setup='x = torch.ones(64, 64)').collect_callgrind(number=20).counts())",
            ],
            check=True,
            cwd=tmp,
        )
        one_collect = time.perf_counter() - t
        print(f"one torch collect_callgrind call (1 benchmark): {one_collect:.1f}s")

        runs = []
        for i in range(2):
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "regress", "run", "HEAD", "--mode", "instructions"],
                cwd=repo,
                check=True,
                env=env,
                capture_output=True,
            )
            runs.append(time.perf_counter() - t)
            print(f"regress run --mode instructions, 10 benchmarks, run {i + 1}: {runs[-1]:.1f}s")

        (result,) = Store(repo / ".regress").load_all("check", "default")
        worst = 0.0
        for r in result.results:
            first, second = (c.value for c in r.counts)
            diff = abs(first - second) / first
            worst = max(worst, diff)
            print(f"  {r.id.sub_label:<22} {first:>12,} {second:>12,}  {diff:.4%}")
        ratio = max(runs) / one_collect
        print(
            f"suite / one collect_callgrind: {ratio:.2f}x (target <= 2x); worst disagreement {worst:.4%} (target <= 0.5%)"
        )
        return 0 if ratio <= 2 and worst <= 0.005 else 1


if __name__ == "__main__":
    sys.exit(main())
