"""One real instruction-count run: one valgrind process for a couple of benchmarks."""

from __future__ import annotations

import os
import shutil

from regress.storage.store import Store

SUITE = """
import torch.utils.benchmark as benchmark

def loop(n):
    total = 0
    for i in range(n):
        total += i
    return total

def bench_loops():
    for n in (100, 1000):
        yield benchmark.Timer(stmt="loop(n)", globals={"loop": loop, "n": n}, label="loop", sub_label=f"n={n}")
"""


def test_instruction_counts_end_to_end(valgrind, repo):
    repo.commit("loops", {"benchmarks/bench_work.py": SUITE})
    proc = repo.regress("run", "HEAD", "--mode", "instructions", timeout=600, check=True)
    assert "2 measured" in proc.stdout
    sha = repo.git("rev-parse", "HEAD")
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    assert result.settings.mode == "instructions"
    by = {r.id.sub_label: r for r in result.results}
    small, large = by["n=100"], by["n=1000"]
    assert small.counted and not small.samples  # counts kept apart from times
    (count,) = small.counts
    assert count.number == 20 and len(count.per_call) == 6
    # Ten times the loop: about ten times the instructions (ints past 256 cost a bit more each).
    assert 6 < large.instructions / small.instructions < 16
    show = repo.regress("show", "HEAD", check=True)
    assert "instructions per call (callgrind)" in show.stdout
    assert f"{large.instructions:,}" in show.stdout
    # Times measured afterwards land beside the counts, never mixed.
    repo.regress("run", "HEAD", check=True)
    both = Store(repo.path / ".regress").load("testbox", "default", sha).by_id()
    assert all(r.ok and r.counted for r in both.values())

    # A commit that makes the loop do 3% more work: far below the wall-time
    # threshold, but counts see it (their default threshold is 1%).
    slower = SUITE.replace("for i in range(n):", "for i in range(n + n * 3 // 100):")
    repo.commit("3% more work", {"benchmarks/bench_work.py": slower})
    repo.regress("run", "HEAD", "--mode", "instructions", timeout=600, check=True)
    proc = repo.regress("compare", "HEAD~1", "HEAD", "--mode", "instructions", "--fail-on-regression")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "instructions per call (callgrind)" in proc.stdout
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip().startswith("n=")}
    assert lines["n=1000"].rstrip().endswith("regression")
    # 3% more iterations; the count per iteration itself moves up to ~2% with where
    # the heap's small-object pools stand (measured: the same base 381,707 on CI,
    # 388,611 here), so the change reads between +1% and +6%, never as unchanged.
    change = float(next(w for w in lines["n=1000"].split() if w.endswith("%")).rstrip("%"))
    assert 1 < change < 6, lines["n=1000"]
    same = repo.regress("compare", "HEAD", "HEAD", "--mode", "instructions", "--fail-on-regression")
    assert same.returncode == 0 and "2 unchanged" in same.stdout


def test_missing_valgrind_is_one_line(repo, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("git"), bin_dir / "git")
    proc = repo.regress("run", "HEAD", "--mode", "instructions", env={"PATH": str(bin_dir)})
    lines = [line for line in proc.stderr.splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr
    assert "needs valgrind" in lines[0] and "apt-get install valgrind" in lines[0]
