"""The GitHub client against a local server that speaks GitHub's REST API: the real
`requests` session over real sockets to 127.0.0.1; only the waits are fake.

Pagination by Link headers, a 429 and both kinds of secondary limit then
success, a refusal for a missing permission as one line naming it, and the
sticky comment's create / update / race / stale paths (`ci.pr_comment.post`).
"""

from __future__ import annotations

import socket
import threading

import pytest
from github_server import FakeGitHub

from regress.ci import github, pr_comment
from regress.core.errors import RegressError

HEAD = "a" * 40


@pytest.fixture
def server():
    with FakeGitHub() as gh:
        gh.state.add_pull(7, HEAD)
        yield gh


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def client(server, token="write-token", clock: Clock | None = None) -> github.GitHub:
    clock = clock or Clock()
    target = github.target(env=server.env(token))
    return github.GitHub(target, sleep=clock.sleep, clock=lambda: clock.now)


def comments_path(server, n=7) -> str:
    return f"/repos/{server.state.repo}/issues/{n}/comments"


def test_pagination_follows_the_link_headers(server):
    for i in range(5):
        server.state.comments[i + 1] = {"id": i + 1, "issue": 7, "body": f"c{i}", "user": {}}
    with client(server) as gh:
        got = gh.paged(comments_path(server), what="list", need="pull-requests: read")
    assert [c["body"] for c in got] == ["c0", "c1", "c2", "c3", "c4"]
    pages = [entry for entry in server.state.log if entry[0] == "GET"]
    assert len(pages) == 3  # pages of two, as the server's Link headers lead


def test_a_429_is_waited_out_then_the_call_succeeds(server):
    server.queue("GET", comments_path(server), 429, {"Retry-After": "7"}, {"message": "Too many requests"})
    clock = Clock()
    with client(server, clock=clock) as gh:
        assert gh.paged(comments_path(server), what="list", need="pull-requests: read") == []
    assert clock.slept == [7.0]
    assert [s for _, _, s in server.state.log] == [429, 200]


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "3"}, 3.0),  # a secondary limit with Retry-After
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(1_700_000_000 + 40)}, 41.0),  # the primary limit
        ({}, github.SECONDARY_WAIT),  # a secondary limit without headers: at least a minute
    ],
)
def test_secondary_and_primary_limits_wait_as_github_asks(server, headers, wait):
    message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    server.queue("POST", comments_path(server), 403, headers, {"message": message})
    clock = Clock()
    with client(server, clock=clock) as gh:
        made = gh.post(comments_path(server), {"body": "hi"}, what="comment", need="pull-requests: write")
    assert made["body"] == "hi" and clock.slept == [wait]


def test_a_limit_that_lifts_too_late_is_one_line_not_a_long_sleep(server):
    server.queue("GET", comments_path(server), 429, {"Retry-After": str(github.LONGEST_WAIT + 1)})
    clock = Clock()
    with client(server, clock=clock) as gh, pytest.raises(RegressError, match=r"rate limit.*run the step again later"):
        gh.paged(comments_path(server), what="list the comments", need="pull-requests: read")
    assert clock.slept == []


def test_a_read_only_token_is_one_line_naming_the_permission(server):
    with client(server, token="read-token") as gh, pytest.raises(RegressError) as exc:
        gh.post(comments_path(server), {"body": "x"}, what="create a comment on #7", need="pull-requests: write")
    line = str(exc.value)
    assert "\n" not in line
    assert "may not create a comment on #7 in octo/proj (403: Resource not accessible by integration)" in line
    assert "needs `pull-requests: write`" in line and "`permissions:`" in line
    assert "issues=write; pull_requests=write" in line  # what GitHub's header says it accepts


def test_bad_token_and_missing_settings_are_one_line(server):
    with client(server, token="nope") as gh, pytest.raises(RegressError, match="did not accept the token"):
        gh.get(f"/repos/{server.state.repo}/pulls/7", what="read", need="pull-requests: read")
    with pytest.raises(RegressError, match="no GitHub token: set GITHUB_TOKEN"):
        github.target(env={"GITHUB_REPOSITORY": "o/r"})
    with pytest.raises(RegressError, match="pass --repo OWNER/NAME"):
        github.target(env={"GITHUB_TOKEN": "t"})
    with pytest.raises(RegressError, match="not an http"):
        github.target("o/r", "ftp://x", env={"GITHUB_TOKEN": "t"})


def test_an_unreachable_api_is_one_line():
    clock = Clock()
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        target = github.Target(f"http://127.0.0.1:{closed.getsockname()[1]}", "o/r", "t")
        with (
            github.GitHub(target, sleep=clock.sleep) as gh,
            pytest.raises(RegressError, match=r"cannot reach GitHub at .* check --api-url"),
        ):
            gh.get("/repos/o/r/pulls/1", what="read", need="pull-requests: read")
    assert len(clock.slept) == github.ATTEMPTS - 1


# -- the sticky comment ------------------------------------------------------


def ours(server) -> list[dict]:
    mark = pr_comment.marker("regress")
    return [c for c in server.state.thread(7) if mark in c["body"]]


def test_first_comment_is_created_then_updated_in_place(server):
    server.state.comments[1] = {"id": 1, "issue": 7, "body": "someone else's", "user": {}}
    with client(server) as gh:
        first = pr_comment.post(gh, pr_comment.Payload("**regress: no significant change**", HEAD, 7))
        again = pr_comment.post(gh, pr_comment.Payload("**regress: no significant change**", HEAD, 7))
        second = pr_comment.post(gh, pr_comment.Payload("**regress: 1 benchmark slower**", HEAD, 7))
    assert (first.action, again.action, second.action) == ("created", "unchanged", "updated")
    (mine,) = ours(server)
    assert mine["body"].startswith("**regress: 1 benchmark slower**")
    assert mine["body"].endswith(pr_comment.marker("regress"))
    assert server.state.comments[1]["body"] == "someone else's"


def test_two_racing_runs_leave_one_comment(server):
    server.hold(2)  # both list the comments before either creates one
    results: dict[int, pr_comment.Posted] = {}

    def one(i: int) -> None:
        with client(server) as gh:
            results[i] = pr_comment.post(gh, pr_comment.Payload(f"**regress: run {i}**", HEAD, 7))

    threads = [threading.Thread(target=one, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 2
    creates = [e for e in server.state.log if e[0] == "POST"]
    assert len(creates) == 2  # they really raced: both created one
    assert len(ours(server)) == 1
    assert sum(r.removed for r in results.values()) == 1


def test_the_comment_is_cut_to_githubs_limit_with_a_clear_note(server):
    rows = "\n".join(f"| bench {i} | {'x' * 80} |" for i in range(2000))
    with client(server) as gh:
        pr_comment.post(gh, pr_comment.Payload(f"**regress: big**\n\n| a | b |\n|---|---|\n{rows}\n", HEAD, 7))
    (mine,) = ours(server)
    assert len(mine["body"]) <= 65536 and "Cut here: GitHub takes at most 65,536 characters" in mine["body"]
    assert mine["body"].endswith(pr_comment.marker("regress"))


def test_a_stale_or_foreign_file_is_not_posted(server):
    with client(server) as gh:
        moved = pr_comment.post(gh, pr_comment.Payload("x", "b" * 40, 7), head_sha="b" * 40)
        assert moved.action == "stale" and "is at aaaaaaaaaa, not bbbbbbbbbb" in moved.why
        with pytest.raises(RegressError, match="comment file is for"):
            pr_comment.post(gh, pr_comment.Payload("x", HEAD, 7), head_sha="c" * 40)
        ok = pr_comment.post(gh, pr_comment.Payload("x", HEAD, 7), head_sha=HEAD)
    assert ok.action == "created" and len(ours(server)) == 1
