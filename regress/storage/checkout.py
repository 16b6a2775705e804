"""The checkout's root and one revision's sha without importing gitpython, for a plain clone.

Anything else (a linked worktree, a submodule, a bare or core.worktree
repository, GIT_DIR and friends, a revision git rejects) gets None from
`root` and `commit`, and `checkout_root` and `resolve_one` ask `gitrepo`,
which gives the same answer or the one-line error.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from regress.core.records import WORKTREE

# git's variables that move the repository or its working tree: gitpython's rules decide then.
_MOVED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
# A range or a revision gitrepo refuses (see gitrepo._RANGE and resolve): gitrepo says why.
_NOT_ONE = re.compile(r"\.\.|\^[!@]$|\^-\d*$")
_SHA = re.compile(rb"(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{40})")
_CORE = re.compile(r"^\s*(bare\s*=\s*true|worktree\s*=)", re.IGNORECASE | re.MULTILINE)


def _plain_git_dir(d: str) -> bool:
    """A `.git` folder of an ordinary non-bare clone (HEAD, objects/ and refs/; no core.bare, no core.worktree)."""
    head = os.path.join(d, "HEAD")
    if (
        os.path.islink(head)
        or not os.path.isdir(os.path.join(d, "objects"))
        or not os.path.isdir(os.path.join(d, "refs"))
    ):
        return False
    if os.path.lexists(os.path.join(d, "commondir")) or os.path.lexists(os.path.join(d, "config.worktree")):
        return False
    try:
        with open(head, "rb") as fp:
            ref = fp.read(256)
        with open(os.path.join(d, "config"), encoding="utf-8", errors="replace") as fp:
            config = fp.read()
    except OSError:
        return False
    valid = (ref.startswith(b"ref:") and ref[4:].lstrip().startswith(b"refs/")) or bool(_SHA.match(ref))
    return valid and not _CORE.search(config)


def root(start: Path) -> Path | None:
    """The working tree holding `start` as `gitrepo.root_of(gitrepo.open_repo(start))` finds it, for a plain
    clone; None for anything else (then ask gitrepo)."""
    if any(os.environ.get(k) is not None for k in _MOVED):
        return None
    here = os.path.normpath(os.path.abspath(os.path.expanduser(os.path.expandvars(os.fspath(start)))))
    if not os.path.isdir(here):
        return None
    while True:
        dotgit = os.path.join(here, ".git")
        if os.path.lexists(dotgit):
            return Path(here) if os.path.isdir(dotgit) and _plain_git_dir(dotgit) else None
        if os.path.exists(os.path.join(here, "HEAD")) or os.path.isdir(os.path.join(here, "objects")):
            return None  # a git directory itself
        here, tail = os.path.split(here)
        if not tail:
            return None


def commit(checkout: Path, rev: str) -> str | None:
    """The full sha of the one commit `rev` names (WORKTREE for WORKTREE), as `gitrepo.resolve_one` gives it;
    None when git rejects it or it is not plainly one revision (then ask gitrepo for the answer or the error)."""
    if rev == WORKTREE:
        return WORKTREE
    if not rev or rev.startswith("-") or _NOT_ONE.search(rev):
        return None
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha) else None


def checkout_root(start: Path) -> Path:
    """`gitrepo.root_of(gitrepo.open_repo(start))`, gitpython imported only when the plain answer is not found."""
    found = root(start)
    if found is not None:
        return found
    from regress.storage import gitrepo

    return gitrepo.root_of(gitrepo.open_repo(start))


def resolve_one(checkout: Path, rev: str, *, what: str) -> str:
    """`gitrepo.resolve_one(gitrepo.open_repo(checkout), rev, what=what)`, gitpython imported only when git
    rejects `rev` or it is not plainly one revision (gitrepo then resolves it or says why not)."""
    sha = commit(checkout, rev)
    if sha is not None:
        return sha
    from regress.storage import gitrepo

    return gitrepo.resolve_one(gitrepo.open_repo(checkout), rev, what=what)
