"""Bring the benchmarks people already have: pytest-benchmark suites as they are, a benchmark folder
that holds other things, a package that reads its own version from installed metadata.

Real git repositories in temp folders, the real CLI in a subprocess, real torch code timed; the
"without pytest-benchmark" and "without pytest" cases run in a virtual environment that really lacks them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import cli_env

from regress.storage.store import Store

ROOT_CONFTEST = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--size", type=int, default=8, help="tensor side")

@pytest.fixture
def size(request):
    return request.config.getoption("--size")
"""

BENCH_CONFTEST = """
import pytest

@pytest.fixture(params=[1, 2], ids=["one", "two"])
def factor(request):
    return request.param

def pytest_generate_tests(metafunc):
    if "n" in metafunc.fixturenames:
        metafunc.parametrize("n", [100, 1000], ids=lambda n: f"n{n}")
"""

TESTS = """
import pytest
import torch
from mypkg import work

def test_work(benchmark, n):
    assert benchmark(work, n) == sum(range(n))

@pytest.mark.benchmark(group="tensors")
@pytest.mark.parametrize("op", ["relu", "tanh"], ids=["R", "T"])
def test_act(benchmark, op, size, factor):
    x = torch.ones(size, size) * factor
    benchmark(getattr(torch, op), x)

def test_rgb_only(benchmark):
    pytest.skip("needs an RGB image")

def test_wrong(benchmark):
    total = benchmark(work, 10)
    assert total == 0, "the sum is wrong"

def test_sorted_fresh(benchmark):
    def fresh():
        return ([5, 4, 3, 2, 1] * 20,), {}

    def sort_in_place(xs):
        assert xs[0] == 5, "setup did not run before this call"
        xs.sort()

    benchmark.pedantic(sort_in_place, setup=fresh, rounds=50)

def test_not_a_benchmark():
    assert work(3) == 3
"""

PYPROJECT_PYTEST = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
min_run_time = 0.01
machine = "testbox"
min_rounds = 2
max_rounds = 2
pytest_args = "--size 16"
"""


def _pytest_project(repo) -> str:
    return repo.commit(
        "pytest-benchmark suite",
        {
            "pyproject.toml": PYPROJECT_PYTEST,
            "conftest.py": ROOT_CONFTEST,
            "benchmarks/conftest.py": BENCH_CONFTEST,
            "benchmarks/test_ops.py": TESTS,
        },
    )


def _by_name(result):
    return {(r.spec.label, r.spec.sub_label, r.spec.description): r for r in result.results}


def test_a_pytest_benchmark_suite_is_listed_and_measured_as_it_is(repo):
    sha = _pytest_project(repo)
    listing = repo.regress("list", check=True).stdout
    # Fixtures from two conftest.py files, pytest_generate_tests, parametrize ids, group marks;
    # each with its pytest node id.
    for line in (
        "test_ops / n100 / test_work [1 thread]\tbenchmarks/test_ops.py:5 benchmarks/test_ops.py::test_work[n100]",
        "tensors / one-R / test_act [1 thread]\tbenchmarks/test_ops.py:8 benchmarks/test_ops.py::test_act[one-R]",
        "tensors / two-T / test_act [1 thread]",
        "benchmarks/test_ops.py::test_sorted_fresh",
    ):
        assert line in listing, listing
    assert "test_not_a_benchmark" not in listing
    assert (
        len([ln for ln in listing.splitlines() if " [1 thread]" in ln]) == 2 + 2 + 4 + 3
    )  # bench_work.py, test_work, test_act, the other three

    proc = repo.regress("run", "HEAD")
    assert proc.returncode == 1, proc.stderr  # the failing assertion is a failure at this commit
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    got = _by_name(result)
    for key in [
        ("test_ops", "n100", "test_work"),
        ("test_ops", "n1000", "test_work"),
        ("tensors", "two-T", "test_act"),
    ]:
        assert got[key].ok and len(got[key].samples) == 2, got[key]
        assert got[key].memory, got[key]
    # The option from pytest_args reached the conftest: a 16x16 float32 output is 1 KiB a call.
    assert got[("tensors", "one-R", "test_act")].memory[0].allocated == 16 * 16 * 4
    # pedantic's setup ran before every timed call (the target asserts its input is fresh).
    pedantic = next(r for k, r in got.items() if k[2] == "test_sorted_fresh")
    assert pedantic.ok and pedantic.samples[0].number_per_run == 1, pedantic.failure
    skipped = next(r for k, r in got.items() if k[2] == "test_rgb_only")
    assert skipped.failure.kind == "skipped" and skipped.failure.message == "needs an RGB image"
    wrong = next(r for k, r in got.items() if k[2] == "test_wrong")
    assert wrong.failure.kind == "error" and wrong.failure.message.startswith("AssertionError: the sum is wrong")
    assert wrong.failure.where == "benchmarks/test_ops.py:19" and not wrong.samples
    assert "skipped: needs an RGB image" in proc.stdout

    # --pytest-args replaces pytest_args: the option reaches the conftest at its new value.
    again = repo.regress("run", "HEAD", "--pytest-args=--size 32", "--bench", "one-R")
    assert again.returncode == 0, again.stderr
    got = _by_name(Store(repo.path / ".regress").load("testbox", "default", sha))
    assert {m.allocated for m in got[("tensors", "one-R", "test_act")].memory} == {16 * 16 * 4, 32 * 32 * 4}


COUNTING_CONFTEST = """
import os

with open(os.environ["COLLECTED_LOG"], "a") as fh:
    fh.write(f"{os.getpid()}\\n")
"""

SMALL_TESTS = """
import torch

def test_add(benchmark):
    x = torch.ones(64)
    benchmark(torch.add, x, x)
"""


def test_each_round_collects_for_itself_and_a_commit_process_collects_once_when_asked(repo, tmp_path):
    sha = repo.commit(
        "a pytest suite that counts its collections",
        {"benchmarks/conftest.py": COUNTING_CONFTEST, "benchmarks/test_small.py": SMALL_TESTS},
    )
    log = tmp_path / "collected.log"
    # By default every round is a fresh fork of a server and collects the commit's tests itself: a layout of
    # its own (rounds forked from one commit process all shared its luck, and commits differed by it).
    env = {"COLLECTED_LOG": str(log), "REGRESS_SERVERS": "1"}
    repo.regress("run", "HEAD", "--min-rounds", "4", "--max-rounds", "4", env=env, check=True)
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    add = next(r for r in result.results if r.spec.description == "test_add")
    assert len(add.samples) == 4
    assert len(log.read_text().split()) == 4, log.read_text()  # four rounds, four collections
    # Asked for (REGRESS_COMMIT_PROCESS=1): one collection per server and commit, its rounds forked from it.
    log.unlink()
    repo.regress(
        "run", "HEAD", "--min-rounds", "4", "--max-rounds", "4", env={**env, "REGRESS_COMMIT_PROCESS": "1"}, check=True
    )
    assert len(log.read_text().split()) == 1, log.read_text()
    log.unlink()
    repo.regress(
        "run",
        "HEAD",
        "--min-rounds",
        "6",
        "--max-rounds",
        "6",
        env={"COLLECTED_LOG": str(log), "REGRESS_COMMIT_PROCESS": "1", "REGRESS_SERVERS": ""},  # the default pool
        check=True,
    )
    assert len(log.read_text().split()) == 3, log.read_text()  # three servers: each collects once


def _python_without(tmp_path: Path, *left_out: str) -> str:
    """A virtual environment with the running one's packages except `left_out` (really not importable)."""
    venv = tmp_path / ("venv-without-" + "-".join(left_out))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    shelf = tmp_path / ("packages-without-" + "-".join(left_out))
    shelf.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        name = entry.name.lower().replace("-", "_")
        if any(name == p or name.startswith((p + "-", p + ".")) for p in left_out):
            continue
        if entry.suffix == ".pth" or entry.name == "__pycache__":
            continue
        (shelf / entry.name).symlink_to(entry)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "shelf.pth").write_text(str(shelf) + "\n")
    for p in left_out:
        probe = subprocess.run([str(python), "-c", f"import {p}"], capture_output=True, text=True)
        assert probe.returncode != 0, f"{p} is still importable in {venv}"
    return str(python)


WHICH_FIXTURE = """
import importlib.util
import os

import torch

HAVE = importlib.util.find_spec("pytest_benchmark") is not None

def test_fixture(benchmark):
    assert HAVE == (os.environ["EXPECT_PYTEST_BENCHMARK"] == "1"), HAVE
    assert type(benchmark).__module__ == "regress.suite.pytest_plugin", type(benchmark)
    x = torch.ones(128)
    benchmark(torch.add, x, x)
"""


def test_regress_supplies_the_fixture_with_and_without_pytest_benchmark_installed(repo, tmp_path):
    import importlib.util

    assert importlib.util.find_spec("pytest_benchmark") is not None, (
        "pytest-benchmark is missing from this environment; pip install -e '.[test]' installs it"
    )
    sha = repo.commit("which fixture", {"benchmarks/test_which.py": WHICH_FIXTURE})
    store = Store(repo.path / ".regress")
    repo.regress("run", "HEAD", env={"EXPECT_PYTEST_BENCHMARK": "1"}, check=True)
    with_it = next(r for r in store.load("testbox", "default", sha).results if r.spec.description == "test_fixture")
    assert with_it.ok and with_it.memory and with_it.memory[0].allocated >= 128 * 4

    python = _python_without(tmp_path, "pytest_benchmark")
    proc = subprocess.run(
        [python, "-m", "regress", "run", "HEAD", "--env", "without"],
        cwd=repo.path,
        env=cli_env({"EXPECT_PYTEST_BENCHMARK": "0"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    without = next(r for r in store.load("testbox", "without", sha).results if r.spec.description == "test_fixture")
    assert without.ok and without.memory[0].allocated == with_it.memory[0].allocated


def test_pytest_missing_is_one_line_naming_the_install(repo, tmp_path):
    repo.commit("pytest suite", {"benchmarks/test_which.py": WHICH_FIXTURE})
    python = _python_without(tmp_path, "pytest", "_pytest")
    for command in (["list"], ["run", "HEAD"]):
        proc = subprocess.run(
            [python, "-m", "regress", *command], cwd=repo.path, env=cli_env(), capture_output=True, text=True
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("regress: error:")]
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "benchmarks/test_which.py holds pytest-benchmark tests" in lines[0]
        assert "pip install pytest" in lines[0]


DRIVER = """
import argparse
import torch

def bench_linalg(device):
    a = torch.randn(64, 64, device=device)
    return torch.linalg.inv(a)

def bench_conv(device, dtype=torch.float32):
    return None

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    bench_linalg(parser.parse_args().device)
"""

NEEDS_MISSING = """
import torch
import cv2_not_installed_here

def bench_blur():
    return None
"""

HELPERS = """
import torch

def make_image(side):
    return torch.ones(3, side, side)
"""

MIXED_SUITE = """
import torch
import torch.utils.benchmark as benchmark

def bench_scale():
    return benchmark.Timer(stmt="x * 2", globals={"x": torch.ones(32)}, label="scale")

def bench_helper_with_args(device):
    raise AssertionError("never called")
"""


def test_a_folder_that_holds_other_things_names_each_once_and_measures_the_rest(repo):
    sha = repo.commit(
        "a folder with more than benchmarks",
        {
            "benchmarks/geometry/driver.py": DRIVER,
            "benchmarks/geometry/needs_cv.py": NEEDS_MISSING,
            "benchmarks/helpers.py": HELPERS,
            "benchmarks/mixed.py": MIXED_SUITE,
            # Its import is not a statement regress can read: pytest's collection fails on it.
            "benchmarks/test_needs.py": "import importlib\n\nimportlib.import_module('not_installed_pkg_x')\n",
        },
    )
    proc = repo.regress("list")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    notes = [ln for ln in proc.stdout.splitlines() if "not a benchmark" in ln or "not measured" in ln]
    assert sorted(notes) == sorted(
        [
            "benchmarks/geometry/driver.py:4 bench_linalg takes arguments (device): not a benchmark",
            "benchmarks/geometry/driver.py:8 bench_conv takes arguments (device): not a benchmark",
            "benchmarks/geometry/needs_cv.py:2 imports cv2_not_installed_here, which is not installed here: not measured",
            "benchmarks/helpers.py defines no bench_ function or benchmark test: not a benchmark",
            "benchmarks/mixed.py:7 bench_helper_with_args takes arguments (device): not a benchmark",
            "benchmarks/test_needs.py imports not_installed_pkg_x, which is not installed here: not measured",
        ]
    ), proc.stdout
    assert "scale / x * 2 [1 thread]" in proc.stdout and "work / n=100" in proc.stdout

    second = repo.commit("one more")
    run = repo.regress("run", f"{sha}~1..{second}", "--min-rounds", "1", "--max-rounds", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    for note in notes:  # named once for the whole run, not once a commit or a round
        assert (run.stdout + run.stderr).count(note) == 1, run.stderr
    result = Store(repo.path / ".regress").load("testbox", "default", second)
    assert sorted(r.spec.label for r in result.results if r.ok) == ["scale", "work", "work"]
    assert not result.failures


VERSIONED_PYPROJECT = """
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "my-pkg"
dynamic = ["version"]

[tool.setuptools_scm]
version_file = "src/mypkg/_version.py"

[tool.regress]
min_run_time = 0.01
machine = "testbox"
min_rounds = 1
max_rounds = 1
"""

READS_ITS_VERSION = """
from importlib.metadata import version

__version__ = version("my-pkg")
from ._version import version as built_version

def work(n):
    return sum(range(n))
"""


def test_a_package_that_reads_its_own_version_measures_at_every_commit_without_a_build(repo):
    first = repo.commit(
        "read the version from installed metadata",
        {"pyproject.toml": VERSIONED_PYPROJECT, "src/mypkg/__init__.py": READS_ITS_VERSION},
    )
    second = repo.commit("another commit")
    assert not (repo.path / "src/mypkg/_version.py").exists()
    run = repo.regress("run", f"{first}~1..{second}")
    assert run.returncode == 0, run.stdout + run.stderr
    store = Store(repo.path / ".regress")
    for sha in (first, second):
        result = store.load("testbox", "default", sha)
        assert not result.failures, result.failures
        assert sorted(r.spec.sub_label for r in result.results if r.ok) == ["n=100", "n=1000"]


MEM_TESTS = """
import torch
from mypkg import scaled

def test_scaled(benchmark):
    x = torch.ones(256, 256)
    out = benchmark(scaled, x)
    assert out.shape == x.shape
"""


def test_a_pytest_benchmark_benchmarks_memory_verdict_and_explain(repo):
    base = repo.commit(
        "scaled",
        {
            "src/mypkg/ops.py": "def scaled(x):\n    return x * 2.0\n",
            "src/mypkg/__init__.py": "from .ops import scaled\n",
        },
    )
    repo.write("benchmarks/test_mem.py", MEM_TESTS)
    repo.git("rm", "-q", "benchmarks/bench_work.py")
    base = repo.commit("the benchmark, as a pytest-benchmark test")
    head = repo.commit("clone the output", {"src/mypkg/ops.py": "def scaled(x):\n    return (x * 2.0).clone()\n"})
    repo.regress("run", base, head, "--min-rounds", "1", "--max-rounds", "1", check=True)
    doc = json.loads(
        repo.regress("compare", base, head, "--metric", "allocated", "--format", "json", check=True).stdout
    )
    (verdict,) = doc["verdicts"]
    assert verdict["description"] == "test_scaled" and verdict["verdict"] == "regression", verdict
    explained = json.loads(
        repo.regress("explain", base, head, "--bench", "test_scaled", "--format", "json", check=True).stdout
    )
    (item,) = explained["benchmarks"]
    rows = {r["name"]: r for r in item["ops"]}
    assert rows["aten::clone"]["status"] == "new" and rows["aten::mul"]["status"] != "new", item["ops"][:5]
    text = repo.regress("explain", base, head, "--bench", "test_scaled", check=True).stdout
    assert "aten::clone" in text and " new " in text


def test_benchmarks_path_takes_one_file(repo):
    _pytest_project(repo)
    listing = repo.regress("list", "--benchmarks", "benchmarks/test_ops.py", check=True).stdout
    assert "test_ops / n100 / test_work" in listing and "work / n=100" not in listing
    timers = repo.regress("list", "--benchmarks", "benchmarks/bench_work.py", check=True).stdout
    assert "work / n=100" in timers and "test_work" not in timers
    missing = repo.regress("list", "--benchmarks", "benchmarks/nothing.py")
    assert missing.returncode == 2 and "no benchmark folder or file" in missing.stderr
    assert os.linesep not in missing.stderr.strip()


LOOP_TESTS = """
import pytest

def loop(n):
    total = 0
    for i in range(n):
        total += i
    return total

@pytest.mark.parametrize("n", [100, 1000])
def test_loop(benchmark, n):
    assert benchmark(loop, n) == sum(range(n))
"""


def test_a_pytest_benchmark_test_gets_instruction_counts(valgrind, repo):
    sha = repo.commit("loops as pytest-benchmark tests", {"benchmarks/test_loops.py": LOOP_TESTS})
    repo.regress("run", "HEAD", "--mode", "instructions", "--bench", "test_loop", timeout=600, check=True)
    by = {r.id.sub_label: r for r in Store(repo.path / ".regress").load("testbox", "default", sha).results}
    small, large = by["100"], by["1000"]
    assert small.counted and not small.samples and large.counted
    # Ten times the loop: about ten times the instructions.
    assert 6 < large.instructions / small.instructions < 16
