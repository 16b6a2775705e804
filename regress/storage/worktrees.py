"""The throwaway checkouts regress measures in: each commit its own detached worktree in a temporary
folder, removed afterwards, and those of a killed regress removed by the next one."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import git

from regress.core.errors import RegressError
from regress.storage.gitrepo import git_reason, root_of

_WT_PREFIX = "regress-wt-"


class CheckoutFailed(RegressError):
    """git cannot check a commit out (a blob missing from the clone): that commit's failure, not the run's."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_stale(repo: git.Repo) -> None:
    """Remove worktrees left by a regress process that was killed."""
    try:
        listing = repo.git.worktree("list", "--porcelain")
    except git.GitCommandError:
        return
    for line in listing.splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line.removeprefix("worktree "))
        m = re.match(rf"{_WT_PREFIX}(\d+)-", path.parent.name)
        if m and not _pid_alive(int(m.group(1))):
            _remove_worktree(repo, path)
    with contextlib.suppress(git.GitCommandError):
        repo.git.worktree("prune")


def _remove_worktree(repo: git.Repo, path: Path) -> None:
    with contextlib.suppress(git.GitCommandError):
        repo.git.worktree("remove", "--force", str(path))
    if path.parent.name.startswith(_WT_PREFIX):
        shutil.rmtree(path.parent, ignore_errors=True)


@contextlib.contextmanager
def worktree(repo: git.Repo, sha: str) -> Iterator[Path]:
    """A detached checkout of `sha`, removed afterwards (also on Ctrl-C)."""
    parent = Path(tempfile.mkdtemp(prefix=f"{_WT_PREFIX}{os.getpid()}-{sha[:8]}-"))
    path = parent / root_of(repo).name
    try:
        try:
            repo.git.worktree("add", "--detach", "--force", str(path), sha)
        except git.GitCommandError as exc:
            raise CheckoutFailed(f"git could not check out {sha[:10]}: {_checkout_reason(exc)}") from None
        yield path
    finally:
        _remove_worktree(repo, path)


def _checkout_reason(exc: git.GitCommandError) -> str:
    """git's own words, one line: its `error:` lines (a missing blob names the file), else its last line."""
    lines = [line.strip().removeprefix("stderr: ").strip(" '") for line in (exc.stderr or "").splitlines()]
    errors = [line.removeprefix("error: ") for line in lines if line.startswith("error: ")]
    return "; ".join(errors[:3]) if errors else git_reason(exc)
