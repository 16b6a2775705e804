"""`regress list`, `run` and `show` end to end: real git repo, real CLI, real torch timing."""

from __future__ import annotations

import pickle
import subprocess

from conftest import cli_env, regress_cmd

from regress.storage.store import Store


def _one_error_line(proc) -> str:
    # Progress lines may precede it on stderr; the error itself is one line.
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_list_prints_every_identity(repo):
    proc = repo.regress("list", check=True)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("work / n=100 [1 thread]")
    assert "benchmarks/bench_work.py:4 bench_work" in lines[0]


def test_run_head_stores_pickle_and_show_prints_compare(repo):
    sha = repo.git("rev-parse", "HEAD")
    proc = repo.regress("run", "HEAD", check=True)
    assert "2 measured" in proc.stdout
    path = repo.path / ".regress" / "testbox" / "default" / f"{sha}.pkl"
    assert path.is_file()
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    assert result.commit.sha == sha and result.commit.subject == "initial"
    assert result.commit.author == "Test Author"
    assert result.fingerprint.torch_version and result.fingerprint.cores >= 1
    assert result.fingerprint.python.count(".") == 2
    assert {str(r.id) for r in result.results} == {"work / n=100 [1 thread]", "work / n=1000 [1 thread]"}
    for r in result.results:
        assert len(r.samples) == 3  # the test projects' fixed plan: 3 rounds, each a worker of its own
        for sample in r.samples:
            assert sample.number_per_run >= 1 and len(sample.raw_times) >= 1
        assert r.spec.stmt == "work(n)"
    # n=1000 does ten times the work of n=100.
    medians = {r.id.sub_label: r.samples[0].median for r in result.results}
    assert medians["n=1000"] > 3 * medians["n=100"]

    show = repo.regress("show", check=True)
    assert "[------" in show.stdout and "work" in show.stdout
    assert "n=100 " in show.stdout and "n=1000" in show.stdout
    assert "\x1b[" not in show.stdout  # no colour when not a terminal


def test_run_measures_committed_code_not_uncommitted_edits(repo):
    repo.commit("fast", {"src/mypkg/__init__.py": "def work(n):\n    return n\n"})
    # An uncommitted edit that would break any import of the working tree's code.
    repo.write("src/mypkg/__init__.py", "raise RuntimeError('uncommitted edit was imported')\n")
    proc = repo.regress("run", "HEAD", check=True)
    assert "2 measured" in proc.stdout
    assert repo.git("status", "--porcelain") == "M src/mypkg/__init__.py"


def test_suite_with_syntax_error_names_file_and_line_and_keeps_others(repo):
    repo.commit("broken suite", {"benchmarks/bench_broken.py": "def bench_x(:\n    pass\n"})
    proc = repo.regress("run", "HEAD")
    line = _one_error_line(proc)
    assert "benchmarks/bench_broken.py:1" in line and "SyntaxError" in line
    sha = repo.git("rev-parse", "HEAD")
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    assert sum(r.ok for r in result.results) == 2


def test_suite_failing_import_names_the_line(repo):
    # A suite (it defines a benchmark) that breaks stays an error; a file that defines none is not run.
    repo.write(
        "benchmarks/bench_imports.py", "import os\nfrom mypkg import does_not_exist\n\ndef bench_x():\n    pass\n"
    )
    proc = repo.regress("list")
    line = _one_error_line(proc)
    assert "benchmarks/bench_imports.py:2" in line and "ImportError" in line
    assert len(proc.stdout.strip().splitlines()) == 2


def test_raising_benchmark_is_recorded_and_others_still_run(repo):
    repo.commit(
        "raising",
        {
            "benchmarks/bench_raise.py": """
                import torch.utils.benchmark as benchmark

                def boom():
                    raise ValueError("kaboom at runtime")

                def bench_raises():
                    return benchmark.Timer(stmt="boom()", globals={"boom": boom}, label="raises")
            """
        },
    )
    proc = repo.regress("run", "HEAD")
    assert proc.returncode == 1, proc.stderr
    assert "ValueError: kaboom at runtime" in proc.stdout
    sha = repo.git("rev-parse", "HEAD")
    result = Store(repo.path / ".regress").load("testbox", "default", sha)
    by_label = {r.id.label: r for r in result.results}
    assert by_label["raises"].failure.kind == "error"
    assert "kaboom" in by_label["raises"].failure.message
    assert sum(r.ok for r in result.results) == 2
    show = repo.regress("show", check=True)
    assert "failed: raises" in show.stdout


def test_duplicate_identity_names_both_places(repo):
    repo.write(
        "benchmarks/bench_dupe.py",
        """
        import torch.utils.benchmark as benchmark

        def bench_a():
            return benchmark.Timer(stmt="1", label="same", sub_label="x")

        def bench_b():
            return benchmark.Timer(stmt="2", label="same", sub_label="x")
        """,
    )
    line = _one_error_line(repo.regress("list"))
    assert "bench_dupe.py:3 bench_a" in line and "bench_dupe.py:6 bench_b" in line


def test_decorator_grid_and_recipe_style_main_import(repo):
    repo.write(
        "benchmarks/bench_deco.py",
        """
        import torch
        import torch.utils.benchmark as benchmark
        import regress

        @regress.benchmark(params={"n": [4, 8], "k": [1, 2]}, threads=[1, 2], label="grid", description="k={k}")
        def grid(n, k):
            x = torch.ones(n)
            return lambda: x * k

        def helper(x):
            return x + 1

        def bench_recipe_style():
            return benchmark.Timer(stmt="helper(1)", setup="from __main__ import helper", label="recipe")
        """,
    )
    proc = repo.regress("list", check=True)
    ids = [line.split("\t")[0] for line in proc.stdout.strip().splitlines()]
    grid = [i for i in ids if i.startswith("grid")]
    assert len(grid) == 8
    assert "grid / n=4 / k=2 [2 threads]" in grid
    proc = repo.regress("run", "WORKTREE", "--bench", "recipe", check=True)
    assert "1 measured" in proc.stdout


def test_user_mistakes_are_one_line_exit_2(repo, tmp_path):
    assert "unknown revision 'nope'" in _one_error_line(repo.regress("run", "nope"))
    assert "no results for HEAD" in _one_error_line(repo.regress("show", "HEAD"))
    assert "--frobnicate" in _one_error_line(repo.regress("run", "--frobnicate"))
    assert "--min-run-time" in _one_error_line(repo.regress("run", "--min-run-time", "-1"))
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    proc = subprocess.run(regress_cmd("list"), cwd=elsewhere, env=cli_env(), capture_output=True, text=True)
    assert "not inside a git repository" in _one_error_line(proc)
    repo.git("rm", "-q", "-r", "benchmarks")
    assert "no benchmark folder" in _one_error_line(repo.regress("list"))


def test_malicious_pickle_is_refused_without_running_it(repo, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (__import__("os").system, (f"touch {marker}",))

    sha = repo.git("rev-parse", "HEAD")
    target = repo.path / ".regress" / "testbox" / "default" / f"{sha}.pkl"
    target.parent.mkdir(parents=True)
    target.write_bytes(pickle.dumps({"format": "regress-results", "version": 1, "result": Payload()}))
    line = _one_error_line(repo.regress("show", "HEAD"))
    assert "refusing to load posix.system" in line and "not a regress result file" in line
    assert not marker.exists()


def test_corrupt_and_foreign_result_files(repo):
    sha = repo.git("rev-parse", "HEAD")
    target = repo.path / ".regress" / "testbox" / "default" / f"{sha}.pkl"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"\x80\x05garbage")
    assert "is corrupt" in _one_error_line(repo.regress("show"))
    target.write_bytes(pickle.dumps({"some": "dict"}))
    assert "not a regress result file" in _one_error_line(repo.regress("show"))
    target.write_bytes(pickle.dumps({"format": "regress-results", "version": 99, "result": None}))
    assert "newer regress" in _one_error_line(repo.regress("show"))
