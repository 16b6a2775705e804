"""Everything regress asks of git about revisions (resolving them, commit metadata, ancestry), and the
throwaway checkouts it measures in: each commit a detached worktree in a temporary folder, removed
afterwards (those of a killed regress by the next one). The user's working tree, index and branch
are never touched.
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


def shallow_cut(repo: git.Repo) -> set[str]:
    """The commits a shallow clone was cut at (their parents are not here); empty for a full clone."""
    path = Path(repo.common_dir) / "shallow"
    return set(path.read_text().split()) if path.is_file() else set()


def _shallow_hint(repo: git.Repo) -> str:
    if not shallow_cut(repo):
        return ""
    return (
        "; this is a shallow clone (actions/checkout's default), so older commits are not here: "
        "set `fetch-depth: 0` on actions/checkout, or run `git fetch --unshallow`"
    )


def _rev_list(repo: git.Repo, spec: str, paths: tuple[str, ...] = ()) -> list[str]:
    try:
        out = repo.git.rev_list("--reverse", "--topo-order", spec, "--", *paths)
    except git.GitCommandError as exc:
        hint = _shallow_hint(repo) or "; use a form like HEAD~5..HEAD, v1.0..main or HEAD^!"
        raise RegressError(f"bad revision range '{spec}' ({git_reason(exc, 'git rejected it')}){hint}") from None
    shas = out.split()
    cut = shallow_cut(repo)
    oldest = next((sha for sha in shas if sha in cut), None)
    if oldest is not None:
        raise RegressError(
            f"revision range '{spec}' reaches back past this shallow clone's oldest commit {oldest[:10]}; "
            "set `fetch-depth: 0` on actions/checkout (or run `git fetch --unshallow`) to measure all of it"
        )
    if not shas and not paths:
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
            f"unknown revision '{rev}': not a commit, branch or tag here"
            + (_shallow_hint(repo) or "; see `git log --oneline` for valid ones")
        ) from None


def resolve(repo: git.Repo, revs: list[str], paths: tuple[str, ...] = ()) -> list[str]:
    """Full shas for revisions and ranges, each once, oldest first; with `paths`, only the commits
    `git log REVS -- PATHS` lists."""
    shas: list[str] = []
    for rev in revs:
        if not rev or rev.startswith("-"):
            raise RegressError(f"'{rev}' is not a revision; give a commit, branch, tag or range")
        if _RANGE.search(rev):
            shas.extend(_rev_list(repo, rev, paths))
        else:
            sha = _rev_parse(repo, rev)
            # `git log -- PATHS` lists `sha` when the newest commit up to it that touches them is itself
            if not paths or repo.git.log("-1", "--format=%H", sha, "--", *paths).strip() == sha:
                shas.append(sha)
    if paths and not shas:
        shown = " ".join(paths)
        raise RegressError(
            f"no commit of {' '.join(revs)} touches {shown}; check the paths with `git log {' '.join(revs)} -- {shown}`"
        )
    return _oldest_first(repo, list(dict.fromkeys(shas)))


def resolve_one(repo: git.Repo, rev: str, *, what: str, worktree: bool = True) -> str:
    """The one commit `rev` names (or WORKTREE); a range is an error naming `what`."""
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
    """Parents before children (git's topological order from the commits' common ancestor on), never
    by date: a rebase stamps a branch with one second, and clocks skew."""
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


def merge_base(repo: git.Repo, a: str, b: str) -> str:
    """The commit a pull request of `b` into `a` branched from: what its changes are measured against."""
    try:
        return repo.git.merge_base(a, b).split()[0]
    except (git.GitCommandError, IndexError):
        raise RegressError(
            f"{a[:10]} and {b[:10]} share no history"
            + (_shallow_hint(repo) or f"; compare them directly with `regress compare {a[:10]} {b[:10]}`")
        ) from None


def is_ancestor(repo: git.Repo, a: str, b: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", a, b)
    except git.GitCommandError:
        return False
    return True


def first_parent_path(repo: git.Repo, good: str, bad: str, paths: tuple[str, ...] = ()) -> list[str]:
    """`good`, then the first-parent commits from it to `bad`, oldest first (what bisect searches); with
    `paths`, only those `git log good..bad -- PATHS` lists, and `bad`. Where `bad`'s first parents never
    reach `good` (a merged branch), every commit on the ancestry path, parents first."""
    out = repo.git.rev_list("--first-parent", "--ancestry-path", "--reverse", f"{good}..{bad}", "--").split()
    if not out or good not in {p.hexsha for p in repo.commit(out[0]).parents}:
        out = repo.git.rev_list("--ancestry-path", "--topo-order", "--reverse", f"{good}..{bad}", "--").split()
    if paths:
        touching = set(repo.git.rev_list(f"{good}..{bad}", "--", *paths).split())
        out = [sha for sha in out if sha in touching or sha == bad]
    return [good, *out]


def first_parent_ancestors(repo: git.Repo, sha: str, limit: int) -> list[str]:
    """sha's first-parent ancestors, newest first (not sha itself); [] for a root commit."""
    try:
        return repo.git.rev_list("--first-parent", f"--max-count={limit}", f"{sha}^").split()
    except git.GitCommandError:
        return []


def count_between(repo: git.Repo, a: str, b: str, paths: tuple[str, ...] = ()) -> int | None:
    """Commits strictly between `a` and its descendant `b` (None when `a` is not an ancestor of `b`);
    with `paths`, only those that touch them."""
    if not is_ancestor(repo, a, b):
        return None
    if paths:
        between = set(repo.git.rev_list("--ancestry-path", f"{a}..{b}", "--").split()) - {b}
        return len(between & set(repo.git.rev_list(f"{a}..{b}", "--", *paths).split()))
    return max(0, int(repo.git.rev_list("--count", "--ancestry-path", f"{a}..{b}", "--")) - 1)


# -- worktrees ---------------------------------------------------------------------

_WT_PREFIX = "regress-wt-"


class CheckoutFailed(RegressError):
    """git cannot check a commit out (a blob missing from the clone): that commit's failure, not the run's."""


def _pid_alive(pid: int) -> bool:
    try:
        with contextlib.suppress(PermissionError):  # another user's process
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
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
            # git's own words, one line: its `error:` lines (a missing blob names the file), else its last line
            lines = [line.strip().removeprefix("stderr: ").strip(" '") for line in (exc.stderr or "").splitlines()]
            errors = [line.removeprefix("error: ") for line in lines if line.startswith("error: ")]
            why = "; ".join(errors[:3]) if errors else git_reason(exc)
            raise CheckoutFailed(f"git could not check out {sha[:10]}: {why}") from None
        yield path
    finally:
        _remove_worktree(repo, path)
