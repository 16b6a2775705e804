"""`regress run` over history: ranges in commit order, throwaway worktrees, WORKTREE, progress.

Real git repositories, the real CLI in a subprocess, real torch timing.
"""

from __future__ import annotations

import io
import json
import subprocess

import git
import pytest
from conftest import cli_env

from regress.core.errors import RegressError
from regress.core.records import CommitInfo
from regress.measure.progress import ConsoleProgress, format_seconds, time_left
from regress.storage import gitrepo
from regress.storage.store import Store

# Twenty times the work of PKG's `work`: any honest timer sees it.
SLOW_PKG = """
def work(n):
    total = 0
    for i in range(n * 20):
        total += i
    return total
"""


def commit_at(repo, message: str, date: str, files: dict[str, str] | None = None) -> str:
    """A commit with a chosen committer date (dates need not follow history)."""
    for rel, text in (files or {}).items():
        repo.write(rel, text)
    subprocess.run(["git", "add", "-A"], cwd=repo.path, env=cli_env(), check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message],
        cwd=repo.path,
        env=cli_env({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}),
        check=True,
    )
    return repo.git("rev-parse", "HEAD")


def one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert len(lines) == 1 and lines[0].startswith("regress: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def worktrees(repo) -> list[str]:
    return [line for line in repo.git("worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def test_resolve_orders_parents_first_whatever_the_dates(repo):
    # Skewed clocks: every child is dated before its parent.
    c1 = commit_at(repo, "c1", "2024-01-04T00:00:00")
    c2 = commit_at(repo, "c2", "2024-01-03T00:00:00")
    repo.git("tag", "v1.0")
    c3 = commit_at(repo, "c3", "2024-01-02T00:00:00")
    c4 = commit_at(repo, "c4", "2024-01-01T00:00:00")
    r = git.Repo(repo.path)
    assert gitrepo.resolve(r, ["HEAD", "HEAD~3", "HEAD~1"]) == [c1, c3, c4]
    assert gitrepo.resolve(r, ["HEAD~3..HEAD"]) == [c2, c3, c4]
    assert gitrepo.resolve(r, ["v1.0..main"]) == [c3, c4]
    assert gitrepo.resolve(r, ["HEAD^!"]) == [c4]
    assert gitrepo.resolve(r, ["HEAD~1..HEAD", "HEAD~3..HEAD~1", c2]) == [c2, c3, c4]  # overlaps measured once
    # A side branch merged back: its commits come before the merge, after their fork point.
    repo.git("checkout", "-q", "-b", "side", c2)
    s1 = commit_at(repo, "s1", "2023-01-01T00:00:00")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = repo.git("rev-parse", "HEAD")
    order = gitrepo.resolve(r, [merge, s1, c1, c4])
    assert order[0] == c1 and order[-1] == merge and set(order[1:3]) == {s1, c4}
    with pytest.raises(RegressError, match="contains no commits"):
        gitrepo.resolve(r, ["HEAD..HEAD"])


def test_range_runs_oldest_first_against_each_commits_code_leaving_the_checkout_alone(repo, tmp_path):
    c1 = commit_at(repo, "config: timeout", "2024-03-03T00:00:00", {"pyproject.toml": repo_pyproject(timeout=45)})
    c2 = commit_at(repo, "make work slow", "2024-03-01T00:00:00", {"src/mypkg/__init__.py": SLOW_PKG})
    c3 = commit_at(repo, "unrelated", "2024-03-02T00:00:00", {"NOTES.md": "notes\n"})
    # The user is mid-edit: a staged change, and an unstaged one that breaks the package.
    repo.write("NOTES.md", "staged edit\n")
    repo.git("add", "NOTES.md")
    repo.write("src/mypkg/__init__.py", "raise RuntimeError('the uncommitted edit was imported')\n")
    status, index = repo.git("status", "--porcelain"), repo.git("diff", "--cached")
    scratch = tmp_path / "tmp"
    scratch.mkdir()

    proc = repo.regress("run", "HEAD~3..HEAD", "--bench", "n=1000", env={"TMPDIR": str(scratch)}, check=True)

    # Oldest first although the commit dates say otherwise, round by round (the
    # second round newest first); one progress line a round of a commit.
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[:4] for line in progress[:6]] == [
        ["[round", "1,", "1/3]", c1[:10]],
        ["[round", "1,", "2/3]", c2[:10]],
        ["[round", "1,", "3/3]", c3[:10]],
        ["[round", "2,", "1/3]", c3[:10]],
        ["[round", "2,", "2/3]", c2[:10]],
        ["[round", "2,", "3/3]", c1[:10]],
    ]
    assert len(progress) == 9 and "config: timeout" in progress[0] and "left)" in progress[1]
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [c1[:10], c2[:10], c3[:10]]
    store = Store(repo.path / ".regress")
    results = {sha: store.load("testbox", "default", sha) for sha in (c1, c2, c3)}
    medians = {}
    for sha, result in results.items():
        assert result.complete and not result.failures
        ((bid, r),) = result.by_id().items()  # --bench kept only n=1000
        assert bid.sub_label == "n=1000" and r.ok
        assert result.settings.timeout == 45 and result.settings.bench_filter == "n=1000"
        medians[sha] = r.median
    # The commit that made work() slow is seen as slow, and so is its child.
    assert medians[c2] > 5 * medians[c1] and medians[c3] > 5 * medians[c1]
    # The user's working tree, index and branch are as they were; no worktree or temp folder is left.
    assert repo.git("status", "--porcelain") == status and repo.git("diff", "--cached") == index
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD") == "main" and repo.git("rev-parse", "HEAD") == c3
    assert repo.git("stash", "list") == ""
    assert len(worktrees(repo)) == 1
    assert [p.name for p in scratch.iterdir()] == []

    # Again with --skip-existing: nothing left to measure, no worker started.
    again = repo.regress("run", "HEAD~3..HEAD", "--skip-existing", "--bench", "n=1000", check=True)
    assert "3 commits already measured" in again.stdout and "[round" not in again.stderr
    assert {sha: store.load("testbox", "default", sha) for sha in (c1, c2, c3)} == results


def repo_pyproject(**extra) -> str:
    lines = [f"{k} = {json.dumps(v)}" for k, v in extra.items()]  # JSON strings and numbers are TOML too
    return "\n".join(
        [
            "[project]",
            'name = "mypkg"',
            'version = "0"',
            "",
            "[tool.regress]",
            "min_run_time = 0.01",
            'machine = "testbox"',
            "min_rounds = 3",
            "max_rounds = 3",
            *lines,
            "",
        ]
    )


def test_worktree_pseudo_commit_and_benchmarks_from(repo):
    head = repo.git("rev-parse", "HEAD")
    repo.write("src/mypkg/__init__.py", SLOW_PKG)  # "did my edit make it slower?"
    repo.write(
        "benchmarks/bench_extra.py",  # a suite not committed yet
        """
        import torch.utils.benchmark as benchmark

        def bench_extra():
            return benchmark.Timer(stmt="1 + 1", label="extra")
        """,
    )
    repo.regress("run", "HEAD", "WORKTREE", "--bench", "n=1000|extra", check=True)
    store = Store(repo.path / ".regress")
    folder = repo.path / ".regress" / "testbox" / "default"
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{head}.pkl", "WORKTREE.pkl"])
    wt, committed = store.load("testbox", "default", "WORKTREE"), store.load("testbox", "default", head)
    assert wt.commit.sha == "WORKTREE" and wt.commit.parents == (head,) and "uncommitted" in wt.commit.subject
    # Today's suite ran against HEAD's code by default; the edit is only in WORKTREE.
    assert {r.id.label for r in committed.results} == {"work", "extra"}
    assert {r.id.label for r in wt.results} == {"work", "extra"}
    work = lambda res: next(r for r in res.results if r.id.label == "work")
    assert work(wt).median > 5 * work(committed).median

    # Measured again: replaced by this run's rounds, not accumulated.
    repo.regress("run", "WORKTREE", "--bench", "n=1000", check=True)
    wt2 = store.load("testbox", "default", "WORKTREE")
    assert wt2.started_at > wt.started_at and len(work(wt2).samples) == 3 and len(wt2.reference) == 3
    assert {r.id.label for r in wt2.results} == {"work"}
    assert "uncommitted changes on" in repo.regress("show", "WORKTREE", check=True).stdout

    # --benchmarks-from commit: HEAD's own suite, which lacks bench_extra.
    repo.regress("run", "HEAD", "--benchmarks-from", "commit", "--env", "own", "--bench", "n=1000|extra", check=True)
    own = store.load("testbox", "own", head)
    assert {r.id.label for r in own.results} == {"work"} and own.settings.benchmarks_from == "commit"
    assert work(own).median < work(wt).median / 5


def test_bad_ranges_revisions_and_options_are_one_line_exit_2(repo):
    repo.commit("second", {"NOTES.md": "x\n"})
    cases = [
        (("nope..HEAD",), "bad revision range 'nope..HEAD'"),
        (("HEAD~50..HEAD",), "bad revision range 'HEAD~50..HEAD'"),
        (("HEAD..HEAD",), "revision range 'HEAD..HEAD' contains no commits"),
        (("HEAD", "no-such-branch"), "unknown revision 'no-such-branch'"),
        (("HEAD", "--bench", "(unclosed"), "argument --bench: '(unclosed' is not a valid regular expression"),
        (("HEAD", "--timeout", "0"), "--timeout"),
        (("HEAD", "--benchmarks-from", "elsewhere"), "--benchmarks-from"),
    ]
    for args, message in cases:
        assert message in one_error_line(repo.regress("run", *args)), args
    assert not (repo.path / ".regress" / "testbox").exists()
    assert len(worktrees(repo)) == 1


def test_progress_time_left_and_live_display():
    assert time_left(10.0, 1, 4, 0, None) is None  # nothing finished yet
    assert time_left(10.0, 2, 4, 0, 5) == pytest.approx(30.0)  # one of four commits took 10s
    assert time_left(10.0, 1, 2, 1, 4) == pytest.approx(70.0)  # a quarter of the first commit took 10s
    assert format_seconds(42) == "42s" and format_seconds(125) == "2m05s" and format_seconds(7260) == "2h01m"

    class Tty(io.StringIO):
        def isatty(self):
            return True

    now = [0.0]
    stream = Tty()
    p = ConsoleProgress(stream=stream, clock=lambda: now[0])
    assert p._bar is not None  # a terminal gets the live display
    info = CommitInfo("a" * 40, (), "A", "a@x", 0, 0, "first subject")
    p.round_started(1, 1, 2, info, None)
    p.benchmarks_found(3)
    p.benchmark_started("work / n=100 [1 thread]")
    now[0] = 6.0
    p.benchmark_finished()
    p._bar.refresh()
    p.close()
    shown = stream.getvalue()
    assert "round 1, commit 1/2 aaaaaaaaaa first subject" in shown and "work / n=100" in shown
    assert "about 30s left" in shown  # 1/3 of 1 of 2 commits in 6s

    plain = io.StringIO()
    now[0] = 0.0
    p = ConsoleProgress(stream=plain, clock=lambda: now[0])
    assert p._bar is None  # a log gets plain lines
    p.round_started(1, 1, 2, info, None)
    now[0] = 20.0
    p.commit_finished(None)
    p.round_started(1, 2, 2, info, None)  # no estimate from the engine: the pace so far
    p.round_started(2, 1, 1, info, 75.0)  # the engine's estimate wins
    assert plain.getvalue().splitlines() == [
        "[round 1, 1/2] aaaaaaaaaa first subject",
        "[round 1, 2/2] aaaaaaaaaa first subject (20s left)",
        "[round 2, 1/1] aaaaaaaaaa first subject (1m15s left)",
    ]
