"""Everything regress asks of git: revisions, commit metadata, throwaway worktrees.

The user's working tree, index and branch are never touched: each measured
commit gets its own detached worktree in a temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import git

from regress.core.errors import RegressError
from regress.core.records import WORKTREE, CommitInfo

_RANGE = re.compile(r"\.\.|\^[!@]$|\^-\d*$")
_WT_PREFIX = "regress-wt-"


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise RegressError(
            f"{path} is not inside a git repository; run regress in your project's checkout (or `git init` it first)"
        ) from None


def root_of(repo: git.Repo) -> Path:
    if repo.working_tree_dir is None:
        raise RegressError(f"{repo.git_dir} is a bare repository; run regress in a checkout")
    return Path(repo.working_tree_dir)


def git_reason(exc: git.GitCommandError, default: str = "") -> str:
    """The line of git's stderr that says what went wrong."""
    lines = [line.strip() for line in (exc.stderr or "").strip().splitlines() if line.strip()]
    if lines:
        return lines[-1].removeprefix("stderr: ").strip(" '")
    return default or f"git exited with status {exc.status}"


def _rev_list(repo: git.Repo, spec: str) -> list[str]:
    try:
        out = repo.git.rev_list("--reverse", "--topo-order", spec, "--")
    except git.GitCommandError as exc:
        raise RegressError(
            f"bad revision range '{spec}' ({git_reason(exc, 'git rejected it')}); use a form like HEAD~5..HEAD, v1.0..main or HEAD^!"
        ) from None
    shas = out.split()
    if not shas:
        raise RegressError(
            f"revision range '{spec}' contains no commits; the left side must be an ancestor of the right (e.g. HEAD~3..HEAD)"
        )
    return shas


def _rev_parse(repo: git.Repo, rev: str) -> str:
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except git.GitCommandError:
        if not repo.head.is_valid():
            raise RegressError(
                f"unknown revision '{rev}': the repository has no commits yet; commit first, or measure `regress run {WORKTREE}`"
            ) from None
        raise RegressError(
            f"unknown revision '{rev}': not a commit, branch or tag here; see `git log --oneline` for valid ones"
        ) from None


def resolve(repo: git.Repo, revs: list[str]) -> list[str]:
    """Full shas for revisions and ranges, each once, oldest first."""
    shas: list[str] = []
    for rev in revs:
        if not rev or rev.startswith("-"):
            raise RegressError(f"'{rev}' is not a revision; give a commit, branch, tag or range")
        shas.extend(_rev_list(repo, rev) if _RANGE.search(rev) else [_rev_parse(repo, rev)])
    return _oldest_first(repo, list(dict.fromkeys(shas)))


def resolve_one(repo: git.Repo, rev: str, *, what: str, worktree: bool = True) -> str:
    """The one commit `rev` names (or WORKTREE): every command taking a single
    revision resolves it here, with one message for a range."""
    if worktree and rev == WORKTREE:
        return WORKTREE
    shas = resolve(repo, [rev])
    if len(shas) != 1 or _RANGE.search(rev):
        n = len(shas)
        raise RegressError(
            f"'{rev}' is a range of {n} commit{'s' if n != 1 else ''}; {what} takes one commit, like HEAD or main"
        )
    return shas[0]


def _oldest_first(repo: git.Repo, shas: list[str]) -> list[str]:
    """Parents before children, whatever the dates say.

    Commit dates are no order: a rebase stamps a whole branch with one second,
    and clocks skew. git's topological order over the span the commits share
    (from their common ancestor on) is.
    """
    if len(shas) < 2:
        return shas
    try:
        bases = repo.git.merge_base("--octopus", *shas).split()
    except git.GitCommandError:  # unrelated histories: walk all of them
        bases = []
    stops = [f"^{p.hexsha}" for b in bases for p in repo.commit(b).parents]
    with tempfile.TemporaryFile() as revs:  # thousands of shas: stdin, not argv
        revs.write("\n".join(shas + stops).encode() + b"\n")
        revs.seek(0)
        out = repo.git.rev_list("--topo-order", "--reverse", "--stdin", istream=revs)
    wanted = set(shas)
    order = [sha for sha in out.split() if sha in wanted]
    return order + [sha for sha in shas if sha not in set(order)]


def commit_info(repo: git.Repo, sha: str) -> CommitInfo:
    c = repo.commit(sha)
    return CommitInfo(
        sha=c.hexsha,
        parents=tuple(p.hexsha for p in c.parents),
        author=c.author.name or "",
        author_email=c.author.email or "",
        authored_at=int(c.authored_date),
        committed_at=int(c.committed_date),
        subject=c.summary if isinstance(c.summary, str) else c.summary.decode("utf-8", "replace"),
    )


def worktree_info(repo: git.Repo) -> CommitInfo:
    """The uncommitted working tree as a pseudo-commit on top of HEAD."""
    head = repo.head.commit.hexsha if repo.head.is_valid() else ""
    try:
        reader = repo.config_reader()
        author = reader.get_value("user", "name", "")
        email = reader.get_value("user", "email", "")
    except Exception:  # noqa: BLE001 - no git identity configured: not worth failing over
        author, email = "", ""
    now = int(time.time())
    subject = f"uncommitted changes on {head[:10]}" if head else "uncommitted changes"
    return CommitInfo(WORKTREE, (head,) if head else (), str(author), str(email), now, now, subject)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_stale_worktrees(repo: git.Repo) -> None:
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
            raise RegressError(
                f"could not check out {sha[:10]} into a worktree: {(exc.stderr or '').strip()}"
            ) from None
        yield path
    finally:
        _remove_worktree(repo, path)


def merge_base(repo: git.Repo, a: str, b: str) -> str:
    """The commit a pull request of `b` into `a` branched from: what its changes are measured against."""
    try:
        return repo.git.merge_base(a, b).split()[0]
    except (git.GitCommandError, IndexError):
        raise RegressError(
            f"{a[:10]} and {b[:10]} share no history; compare them directly with `regress compare {a[:10]} {b[:10]}`"
        ) from None


def is_ancestor(repo: git.Repo, a: str, b: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", a, b)
    except git.GitCommandError:
        return False
    return True


def first_parent_path(repo: git.Repo, good: str, bad: str) -> list[str]:
    """`good`, then the first-parent commits leading from it to `bad`, oldest first: what bisect searches."""
    out = repo.git.rev_list("--first-parent", "--ancestry-path", "--reverse", f"{good}..{bad}", "--")
    return [good, *out.split()]


def first_parent_ancestors(repo: git.Repo, sha: str, limit: int) -> list[str]:
    """sha's first-parent ancestors, newest first (not sha itself); [] for a root commit."""
    try:
        out = repo.git.rev_list("--first-parent", f"--max-count={limit}", f"{sha}^")
    except git.GitCommandError:
        return []
    return out.split()


def count_between(repo: git.Repo, a: str, b: str) -> int | None:
    """Commits strictly between `a` and its descendant `b` (None when `a` is not an ancestor of `b`)."""
    if not is_ancestor(repo, a, b):
        return None
    return max(0, int(repo.git.rev_list("--count", "--ancestry-path", f"{a}..{b}", "--")) - 1)
