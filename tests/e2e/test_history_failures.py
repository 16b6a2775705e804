"""What `regress run` survives: crashing, hanging and raising benchmarks, broken imports and
builds at old commits, SIGKILL and Ctrl-C halfway through a range, a second run at once.

Each failure is injected for real (os.abort, a NULL read through ctypes, a sleep past
the timeout, signals to the real CLI process); nothing is mocked.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from conftest import cli_env, regress_cmd
from test_history import one_error_line, repo_pyproject, worktrees

from regress.core.records import CommitInfo, CommitResult, Fingerprint, Settings
from regress.measure.one_commit import Collector, Saver
from regress.storage.store import Store

FAULTS = """
import ctypes
import os
import time

import torch.utils.benchmark as benchmark


def bench_faults():
    yield benchmark.Timer(stmt="x = 1", label="faults", sub_label="a fine before")
    yield benchmark.Timer(stmt="os.abort()", globals={"os": os}, label="faults", sub_label="b abort")
    yield benchmark.Timer(stmt="ctypes.string_at(0)", globals={"ctypes": ctypes}, label="faults", sub_label="c segfault")
    yield benchmark.Timer(stmt="time.sleep(3600)", globals={"time": time}, label="faults", sub_label="d hang")
    yield benchmark.Timer(stmt="x = 2", label="faults", sub_label="e fine after")
"""


def load(repo, sha: str, env: str = "default") -> CommitResult | None:
    return Store(repo.path / ".regress").load("testbox", env, sha)


def test_abort_segfault_and_hang_are_recorded_and_the_rest_is_measured(repo):
    repo.write("benchmarks/bench_faults.py", FAULTS)
    repo.write("pyproject.toml", repo_pyproject(timeout=300))
    sha = repo.git("rev-parse", "HEAD")
    started = time.monotonic()
    # --timeout beats the config's 300s; it limits each benchmark, not the worker's `import torch`.
    proc = repo.regress("run", "HEAD", "--timeout", "2")
    assert time.monotonic() - started < 120
    assert proc.returncode == 1, proc.stderr  # the measured code failed
    assert "Traceback" not in proc.stderr
    result = load(repo, sha)
    assert result.complete and result.settings.timeout == 2 and not result.failures
    by = {r.id.sub_label: r for r in result.results}
    assert by["a fine before"].ok and by["e fine after"].ok
    assert by["n=100"].ok and by["n=1000"].ok  # the other suite, after three dead workers
    assert by["b abort"].failure.kind == "crash" and "SIGABRT" in by["b abort"].failure.message
    assert by["c segfault"].failure.kind == "crash" and "SIGSEGV" in by["c segfault"].failure.message
    assert by["d hang"].failure.kind == "timeout" and "after 2s" in by["d hang"].failure.message
    assert by["d hang"].failure.where == "benchmarks/bench_faults.py:8 bench_faults"
    # Reported at the end, one problem a line.
    assert "4 measured (3 rounds each), 3 problems" in proc.stdout
    assert (
        "faults / b abort [1 thread]: benchmarks/bench_faults.py:8 bench_faults: crash: worker killed by SIGABRT"
        in proc.stdout
    )


BUILD = """
import pathlib, sys
if pathlib.Path("BROKEN").exists():
    print("compiler exploded on purpose")
    sys.exit(1)
pathlib.Path("src/mypkg/_built.py").write_text("BUILT = True\\n")
"""

WITH_FAST = """
def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

def fast_work(n):
    return n * (n - 1) // 2
"""


def test_import_failure_and_build_failure_at_old_commits_are_recorded_and_the_range_goes_on(repo):
    py = f'"{sys.executable}" build.py'
    c0 = repo.commit("build script", {"build.py": BUILD, "pyproject.toml": repo_pyproject(build_command=py)})
    c1 = repo.commit("add fast_work", {"src/mypkg/__init__.py": WITH_FAST})
    c2 = repo.commit("break the build", {"BROKEN": "yes\n"})
    repo.git("rm", "-q", "BROKEN")
    c3 = repo.commit("fix the build")
    # Today's suites: one needs fast_work (missing before c1), one needs the build's output.
    repo.write(
        "benchmarks/bench_fast.py",
        """
        from mypkg import fast_work
        import torch.utils.benchmark as benchmark

        def bench_fast():
            return benchmark.Timer(stmt="fast_work(1000)", globals={"fast_work": fast_work}, label="fast")
        """,
    )
    repo.write(
        "benchmarks/bench_built.py",
        """
        from mypkg._built import BUILT
        import torch.utils.benchmark as benchmark

        def bench_built():
            return benchmark.Timer(stmt="BUILT", globals={"BUILT": BUILT}, label="built")
        """,
    )
    proc = repo.regress("run", "HEAD~4..HEAD", "--bench", "n=100 |fast|built")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the newest commit is fine
    labels = lambda r: sorted(x.id.label for x in r.results if x.ok)

    old = load(repo, c0)
    assert labels(old) == ["built", "work"]  # the build ran in c0's worktree before measuring
    (failure,) = old.failures
    assert failure.kind == "suite" and failure.where == "benchmarks/bench_fast.py:1"
    assert "ImportError" in failure.message and "fast_work" in failure.message

    assert labels(load(repo, c1)) == ["built", "fast", "work"] and not load(repo, c1).failures
    broken = load(repo, c2)
    assert broken.complete and broken.results == ()
    (failure,) = broken.failures
    assert failure.kind == "build" and "status 1" in failure.message and "compiler exploded" in failure.message
    assert labels(load(repo, c3)) == ["built", "fast", "work"]
    # Reported at the end, with the commit each belongs to.
    out = proc.stdout.splitlines()
    assert out[0].startswith(c0[:10]) and "ImportError" in out[1]
    assert any(line.startswith(c2[:10]) and "0 measured, 1 problem" in line for line in out)
    assert "compiler exploded" in proc.stdout
    assert not (repo.path / "src" / "mypkg" / "_built.py").exists()  # built in worktrees, not here


# The gate blocks at the commit with VERSION 2 until the test opens it: the test
# then kills or interrupts regress there. Workers shuffle the benchmarks every
# round; the gate's module (imported before the shuffle) injects a fixed order,
# gate last, so the work benchmark has always finished when the gate blocks.
GATE = """
import os
import random
import time
from pathlib import Path

import torch.utils.benchmark as benchmark
from mypkg import VERSION

random.Random.shuffle = lambda self, entries: entries.sort(key=lambda e: e.spec.label == "gate")


def wait_at_gate():
    gate = Path(os.environ.get("GATE_DIR", "/nonexistent"))
    if VERSION != 2 or not gate.is_dir() or (gate / "open").exists():
        return
    (gate / "waiting").write_text(str(os.getpid()))
    while not (gate / "open").exists():
        time.sleep(0.05)


def bench_gate():
    return benchmark.Timer(stmt="wait_at_gate()", globals={"wait_at_gate": wait_at_gate}, label="gate")
"""


def gated_range(repo, tmp_path):
    shas = [repo.commit(f"version {v}", {"src/mypkg/__init__.py": f"VERSION = {v}\n" + WITH_FAST}) for v in (1, 2, 3)]
    repo.write("benchmarks/zz_gate.py", GATE)
    gate, scratch = tmp_path / "gate", tmp_path / "tmp"
    gate.mkdir()
    scratch.mkdir()
    env = {"GATE_DIR": str(gate), "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        regress_cmd("run", "HEAD~3..HEAD", "--bench", "n=100 |gate"),
        cwd=repo.path,
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C must reach it as a terminal's would, even when the suite itself was started
        # in the background (where SIGINT is ignored, and Python then keeps ignoring it).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (gate / "waiting").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "regress never reached the second commit's gate"
        time.sleep(0.05)
    time.sleep(0.1)  # the pid is written
    worker = int((gate / "waiting").read_text())
    return shas, proc, worker, gate, scratch, env


def wait_dead(pid: int, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"worker {pid} outlived its regress")


def no_half_files(repo) -> None:
    assert [p.name for p in (repo.path / ".regress").rglob("*") if p.name.endswith(".tmp")] == []


def rounds_of(result) -> dict[str, int]:
    return {r.id.label: len(r.samples) for r in result.results}


def test_sigkill_mid_range_keeps_finished_rounds_refuses_a_second_run_and_rerun_finishes(repo, tmp_path):
    # The range is interleaved: the gate holds the second commit's first round, so
    # the first commit has one round of three saved and the others nothing yet.
    (c1, c2, c3), proc, worker, gate, scratch, env = gated_range(repo, tmp_path)
    first = load(repo, c1)
    assert not first.complete and rounds_of(first) == {"work": 1, "gate": 1} and len(first.reference) == 1
    assert load(repo, c2) is None

    # A second run on the same results folder refuses, naming the holder; it touches nothing.
    second = repo.regress("run", "HEAD")
    assert f"in use by another regress run (pid {proc.pid})" in one_error_line(second)

    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    wait_dead(worker)  # no orphan goes on measuring
    no_half_files(repo)
    assert load(repo, c1) == first and load(repo, c2) is None and load(repo, c3) is None
    assert len(worktrees(repo)) == 4  # the killed run's worktrees (all three commits) are left behind, for now

    (gate / "open").write_text("")
    rerun = repo.regress("run", "HEAD~3..HEAD", "--bench", "n=100 |gate", "--skip-existing", env=env, check=True)
    assert "already measured" not in rerun.stdout  # the first commit was incomplete: topped up, not skipped
    assert [line.split()[3] for line in rerun.stderr.splitlines() if line.startswith("[round 1,")] == [
        c1[:10],
        c2[:10],
        c3[:10],
    ]
    kept = {s for r in first.results for s in r.samples}
    for sha in (c1, c2, c3):
        assert load(repo, sha).complete and rounds_of(load(repo, sha)) == {"work": 3, "gate": 3}
    assert kept <= {s for r in load(repo, c1).results for s in r.samples}  # the round taken before the kill stays
    assert len(worktrees(repo)) == 1  # pruned
    assert list(scratch.iterdir()) == []


def test_ctrl_c_mid_round_saves_what_finished_and_skip_existing_measures_only_the_rest(repo, tmp_path):
    (c1, c2, c3), proc, worker, gate, scratch, env = gated_range(repo, tmp_path)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)  # a loaded 2-core runner: three servers to stop
    assert proc.returncode == 130, err
    (line,) = [line for line in err.splitlines() if line.startswith("regress:")]
    assert "interrupted" in line and "--skip-existing" in line and "Traceback" not in err
    wait_dead(worker)
    no_half_files(repo)
    assert len(worktrees(repo)) == 1 and list(scratch.iterdir()) == []  # cleaned up on the way out
    assert rounds_of(load(repo, c1)) == {"work": 1, "gate": 1} and not load(repo, c1).complete
    assert load(repo, c3) is None
    partial = load(repo, c2)
    assert not partial.complete  # the gate never finished; the work benchmark did
    assert [r.id.label for r in partial.results] == ["work"] and partial.results[0].ok
    assert "incomplete" in repo.regress("show", c2, check=True).stdout

    # A cancelled CI job (SIGTERM) is handled the same way; what was saved stays.
    (gate / "waiting").unlink()
    proc = subprocess.Popen(
        regress_cmd("run", "HEAD~3..HEAD", "--bench", "n=100 |gate", "--skip-existing"),
        cwd=repo.path,
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (gate / "waiting").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)  # a loaded 2-core runner: three servers to stop
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert len(worktrees(repo)) == 1 and list(scratch.iterdir()) == []
    assert partial.results[0].samples[0] in load(repo, c2).by_id()[partial.results[0].id].samples

    (gate / "open").write_text("")
    repo.regress("run", "HEAD~3..HEAD", "--bench", "n=100 |gate", "--skip-existing", env=env, check=True)
    for sha in (c1, c2, c3):
        # Topped up to exactly the plan's 3 rounds: nothing measured twice, nothing lost.
        assert load(repo, sha).complete and rounds_of(load(repo, sha)) == {"work": 3, "gate": 3}, sha
    assert partial.results[0].samples[0] in load(repo, c2).by_id()[partial.results[0].id].samples
    # Without --skip-existing a commit is measured again: its rounds join the first run's.
    repo.regress("run", c2, "--bench", "n=100 ", env=env, check=True)
    assert rounds_of(load(repo, c2))["work"] == 6


def test_checkpoints_write_only_new_results_and_worktree_is_replaced(tmp_path):
    from regress.core.records import BenchmarkResult, Sample, TaskSpec

    store = Store(tmp_path / "results")
    info = CommitInfo("c" * 40, (), "A", "a@x", 0, 0, "subject")
    base = CommitResult(info, "box", "default", Fingerprint("box"), Settings())
    saver = Saver(store, base)
    got = Collector()
    spec = lambda name: TaskSpec(stmt=name, label=name)
    got.results[("a",)] = BenchmarkResult(spec("a"), "o", (Sample(1, (1.0,), 1.0),))
    saver.checkpoint(got, every=3600)
    assert store.load("box", "default", info.sha) is None  # too soon
    saver.checkpoint(got, every=0)
    assert not store.load("box", "default", info.sha).complete
    got.results[("b",)] = BenchmarkResult(spec("b"), "o", (Sample(1, (2.0,), 2.0),))
    saver.save(got, complete=True)
    done = store.load("box", "default", info.sha)
    assert done.complete and [len(r.samples) for r in done.results] == [1, 1]  # a was not written twice

    wt = CommitResult(CommitInfo("WORKTREE", (), "", "", 0, 0, "wt"), "box", "default", Fingerprint("box"), Settings())
    for n in (2, 1):  # a second run with fewer benchmarks replaces the first
        got = Collector()
        for name in "ab"[:n]:
            got.results[(name,)] = BenchmarkResult(spec(name), "o", (Sample(1, (1.0,), 1.0),))
        saver = Saver(store, wt)
        saver.checkpoint(got, every=0)
        saver.save(got, complete=True)
        assert [r.id.label for r in store.load("box", "default", "WORKTREE").results] == ["a", "b"][:n]
