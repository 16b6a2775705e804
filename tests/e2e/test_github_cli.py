"""`regress check --comment-file`, `regress comment` and `regress notify` as commands, on real
git repositories, against a local server that speaks GitHub's REST API (127.0.0.1).

The pull request: the first check creates the sticky comment, the next push's
check updates it, two runs racing leave one, a fork's read-only token is one
line (exit 2) and the trusted workflow_run path posts the same file. The
default branch: a regression the newest results confirm opens one issue for
its commit; a rerun posts nothing; the next push, which confirms a second
benchmark slowed by that commit, comments on the issue; a closed issue is
neither reopened nor commented on.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import slowed_history
from conftest import cli_env, regress_cmd
from github_server import FakeGitHub

from regress.ci import pr_comment
from regress.ci.regression_issues import issue_marker
from regress.core.ops import Op, OpTable
from regress.core.records import BenchmarkId
from regress.storage.store import save_profile

SLOWER = """
def work(n):
    total = 0
    for i in range(n * 30):
        total += i
    return total
"""
LABEL = "performance-regression"


@pytest.fixture
def github():
    with FakeGitHub() as gh:
        yield gh


def one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def event(tmp_path, number: int, head: str):
    path = tmp_path / f"event-{head[:7]}.json"
    path.write_text(json.dumps({"number": number, "pull_request": {"number": number, "head": {"sha": head}}}))
    return path


def ours(github, n=7) -> list[dict]:
    return [c for c in github.state.thread(n) if pr_comment.marker("regress") in c["body"]]


def test_the_pull_requests_comment_is_created_updated_and_never_doubled(repo, github, tmp_path):
    settings = repo.path.joinpath("pyproject.toml").read_text()
    repo.commit(
        "settings", {"pyproject.toml": settings + 'threshold = 0.5\nsite_url = "https://octo.github.io/proj/"\n'}
    )
    repo.git("checkout", "-q", "-b", "change")
    first = repo.commit("a docs change", {"README.md": "# mypkg\n"})
    github.state.add_pull(7, first)
    env = {**github.env(), "GITHUB_EVENT_PATH": str(event(tmp_path, 7, first))}
    checked = repo.regress("check", "main", "--comment-file", "out/comment.json", "--no-explain", env=env)
    # A docs change; a machine shared with other jobs may still read a 1 us benchmark as moved, and
    # nothing below depends on it (the 30x slowdown further down does not hide in any noise).
    assert checked.returncode in (0, 1) and "Traceback" not in checked.stderr, checked.stderr
    payload = pr_comment.read(repo.path / "out" / "comment.json")
    assert payload.pr == 7 and payload.head_sha == first
    assert payload.body.startswith("**regress: ") and f"→ head `{first[:10]}` a docs change" in payload.body
    assert "https://octo.github.io/proj/bench/work-n-100-1-thread-" in payload.body

    # A fork's pull request: its token may only read. One line saying which permission, and where.
    line = one_line(repo.regress("comment", "out/comment.json", env=github.env("read-token")))
    assert line.startswith("regress: error: the token may not create a comment on pull request #7 in octo/proj (403")
    assert "needs `pull-requests: write`" in line and "permissions:" in line
    assert ours(github) == []
    # The workflow_run path posts the same file with its own token (and the trusted head sha).
    posted = repo.regress("comment", "out/comment.json", "--head-sha", first, env=github.env(), check=True)
    assert "regress: comment created on pull request #7" in posted.stdout
    (made,) = ours(github)

    # The next push: the check runs again, and the same comment is updated in place.
    second = repo.commit("make work 30x slower", {"src/mypkg/__init__.py": SLOWER})
    github.state.add_pull(7, second)
    env["GITHUB_EVENT_PATH"] = str(event(tmp_path, 7, second))
    checked = repo.regress("check", "main", "--comment-file", "out/comment.json", "--no-explain", env=env)
    assert checked.returncode == 1, checked.stderr  # the check fails; the comment file is written all the same
    posted = repo.regress("comment", "out/comment.json", env=github.env(), check=True)
    assert "comment updated on pull request #7" in posted.stdout
    (updated,) = ours(github)
    assert updated["id"] == made["id"]
    assert updated["body"].startswith("**regress: 2 benchmarks slower (worst +")
    assert "this check fails" in updated["body"] and "🔴 **regression**" in updated["body"]

    # The workflow_run path again: the trusted head sha must be the file's and the pull request's.
    stale = repo.regress("comment", "out/comment.json", "--head-sha", first, env=github.env())
    assert stale.returncode == 2 and "the comment file is for" in stale.stderr
    ok = repo.regress("comment", "out/comment.json", "--head-sha", second, env=github.env(), check=True)
    assert "unchanged" in ok.stdout and len(ours(github)) == 1


def test_two_racing_comment_runs_leave_one_comment(repo, github, tmp_path):
    head = repo.git("rev-parse", "HEAD")
    github.state.add_pull(3, head)
    github.hold(2)  # both runs list the comments before either has created one
    files = []
    for i in (1, 2):
        path = tmp_path / f"c{i}.json"
        pr_comment.write(path, pr_comment.Payload(f"**regress: run {i}**", head, 3))
        files.append(path)
    procs = [
        subprocess.Popen(
            regress_cmd("comment", str(f)),
            cwd=repo.path,
            env=cli_env(github.env()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sum(1 for m, path, s in github.state.log if m == "POST") == 2  # both created one: a real race
    assert len(ours(github, 3)) == 1
    assert sum("1 duplicate removed" in out for out, _ in outs) == 1, outs


def issues(github) -> list[dict]:
    return github.state.regress_issues(LABEL)


def notify(repo, github, sha, **env):
    proc = repo.regress(
        "notify", "--commit", sha, "--site-url", "https://octo.github.io/proj", env={**github.env(), **env}
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def slowed(repo):
    shas = slowed_history.make(repo)
    slowed_history.save(repo.path / ".regress", shas, ["c1", "c2", "c3", "c4", "c5", "c6"])
    return shas


def test_a_regression_on_main_opens_one_issue_then_comments(repo, github, slowed):
    shas = slowed
    # `regress explain` kept the operators of `ops / add` at c3 and c4: the issue shows them.
    bid = BenchmarkId("ops", "add", "", 1)
    for name, us in (("c3", 10.0), ("c4", 15.0)):
        table = OpTable(100, (Op("aten::add", 100, us * 100), Op("aten::empty", 100, 100.0)))
        save_profile(repo.path / ".regress", "testbox", "default", shas[name], bid, table, None)
    assert "no regression newly found with" in notify(repo, github, shas["c5"])  # not confirmed yet
    out = notify(repo, github, shas["c6"], GITHUB_SERVER_URL="https://github.com", GITHUB_RUN_ID="99")
    assert f"opened issue #1 for {shas['c4'][:10]} (1 benchmark)" in out
    (issue,) = issues(github)
    assert issue["title"] == f"Performance regression in {shas['c4'][:10]}: c4 (1 benchmark slower, worst +50.0%)"
    body = issue["body"]
    assert body.startswith(f"**regress: {shas['c4']} made 1 benchmark slower (worst +50.0%)**")
    # The levels either side of the step, as `regressions` reads them (a level a few rounds can move in the last digit).
    assert re.search(
        r"\| ops / add \| 1 \| (0\.99\d ms|1\.00\d ms|99\d\.?\d* us|1000 us) \| 1\.(49|50)\d ms \| \+50\.\d% \| \[chart\]\(https://octo\.github\.io/proj/bench/ops-add",
        body,
    ), body
    assert f"regress bisect {shas['c3'][:10]} {shas['c4'][:10]} --bench" in body  # x was never measured
    assert "https://github.com/octo/proj/actions/runs/99" in body
    ops = body[body.index("#### Operators behind the slowdown") :]
    assert "**ops / add [1 thread]**" in ops and "| `aten::add` |  | 1 | 1 | 10 us | 15 us | +5 us | 100% |" in ops
    assert issue_marker("testbox", "default", shas["c4"]) in body.splitlines()
    assert github.state.labels[LABEL]["name"] == LABEL

    # A rerun of the same push posts nothing.
    assert "already reports these benchmarks" in notify(repo, github, shas["c6"])
    # The next push confirms `ops / mul` at the same commit: a comment, not a second issue.
    slowed_history.save(repo.path / ".regress", shas, ["c7"])
    assert f"commented on issue #1 for {shas['c4'][:10]} (1 more benchmark)" in notify(repo, github, shas["c7"])
    assert len(issues(github)) == 1
    (comment,) = github.state.thread(1)
    assert comment["body"].startswith(f"**regress: 1 more benchmark slower since {shas['c4'][:10]}")
    assert "| ops / mul | 1 | 2.000 ms | 3.000 ms | +50.0% |" in comment["body"]
    assert "already reports" in notify(repo, github, shas["c7"]) and len(github.state.thread(1)) == 1


def test_a_closed_issue_is_not_reopened_nor_commented_on(repo, github, slowed):
    shas = slowed
    notify(repo, github, shas["c6"])
    github.state.issues[1]["state"] = "closed"
    slowed_history.save(repo.path / ".regress", shas, ["c7"])
    out = notify(repo, github, shas["c7"])
    assert f"issue #1 for {shas['c4'][:10]} is closed; left closed, nothing posted" in out
    assert len(issues(github)) == 1 and github.state.issues[1]["state"] == "closed"
    assert github.state.thread(1) == []
    assert not [e for e in github.state.log if e[0] in ("PATCH", "DELETE")]


def test_notify_mistakes_are_one_line(repo, github, slowed):
    shas = slowed
    line = one_line(
        repo.regress("notify", "--commit", shas["c6"], env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": "o/r"})
    )
    assert "no GitHub token: set GITHUB_TOKEN" in line
    line = one_line(repo.regress("notify", "--commit", shas["c6"], env=github.env("read-token")))
    assert "may not create the label 'performance-regression'" in line and "needs `issues: write`" in line
    line = one_line(repo.regress("notify", "--commit", shas["x"], env=github.env()))
    assert "has no results in this history" in line
    bad = one_line(repo.regress("notify", "--commit", shas["c6"], "--site-url", "nope", env=github.env()))
    assert "site_url 'nope' is not an http(s) address" in bad
