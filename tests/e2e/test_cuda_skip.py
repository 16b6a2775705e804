"""On a machine without a GPU, CUDA benchmarks are skipped with the reason, never failed."""

from __future__ import annotations

import pytest
import torch

from regress.storage.store import Store

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="tests the behaviour without a GPU")

SUITE = """
import torch
import torch.utils.benchmark as benchmark
import regress

@regress.benchmark(params={"n": [64]}, device=["cpu", "cuda"], label="dev")
def add(n, device):
    x = torch.ones(n, device=device)
    return lambda: x + 1

def bench_plain_cuda():
    x = torch.randn(8, 8, device="cuda")
    return benchmark.Timer(stmt="x @ x", globals={"x": x}, label="plain cuda")
"""


def test_cuda_benchmarks_are_skipped_and_the_rest_runs(repo):
    repo.commit("cuda", {"benchmarks/bench_cuda.py": SUITE})
    listing = repo.regress("list", check=True)
    assert "dev / n=64, device=cuda [1 thread]" in listing.stdout
    assert "(skipped here: CUDA is not available on this machine)" in listing.stdout
    proc = repo.regress("run", "HEAD")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 measured" in proc.stdout and "2 skipped" in proc.stdout
    sha = repo.git("rev-parse", "HEAD")
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    (skipped,) = result.skipped
    assert skipped.id.sub_label == "n=64, device=cuda" and skipped.failure.kind == "skipped"
    assert not result.failed and not result.problems
    (plain,) = [f for f in result.failures if f.kind == "skipped"]
    assert "bench_plain_cuda needs CUDA" in plain.message
    show = repo.regress("show", check=True).stdout
    assert "skipped: dev / n=64, device=cuda" in show


REAL_BUG = """
import torch.utils.benchmark as benchmark

def bench_broken_kernel():
    # A bug whose message mentions CUDA, on a machine without one: a failure, not a skip.
    raise RuntimeError("expected a CUDA-like layout for the fused kernel, got strided")
"""


def test_an_error_that_only_mentions_cuda_is_a_failure_not_a_skip(repo):
    repo.commit("cuda bug", {"benchmarks/bench_cuda.py": SUITE, "benchmarks/bench_bug.py": REAL_BUG})
    proc = repo.regress("run", "HEAD")
    sha = repo.git("rev-parse", "HEAD")
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    problems = [f for f in result.problems if "bench_broken_kernel" in f.message]
    assert len(problems) == 1 and problems[0].kind == "suite", result.failures
    # The benchmarks that do need a GPU are still skipped, by where torch raised.
    assert [f for f in result.failures if f.kind == "skipped" and "bench_plain_cuda needs CUDA" in f.message]
    assert proc.returncode == 2 and "bench_broken_kernel" in proc.stderr
