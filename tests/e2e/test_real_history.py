"""What a real project's history puts in front of `regress run` (issue 21).

A commit git cannot check out (a blob missing from the clone), a shallow CI
clone, a range limited to paths (`-- PATH`), the `complete` flag of a run
that finished against one that was killed, and the user's `git status` after
the first run and report. Real repositories, the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import signal
import subprocess

from conftest import PKG, PYPROJECT, SUITE, Repo, cli_env
from test_history import commit_at, one_error_line, repo_pyproject
from test_history_failures import gated_range, load, wait_dead

from regress.core.kinds import FailureKind
from regress.storage import gitrepo

INTERRUPTED = "the run was interrupted"


def drop_blob(repo: Repo, rev: str, rel: str) -> None:
    """Delete one blob from the object store, as a partial clone or a broken mirror leaves it."""
    repo.git("gc", "-q", "--no-prune")  # loose objects only, so one can be removed
    blob = repo.git("rev-parse", f"{rev}:{rel}")
    repo.git("repack", "-a", "-d", "-q")
    # Rewrite the pack without that blob: every object but it, into a fresh pack.
    objects = [line.split()[0] for line in repo.git("cat-file", "--batch-all-objects", "--batch-check").splitlines()]
    keep = "\n".join(o for o in objects if o != blob) + "\n"
    pack_dir = repo.path / ".git" / "objects" / "pack"
    old = list(pack_dir.iterdir())
    subprocess.run(
        ["git", "pack-objects", "-q", str(pack_dir / "pack")],
        cwd=repo.path,
        input=keep,
        text=True,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    new = set(pack_dir.iterdir()) - set(old)
    assert new
    for p in old:
        p.unlink()
    assert subprocess.run(["git", "cat-file", "-e", blob], cwd=repo.path).returncode != 0


def test_a_commit_that_cannot_be_checked_out_is_recorded_and_the_range_goes_on(repo):
    c1 = repo.commit("c1", {"src/mypkg/extra.py": "X = 1\n"})
    c2 = repo.commit("c2 adds a picture", {"assets/demo.gif": "GIF89a one\n"})
    c3 = repo.commit("c3 replaces it", {"assets/demo.gif": "GIF89a two\n"})
    drop_blob(repo, c2, "assets/demo.gif")  # c2's picture is gone from the clone
    proc = repo.regress("run", "HEAD~3..HEAD")
    assert proc.returncode == 0, proc.stderr  # the newest commit is fine
    assert "Traceback" not in proc.stderr
    for sha in (c1, c3):
        assert load(repo, sha).complete and all(r.ok for r in load(repo, sha).results)
    broken = load(repo, c2)
    assert broken.results == () and broken.complete
    (failure,) = broken.failures
    assert failure.kind == FailureKind.CHECKOUT
    assert f"git could not check out {c2[:10]}" in failure.message and "assets/demo.gif" in failure.message
    assert f"  checkout: git could not check out {c2[:10]}: unable to read" in proc.stdout
    shown = repo.regress("show", c2, check=True).stdout
    assert "checkout: git could not check out" in shown and "assets/demo.gif" in shown
    assert INTERRUPTED not in shown
    # The site marks it failed on the benchmarks' charts, with git's words.
    repo.regress("report", check=True)
    pages = [p.read_text() for p in (repo.path / "site" / "bench").glob("*.html")]
    assert pages and all("git could not check out" in p for p in pages)


def test_a_shallow_clone_says_fetch_depth_0_in_one_line_before_measuring(repo, tmp_path):
    for k in range(4):
        repo.commit(f"c{k}", {"src/mypkg/extra.py": f"X = {k}\n"})
    repo.git("tag", "v0", "HEAD~3")
    clone = Repo(tmp_path / "shallow")
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.path}", str(clone.path)], env=cli_env(), check=True
    )
    for args in (("run", "HEAD~3..HEAD"), ("run", "HEAD~3"), ("bisect", "HEAD~3", "HEAD", "--bench", "work")):
        line = one_error_line(clone.regress(*args))
        assert "shallow clone" in line and "fetch-depth: 0" in line, line
    # A tag fetched on its own: `v0..HEAD` resolves, but runs into the clone's cut.
    clone.git("fetch", "-q", "--depth", "1", "origin", "tag", "v0")
    line = one_error_line(clone.regress("run", "v0..HEAD"))
    assert "shallow clone's oldest commit" in line and "fetch-depth: 0" in line, line
    assert not list(clone.path.glob(".regress/*/*/*.pkl"))  # nothing measured


def test_path_limited_range_measures_exactly_what_git_log_lists(repo):
    repo.commit("docs only", {"README.md": "hello\n"})
    a = repo.commit("code", {"src/mypkg/extra.py": "X = 1\n"})
    repo.commit("more docs", {"README.md": "hello again\n"})
    b = repo.commit("code and docs", {"src/mypkg/extra.py": "X = 2\n", "README.md": "bye\n"})
    repo.commit("docs again", {"docs/x.md": "x\n"})
    want = repo.git("log", "--format=%H", "HEAD~5..HEAD", "--", "src/mypkg").split()
    assert sorted(want) == sorted([a, b])
    proc = repo.regress("run", "HEAD~5..HEAD", "--bench", "n=100 ", "--", "src/mypkg", check=True)
    measured = sorted(p.stem for p in (repo.path / ".regress" / "testbox" / "default").glob("*.pkl"))
    assert measured == sorted(want), proc.stderr
    # No commit of the range touches the path: one line, naming git log.
    line = one_error_line(repo.regress("run", "HEAD~1..HEAD", "--", "src/mypkg"))
    assert "touches src/mypkg" in line and "git log HEAD~1..HEAD -- src/mypkg" in line
    assert "takes no paths" in one_error_line(repo.regress("show", "HEAD", "--", "src"))


STEP_PKG = """
import time

def work(n):
    time.sleep(SLEEP)
    return n
"""


def sleep_repo(repo: Repo) -> None:
    repo.write("pyproject.toml", repo_pyproject().replace("min_run_time = 0.01", "min_run_time = 0.05"))
    repo.write(
        "benchmarks/bench_work.py",
        "import torch.utils.benchmark as benchmark\n"
        "from mypkg import work\n\n"
        "def bench_sleep():\n"
        '    return benchmark.Timer(stmt="work(1)", globals={"work": work}, label="sleep")\n',
    )


def test_bisect_with_paths_probes_only_the_commits_that_touch_them(repo):
    sleep_repo(repo)
    good = repo.commit("fast", {"src/mypkg/__init__.py": "SLEEP = 0.001\n" + STEP_PKG})
    docs = [repo.commit(f"docs {k}", {"README.md": f"v{k}\n"}) for k in range(3)]
    code = repo.commit("tweak", {"src/mypkg/helper.py": "Y = 1\n"})
    slow = repo.commit("slow", {"src/mypkg/__init__.py": "SLEEP = 0.004\n" + STEP_PKG})
    docs += [repo.commit(f"docs later {k}", {"README.md": f"w{k}\n"}) for k in range(2)]
    bad = repo.commit("code again", {"src/mypkg/helper.py": "Y = 2\n"})
    proc = repo.regress("bisect", good, bad, "--bench", "sleep", "--format", "json", "--", "src/mypkg")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    probed = {p["sha"] for p in got["probes"]}
    assert probed <= {good, code, slow, bad} and not probed & set(docs), got["probes"]
    assert got["first_bad"]["sha"] == slow
    measured = {p.stem for p in (repo.path / ".regress" / "testbox" / "default").glob("*.pkl")}
    assert measured == probed  # nothing measured for the README-only commits


def test_regressions_bisect_hint_counts_and_carries_the_paths(repo):
    sleep_repo(repo)
    dates = iter(f"2024-01-{d:02d}T00:00:00" for d in range(1, 20))  # the measured commits are not parent and child
    fast, slow = "SLEEP = 0.001\n" + STEP_PKG, "SLEEP = 0.004\n" + STEP_PKG
    measured = [
        commit_at(repo, f"fast {k}", next(dates), {"src/mypkg/__init__.py": fast + f"# {k}\n"}) for k in range(4)
    ]
    commit_at(repo, "docs", next(dates), {"README.md": "a\n"})
    commit_at(repo, "docs", next(dates), {"README.md": "b\n"})
    commit_at(repo, "tweak", next(dates), {"src/mypkg/helper.py": "Y = 1\n"})
    measured += [
        commit_at(repo, f"slow {k}", next(dates), {"src/mypkg/__init__.py": slow + f"# {k}\n"}) for k in range(4)
    ]
    repo.regress("run", *measured, check=True)
    text = repo.regress("regressions", "--threshold", "20%", "--", "src/mypkg", check=True).stdout
    (hint,) = [line for line in text.splitlines() if "regress bisect" in line]
    assert "1 commit not measured" in hint and hint.endswith(" -- src/mypkg"), text
    assert f"regress bisect {measured[3][:10]} {measured[4][:10]} --bench" in hint
    text = repo.regress("regressions", "--threshold", "20%", check=True).stdout
    (plain,) = [line for line in text.splitlines() if "regress bisect" in line]
    assert "3 commits not measured" in plain and " -- " not in plain


def test_a_completed_run_is_complete_and_a_killed_one_says_interrupted(repo, tmp_path):
    (c1, c2, c3), proc, worker, gate, _scratch, env = gated_range(repo, tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    wait_dead(worker)
    assert INTERRUPTED in repo.regress("show", c1, check=True).stdout  # killed after its first round
    (gate / "open").write_text("")
    # An adaptive plan that stops on its budget (rounds left to take, but the seconds spent):
    # the round that crossed it decided `complete` before its time was counted.
    pyproject = (
        repo_pyproject(budget=0.05)
        .replace("min_rounds = 3", "min_rounds = 2")
        .replace("max_rounds = 3", "max_rounds = 30")
    )
    repo.write("pyproject.toml", pyproject)
    repo.regress("run", "HEAD~3..HEAD", "--bench", "n=100 |gate", "--skip-existing", env=env, check=True)
    for sha in (c1, c2, c3):
        assert load(repo, sha).complete, sha
        assert INTERRUPTED not in repo.regress("show", sha, check=True).stdout


def test_first_run_and_report_add_nothing_to_git_status(tmp_path):
    r = Repo(tmp_path / "fresh")
    r.path.mkdir()
    r.git("init", "-q", "-b", "main")
    r.commit("initial", {"pyproject.toml": PYPROJECT, "src/mypkg/__init__.py": PKG, "benchmarks/bench_work.py": SUITE})
    before = r.git("status", "--porcelain")
    assert before == ""
    r.regress("run", "HEAD", "--bench", "n=100 ", check=True)
    r.regress("report", check=True)
    assert (r.path / ".regress" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (r.path / "site" / ".gitignore").is_file() and (r.path / "site" / "index.html").is_file()
    assert r.git("status", "--porcelain", "--untracked-files=all") == ""
    # A folder the user made is theirs: --out into it adds no .gitignore.
    (r.path / "public").mkdir()
    r.regress("report", "--out", "public", check=True)
    assert not (r.path / "public" / ".gitignore").exists()


def test_bisect_searches_the_ancestry_path_when_good_is_on_a_merged_branch(repo):
    # GOOD on a side branch merged into main: main's first parents never reach it (torchdiffeq's
    # history has this shape); bisect searched nothing and failed with a KeyError.
    base = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "side")
    good = repo.commit("side work", {"src/mypkg/side.py": "S = 1\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main work", {"src/mypkg/main.py": "M = 1\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    bad = repo.commit("after", {"src/mypkg/after.py": "A = 1\n"})
    path = gitrepo.first_parent_path(gitrepo.open_repo(repo.path), good, bad)
    assert path[0] == good and path[-1] == bad and base not in path
    assert path == [
        good,
        *repo.git("rev-list", "--ancestry-path", "--topo-order", "--reverse", f"{good}..{bad}").split(),
    ]
