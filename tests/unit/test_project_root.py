"""`session.project_root` walks up for `.git` without gitpython; it must name the checkout gitpython names."""

from pathlib import Path

import pytest

from regress.core.errors import RegressError
from regress.storage import gitrepo
from regress.storage.session import project_root


def _gitpython_root(path: Path) -> Path:
    return gitrepo.root_of(gitrepo.open_repo(path))


def test_the_walk_names_the_checkout_gitpython_names(repo, tmp_path):
    (repo.path / "benchmarks" / "deep").mkdir()
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    nested = repo.path / "vendor" / "inner"
    nested.mkdir(parents=True)
    repo.git("-C", str(nested), "init", "-q")
    places = [repo.path, repo.path / "benchmarks", repo.path / "benchmarks" / "deep", linked, linked / "src", nested]
    for place in places:
        assert project_root(place) == _gitpython_root(place), place
    assert project_root(nested) == nested and project_root(linked / "src") == linked


def test_outside_any_checkout_the_error_is_gitpythons(tmp_path, monkeypatch):
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    alone = tmp_path / "alone"
    alone.mkdir()
    if any((p / ".git").exists() for p in (alone, *alone.parents)):
        pytest.fail("the temp folder is inside a checkout; the test needs one outside")
    with pytest.raises(RegressError, match="not inside a git repository"):
        project_root(alone)
    with pytest.raises(RegressError, match="not inside a git repository"):
        project_root(tmp_path / "missing")
