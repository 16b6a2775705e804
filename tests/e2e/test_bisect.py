"""`regress bisect` on generated repositories: real git, real torch timing, the real CLI."""

from __future__ import annotations

import json
import math

PYPROJECT = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
min_run_time = 0.05
machine = "testbox"
min_rounds = 3
max_rounds = 3
# A commit holding a file named BROKEN does not build.
build_command = "test ! -e BROKEN"
"""

PKG = """
def work(n):
    total = 0
    for i in range(n * {factor} // 2):
        total += i
    return total

def other(n):
    return sum(range(n))
"""

SUITE = """
import torch.utils.benchmark as benchmark
from mypkg import work, other

def bench_work():
    yield benchmark.Timer(stmt="work(n)", globals={"work": work, "n": 20000}, label="work", sub_label="loop")
    yield benchmark.Timer(stmt="other(n)", globals={"other": other, "n": 20000}, label="other", sub_label="sum")
"""


BUSY_ROUNDS = 6
# A commit whose first rounds are caught by a busy minute: each import of its package (one a
# round, each round a fresh worker) is counted in a file, and the first `slow` read 4x slower.
BUSY = """
import os
with open({count!r}, "a") as f:
    f.write("x")
factor = 8 if os.path.getsize({count!r}) <= {slow} else 2

def work(n):
    total = 0
    for i in range(n * factor // 2):
        total += i
    return total

def other(n):
    return sum(range(n))
"""


def history(repo, n: int, slow_at: int, broken_at: int | None = None, busy_at: int | None = None) -> list[str]:
    """n commits; `work` is 2x slower from commit `slow_at` on (1.5x in scripts/eval_bisect.py, the signal target); `broken_at` does not build.

    Bisect measures every probe beside the commits that bracket it, in its own run, so a busy
    minute slows both alike; how small a move it finds is the evaluation's to say."""
    shas = [
        repo.commit(
            "project",
            {
                "pyproject.toml": PYPROJECT,
                "src/mypkg/__init__.py": PKG.format(factor=2),
                "benchmarks/bench_work.py": SUITE,
            },
        )
    ]
    for k in range(1, n):
        files = {"src/mypkg/note.py": f"NOTE = {k}\n"}
        if k == slow_at:
            files["src/mypkg/__init__.py"] = PKG.format(factor=4)
        if k == broken_at:
            files["BROKEN"] = "this commit does not build\n"
        if k == busy_at:
            count = str(repo.path.parent / "busy-imports")
            files["src/mypkg/__init__.py"] = BUSY.format(count=count, slow=BUSY_ROUNDS)
        elif busy_at is not None and k == busy_at + 1 and k != slow_at:
            files["src/mypkg/__init__.py"] = PKG.format(factor=2)
        shas.append(repo.commit(f"change {k}", files))
        if k == broken_at:
            repo.git("rm", "-q", "BROKEN")
    return shas


def test_bisect_names_the_planted_slowdown_measuring_about_log2_commits(tmp_path, repo):
    shas = history(repo, 9, slow_at=5)
    proc = repo.regress("bisect", shas[0], shas[-1], "--bench", "work", "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert doc["first_bad"]["sha"] == shas[5], (proc.stdout, proc.stderr)
    assert doc["last_good"]["sha"] == shas[4]
    assert doc["measured"] <= math.log2(len(shas)) + 2
    # Against its parent: a regression, or noisy when the machine is busy (other tests running); never small.
    assert doc["verdict"][0]["verdict"] in ("regression", "noisy") and doc["verdict"][0]["ratio"] > 1.4
    assert doc["benchmarks"] == ["work / loop [1 thread]"]
    # What it measured is stored, under its own run; a second bisect (of the commits around it)
    # measures in a run of its own (stored rounds of other runs never decide) and names the same commit.
    again = repo.regress("bisect", shas[4], shas[6], "--bench", "work", check=True)
    assert f"first bad commit: {shas[5]} change 5" in again.stdout and "author: Test Author" in again.stdout
    from regress.storage.store import Store

    stored = Store(repo.path / ".regress").load("testbox", "default", shas[5])
    assert [r.kind for r in stored.runs] == ["bisect", "bisect"]
    assert {s.run for r in stored.results for s in r.samples} == {r.id for r in stored.runs}


def test_bisect_without_a_move_or_with_the_commits_reversed_is_one_line(repo):
    shas = history(repo, 3, slow_at=99)
    # Identical code at both ends: a 100% threshold keeps a loaded machine's A/A wobble
    # (docs/statistics.md: a few percent between separate runs) from reading as a move.
    repo.write("pyproject.toml", PYPROJECT + 'threshold = "100%"\n')
    flat = repo.regress("bisect", shas[0], shas[-1], "--bench", "work")
    assert flat.returncode == 2 and "nothing moved" in flat.stderr and "Traceback" not in flat.stderr, flat.stderr
    backwards = repo.regress("bisect", shas[-1], shas[0], "--bench", "work")
    assert backwards.returncode == 2 and "not an ancestor" in backwards.stderr


def test_regressions_says_a_step_spans_unmeasured_commits_and_prints_the_bisect_command(repo):
    from dataclasses import replace

    from factories import bench, commit

    from regress.storage import gitrepo
    from regress.storage.store import Store

    shas = [repo.commit(f"c{k}", {"src/mypkg/note.py": f"N = {k}\n"}) for k in range(12)]
    git = gitrepo.open_repo(repo.path)
    store = Store(repo.path / ".regress")
    measured = [0, 1, 2, 3, 7, 8, 9, 10]  # 4, 5 and 6 never measured; the step is at 7
    for k in measured:
        level = 1e-3 if k < 7 else 2e-3
        r = commit("x", bench([level * (1 + 0.001 * j) for j in range(3)], label="work", sub="loop"))
        info = replace(gitrepo.commit_info(git, shas[k]), committed_at=1_700_000_000 + k)  # one second apart
        store.save(replace(r, commit=info, machine="testbox"))
    out = repo.regress("regressions", check=True).stdout
    assert f"between {shas[3][:10]} and {shas[7][:10]}, 3 commits not measured" in out, out
    assert f"regress bisect {shas[3][:10]} {shas[7][:10]} --bench '^work\\ /\\ loop\\ \\[1\\ thread\\]$'" in out
