"""The gitpython-free checkout root and revision lookup give gitpython's answers, or none (and gitrepo decides).

`regress compare` finds the checkout and its two commits through `checkout`
so its start imports no gitpython; a wrong root or sha there would judge
the wrong results, so every answer is checked against `gitrepo`'s on real
repositories of each kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Repo

from regress.core.errors import RegressError
from regress.core.records import WORKTREE
from regress.storage import checkout, gitrepo


def _repo(path: Path) -> Repo:
    r = Repo(path)
    r.path.mkdir(parents=True)
    r.git("init", "-q", "-b", "main")
    r.commit("one", {"pkg/__init__.py": "X = 1\n"})
    r.commit("two", {"pkg/__init__.py": "X = 2\n"})
    r.git("tag", "v1", "HEAD~1")
    r.git("tag", "-a", "-m", "annotated", "v2", "HEAD")
    return r


def _gitpython_root(start: Path) -> Path:
    return gitrepo.root_of(gitrepo.open_repo(start))


def test_a_plain_clone_is_found_from_anywhere_in_it(tmp_path):
    r = _repo(tmp_path / "proj")
    for start in (r.path, r.path / "pkg", Path(str(r.path / "pkg") + "/../pkg/.")):
        assert checkout.root(start) == _gitpython_root(start) == r.path
        assert checkout.checkout_root(start) == r.path


def test_other_kinds_of_repository_are_left_to_gitpython(tmp_path, monkeypatch):
    r = _repo(tmp_path / "proj")
    linked = tmp_path / "linked"
    r.git("worktree", "add", "-q", str(linked), "HEAD")
    assert checkout.root(linked) is None  # a linked worktree's .git is a file
    assert checkout.checkout_root(linked) == _gitpython_root(linked) == linked
    bare = tmp_path / "bare.git"
    r.git("clone", "-q", "--bare", str(r.path), str(bare))
    assert checkout.root(bare) is None
    with pytest.raises(RegressError):
        checkout.checkout_root(bare)
    outside = tmp_path / "outside"
    outside.mkdir()
    assert checkout.root(outside) is None and checkout.root(tmp_path / "absent") is None
    with pytest.raises(RegressError, match="is not inside a git repository"):
        checkout.checkout_root(outside)
    monkeypatch.setenv("GIT_DIR", str(r.path / ".git"))
    assert checkout.root(r.path) is None
    monkeypatch.delenv("GIT_DIR")
    r.git("config", "core.worktree", str(r.path))
    assert checkout.root(r.path) is None


REVS = ["HEAD", "HEAD~1", "main", "v1", "v2", "HEAD^", WORKTREE]


def test_revisions_resolve_to_gitrepos_shas(tmp_path):
    r = _repo(tmp_path / "proj")
    repo = gitrepo.open_repo(r.path)
    short = r.git("rev-parse", "--short", "HEAD")
    for rev in [*REVS, short, r.git("rev-parse", "HEAD~1")]:
        want = gitrepo.resolve_one(repo, rev, what="compare")
        assert checkout.commit(r.path, rev) == want, rev
        assert checkout.resolve_one(r.path, rev, what="compare") == want, rev
    assert checkout.commit(r.path, "HEAD") != checkout.commit(r.path, "HEAD~1")


@pytest.mark.parametrize("rev", ["nosuch", "HEAD~5", "HEAD~1..HEAD", "HEAD^!", "-x", "", "HEAD^{tree}", "v2^{tree}"])
def test_what_git_rejects_gets_gitrepos_answer_or_error(tmp_path, rev):
    r = _repo(tmp_path / "proj")
    repo = gitrepo.open_repo(r.path)
    try:
        want: str | Exception = gitrepo.resolve_one(repo, rev, what="compare")
    except RegressError as exc:
        want = exc
    if isinstance(want, str):
        assert checkout.resolve_one(r.path, rev, what="compare") == want
        return
    assert checkout.commit(r.path, rev) is None
    with pytest.raises(RegressError) as got:
        checkout.resolve_one(r.path, rev, what="compare")
    assert str(got.value) == str(want)
