"""`regress merge` and the results branch (`regress results pull/push`) on fabricated results.

Real git: a bare "origin" repository, clones of it, concurrent pushes. The
results are fabricated records (no torch), so these run in seconds; the
workflow test measures for real.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import factories
import pytest
from conftest import cli_env, regress_cmd

from regress.core.merge import combine
from regress.core.records import (
    BenchmarkResult,
    CommitResult,
    Failure,
    TaskSpec,
)
from regress.storage.codec import encode
from regress.storage.store import Store

SHA_A, SHA_B, SHA_C = "a" * 40, "b" * 40, "c" * 40
SPEC = TaskSpec(stmt="f()", label="L", sub_label="s", description="d")
OTHER = TaskSpec(stmt="g()", label="L", sub_label="t", description="d")


def bench(spec=SPEC, *times, failure=None, at=1.0) -> BenchmarkResult:
    return factories.timed(spec, *times, at=at, failure=failure, origin="benchmarks/x.py:1 bench_f")


def result(sha=SHA_A, *benches, machine="box", torch="2.13.0", at=1.0) -> CommitResult:
    return factories.commit(
        sha,
        *(benches or (bench(SPEC, 1e-3),)),
        machine=machine,
        torch=torch,
        python="3.11.9",
        when=1,
        subject="subject",
        started_at=at,
        finished_at=at + 1,
    )


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=cli_env(), check=True, capture_output=True, text=True
    ).stdout.strip()


def regress(cwd: Path, *args: str, check: bool | None = None):
    proc = subprocess.run(regress_cmd(*args), cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin with one commit on main."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / ".gitignore").write_text(".regress/\n")
    git(seed, "add", ".gitignore")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", "origin", "HEAD:main")
    return bare


def clone(origin: Path, name: str) -> Path:
    path = origin.parent / name
    git(origin.parent, "clone", "-q", str(origin), str(path))
    return path


def on_branch(origin: Path, sha: str, machine: str = "box") -> CommitResult:
    from regress.storage.codec import decode

    data = subprocess.run(
        ["git", "show", f"regress-results:{machine}/default/{sha}.pkl"], cwd=origin, capture_output=True, check=True
    ).stdout
    return decode(data, "branch")


def test_push_creates_the_branch_and_pull_restores_it(origin):
    a = clone(origin, "a")
    head = git(a, "rev-parse", "HEAD")
    Store(a / ".regress").save(result(SHA_A))
    (a / "untracked.txt").write_text("mine\n")
    proc = regress(a, "results", "push", check=True)
    assert "pushed 1 result file to origin/regress-results" in proc.stdout
    assert git(origin, "ls-tree", "-r", "--name-only", "regress-results").split() == [
        "README.md",
        f"box/default/{SHA_A}.pkl",
    ]
    # The branch shares no history with the code, and the checkout is untouched.
    assert git(origin, "rev-list", "--count", "regress-results") == "1"
    assert git(a, "rev-parse", "HEAD") == head and git(a, "branch", "--list").strip() == "* main"
    assert git(a, "status", "--porcelain") == "?? untracked.txt"
    assert on_branch(origin, SHA_A) == result(SHA_A)

    again = regress(a, "results", "push", check=True)
    assert "nothing to push" in again.stdout
    assert git(origin, "rev-list", "--count", "regress-results") == "1"

    b = clone(origin, "b")
    proc = regress(b, "results", "pull", check=True)
    assert "1 result files, 1 changed" in proc.stdout
    assert Store(b / ".regress").load("box", "default", SHA_A) == result(SHA_A)


def test_push_adds_rounds_and_files_and_never_overwrites(origin):
    a, b = clone(origin, "a"), clone(origin, "b")
    Store(a / ".regress").save(result(SHA_A, bench(SPEC, 1e-3)))
    regress(a, "results", "push", check=True)
    regress(b, "results", "pull", check=True)
    # Both add a round to the same commit; b also measures another commit.
    Store(a / ".regress").save(result(SHA_A, bench(SPEC, 2e-3, at=5.0), at=5.0))
    Store(b / ".regress").save(result(SHA_A, bench(SPEC, 3e-3, at=7.0), at=7.0))
    Store(b / ".regress").save(result(SHA_B))
    regress(a, "results", "push", check=True)
    proc = regress(b, "results", "push", check=True)
    assert "pushed 2 result files" in proc.stdout
    merged = on_branch(origin, SHA_A).by_id()[SPEC.id]
    # The first round was on both sides: it counts once.
    assert sorted(s.raw_times[0] for s in merged.samples) == [1e-3, 2e-3, 3e-3]
    assert on_branch(origin, SHA_B) == result(SHA_B)
    # b's folder now holds a's round as well, for the report built next.
    local = Store(b / ".regress").load("box", "default", SHA_A).by_id()[SPEC.id]
    assert len(local.samples) == 3


def test_two_concurrent_pushes_both_land(origin, tmp_path):
    a, b = clone(origin, "a"), clone(origin, "b")
    Store(a / ".regress").save(result(SHA_C))
    regress(a, "results", "push", check=True)
    # The origin holds every push until two have arrived, so both start from one tip.
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        f'touch "{tmp_path}/arrived.$$"\n'
        "i=0\n"
        f'while [ "$(ls "{tmp_path}" | grep -c "^arrived")" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n'
        "cat >/dev/null\n"
    )
    hook.chmod(0o755)
    Store(a / ".regress").save(result(SHA_A))
    Store(b / ".regress").save(result(SHA_B, machine="other"))
    procs = [
        subprocess.Popen(
            regress_cmd("results", "push"),
            cwd=c,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c in (a, b)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("trying again (1/8)" in err for _, err in outs) == 1, outs
    files = git(origin, "ls-tree", "-r", "--name-only", "regress-results").split()
    assert files == ["README.md", f"box/default/{SHA_A}.pkl", f"box/default/{SHA_C}.pkl", f"other/default/{SHA_B}.pkl"]
    assert git(origin, "rev-list", "--count", "regress-results") == "3"


def test_push_refuses_a_conflict_keeps_both_copies_and_pushes_the_rest(origin):
    a, b = clone(origin, "a"), clone(origin, "b")
    Store(a / ".regress").save(result(SHA_A, bench(SPEC, 1e-3)))
    regress(a, "results", "push", check=True)
    changed = replace(SPEC, stmt="f(2)")  # same identity, different code
    Store(b / ".regress").save(result(SHA_A, bench(changed, 2e-3)))
    Store(b / ".regress").save(result(SHA_B))
    proc = regress(b, "results", "push")
    line = error_line(proc)
    assert "1 conflicting duplicate refused" in line and "--env" in line
    assert f"box/default/{SHA_A[:10]}: L / s / d [1 thread]: different benchmark code" in proc.stderr
    assert on_branch(origin, SHA_A).by_id()[SPEC.id].spec == SPEC
    assert on_branch(origin, SHA_B) == result(SHA_B)
    assert Store(b / ".regress").load("box", "default", SHA_A).by_id()[SPEC.id].spec == changed


def test_results_branch_mistakes_are_one_line(origin, tmp_path):
    a = clone(origin, "a")
    proc = regress(a, "results", "pull", check=True)
    assert "no branch origin/regress-results yet" in proc.stdout
    assert "no results in" in regress(a, "results", "push", check=True).stdout
    assert git(origin, "branch", "--list", "regress-results") == ""
    assert "no git remote 'upstream'" in error_line(regress(a, "results", "push", "--remote", "upstream"))
    assert "not a valid branch name" in error_line(regress(a, "results", "pull", "--branch", "a..b"))
    assert "--retries" in error_line(regress(a, "results", "push", "--retries", "0"))
    git(a, "remote", "set-url", "origin", str(tmp_path / "missing.git"))
    assert "cannot fetch branch 'regress-results' from remote 'origin'" in error_line(regress(a, "results", "pull"))


def test_merge_keeps_everything_and_refuses_conflicts(origin, tmp_path):
    a = clone(origin, "a")
    s1, s2 = Store(tmp_path / "s1"), Store(tmp_path / "s2")
    s1.save(result(SHA_A, bench(SPEC, 1e-3)))
    s1.save(result(SHA_B))
    s2.save(result(SHA_A, bench(OTHER, 2e-3)))  # another shard's benchmark of the same commit
    s2.save(result(SHA_C, bench(replace(SPEC, stmt="f(2)"), 3e-3)))
    s2.save(result(SHA_B, machine="box", torch="2.14.0"))  # a different build under one env name
    Store(a / ".regress").save(result(SHA_C, bench(SPEC, 4e-3)))
    before = {p: p.read_bytes() for p in (tmp_path / "s2").rglob("*.pkl")}
    proc = regress(a, "merge", str(tmp_path / "s1"), str(tmp_path / "s2"))
    line = error_line(proc)
    assert "2 conflicting duplicates refused" in line and "everything else was merged" in line
    assert "torch 2.13.0 here, 2.14.0 there" in proc.stderr and "different benchmark code" in proc.stderr
    target = Store(a / ".regress")
    assert set(target.load("box", "default", SHA_A).by_id()) == {SPEC.id, OTHER.id}
    assert target.load("box", "default", SHA_B) == result(SHA_B)
    assert target.load("box", "default", SHA_C).by_id()[SPEC.id].spec == SPEC
    assert {p: p.read_bytes() for p in (tmp_path / "s2").rglob("*.pkl")} == before  # sources untouched

    # Merging the same folder again changes nothing: the very same samples are no duplicate.
    again = regress(a, "merge", str(tmp_path / "s1"), check=True)
    assert "0 changed" in again.stdout
    assert len(target.load("box", "default", SHA_A).by_id()[SPEC.id].samples) == 1


def test_merge_mistakes_are_one_line(origin, tmp_path):
    a = clone(origin, "a")
    assert "is not a folder" in error_line(regress(a, "merge", str(tmp_path / "nope")))
    (tmp_path / "empty").mkdir()
    assert "holds no regress results" in error_line(regress(a, "merge", str(tmp_path / "empty")))
    Store(tmp_path / "shards" / "shard-1").save(result(SHA_A))
    assert f"regress merge {tmp_path / 'shards'}/*" in error_line(regress(a, "merge", str(tmp_path / "shards")))
    assert "results folder itself" in error_line(regress(a, "merge", ".regress"))
    moved = tmp_path / "moved" / "box" / "default"
    moved.mkdir(parents=True)
    (moved / f"{SHA_B}.pkl").write_bytes(encode(result(SHA_A)))
    line = error_line(regress(a, "merge", str(tmp_path / "shards" / "shard-1"), str(tmp_path / "moved")))
    assert f"{SHA_B}.pkl holds results of box/default/{SHA_A[:10]}" in line
    assert not (a / ".regress" / "box").exists()  # nothing half merged


def test_combine_rules():
    early = result(SHA_A, bench(SPEC, 1e-3), at=1.0)
    failed_later = result(SHA_A, bench(SPEC, failure=Failure("error", "boom"), at=9.0), at=9.0)
    merged, conflicts = combine(early, failed_later)
    assert not conflicts
    # The latest attempt's state, every round kept.
    assert merged.by_id()[SPEC.id].failure == Failure("error", "boom")
    assert len(merged.by_id()[SPEC.id].samples) == 1
    merged, _ = combine(failed_later, early)
    assert merged.by_id()[SPEC.id].failure == Failure("error", "boom")
    skipped = result(SHA_A, bench(SPEC, failure=Failure("skipped", "no GPU"), at=9.0), at=9.0)
    assert combine(early, skipped)[0].by_id()[SPEC.id].failure is None
    # Either side complete: complete; the earliest start and the latest finish.
    partial = replace(result(SHA_A, bench(OTHER, 2e-3), at=3.0), complete=False)
    merged, _ = combine(partial, early)
    assert merged.complete and merged.started_at == 1.0 and merged.finished_at == 4.0
    # The same benchmarks in either order: the same set of rounds.
    x, y = result(SHA_A, bench(SPEC, 1e-3, 2e-3)), result(SHA_A, bench(SPEC, 3e-3, at=5.0))
    assert set(combine(x, y)[0].results[0].samples) == set(combine(y, x)[0].results[0].samples)
    with pytest.raises(ValueError):
        combine(result(SHA_A), result(SHA_B))
