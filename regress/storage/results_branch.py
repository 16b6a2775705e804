"""The results branch: a branch of the project's remote (default `regress-results`) holding a results folder.

Laid out as a results folder, sharing no history with the code. Commits are built on a temporary
index (the user's checkout, index and branches are never touched); a push is fast-forward only, and
one that lost a race returns False for the caller to merge and try again.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import git
from gitdb.base import IStream

from regress.core.errors import RegressError
from regress.storage import gitrepo
from regress.storage.branch_files import BRANCH

_README = """\
# regress results

This branch holds the measurements of `regress` (continuous benchmarking),
laid out as a results folder: `<machine>/<env>/<commit sha>.pkl`.
It shares no history with the code. `regress results pull` restores it into
`.regress/`; `regress results push` adds to it and never overwrites anything.
"""


def is_partial(repo: git.Repo, remote: str) -> bool:
    """Whether an earlier partial fetch made `remote` a promisor: blobs this clone lacks are fetched when read."""
    return repo.config_reader().get_value(f'remote "{remote}"', "promisor", False) in (True, "true")


def fetch(repo: git.Repo, remote: str, branch: str, *, partial: bool = False) -> str | None:
    """The branch's tip on the remote now, fetched; None while it does not exist. `partial`: only the
    tip's commit and trees (`--depth 1 --filter=blob:none`); `fetch_blobs` brings the files a job reads,
    and git fetches a blob still missing when it is read (the remote is then a promisor)."""
    names = [r.name for r in repo.remotes]
    if remote not in names:
        raise RegressError(
            f"no git remote '{remote}' in {repo.working_tree_dir} (remotes: {', '.join(names) or 'none'}); "
            f"add it with `git remote add {remote} URL`, or pass --remote NAME"
        )
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        repo.git.check_ref_format("--branch", branch)
    except git.GitCommandError:
        raise RegressError(
            f"'{branch}' is not a valid branch name; pass --branch with a plain name like {BRANCH}"
        ) from None
    try:
        listed = repo.git.ls_remote("--heads", remote, f"refs/heads/{branch}")
        assert isinstance(listed, str)  # a git command's output, without as_process or with_extended_output
        if not listed.strip():
            return None
        cut = ("--depth", "1", "--filter=blob:none") if partial else ()
        repo.git.fetch("--quiet", "--no-tags", *cut, remote, f"+refs/heads/{branch}:{tracking}")
    except git.GitCommandError as exc:
        if "couldn't find remote ref" in (exc.stderr or ""):  # deleted between the two calls
            return None
        raise RegressError(
            f"cannot fetch branch '{branch}' from remote '{remote}': {gitrepo.git_reason(exc)}; check the remote's URL and your access"
        ) from None
    return repo.git.rev_parse("--verify", f"{tracking}^{{commit}}")


def files(repo: git.Repo, commit: str) -> dict[str, str]:
    """Every file of `commit`'s tree: relative path -> blob id."""
    out = repo.git.ls_tree("-r", "-z", "--full-tree", commit)
    found = {}
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob":
            found[path] = sha
    return found


def missing(repo: git.Repo, commit: str) -> set[str]:
    """The blobs of `commit`'s tree a partial fetch left on the remote (asked without fetching them)."""
    out = repo.git.rev_list("--objects", "--missing=print", "--no-walk", commit)
    return {line[1:].split()[0] for line in out.splitlines() if line.startswith("?")}


def fetch_blobs(repo: git.Repo, remote: str, blobs: set[str]) -> None:
    """These blobs from `remote` in one request (reading them one by one would fetch each alone)."""
    if not blobs:
        return
    with tempfile.TemporaryFile() as wanted:
        wanted.write("".join(f"{b}\n" for b in sorted(blobs)).encode())
        wanted.seek(0)
        try:
            repo.git.execute(
                ["git", "-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags"]
                + ["--no-write-fetch-head", "--filter=blob:none", "--stdin", remote],
                istream=wanted,
            )
        except git.GitCommandError as exc:
            raise RegressError(
                f"cannot fetch {len(blobs)} result files from remote '{remote}': {gitrepo.git_reason(exc)}; "
                "check the remote's URL and your access"
            ) from None


def read(repo: git.Repo, blob: str) -> bytes:
    return repo.odb.stream(bytes.fromhex(blob)).read()


def _identity(repo: git.Repo) -> dict[str, str]:
    """A committer for machines with no git identity (a CI runner); a configured one wins."""
    reader = repo.config_reader()
    env = {}
    for role in ("AUTHOR", "COMMITTER"):
        for key, default in (("name", "regress"), ("email", "regress@localhost")):
            var = f"GIT_{role}_{key.upper()}"
            if not os.environ.get(var) and not reader.get_value("user", key, ""):
                env[var] = default
    return env


def commit(repo: git.Repo, parent: str | None, changes: dict[str, bytes], message: str) -> str:
    """A commit of `parent`'s tree with `changes` written over it (a root commit with a README if no parent)."""
    if parent is None:
        changes = {"README.md": _README.encode(), **changes}
    with tempfile.TemporaryDirectory(prefix="regress-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **_identity(repo)}
        if parent is not None:
            repo.git.read_tree(parent, env=env)
        lines = []
        for path, data in sorted(changes.items()):
            stored = repo.odb.store(IStream("blob", len(data), io.BytesIO(data)))
            lines.append(f"100644 {stored.binsha.hex()}\t{path}\n")
        with tempfile.TemporaryFile() as info:
            info.write("".join(lines).encode())
            info.seek(0)
            repo.git.update_index("--add", "--index-info", istream=info, env=env)
        # --missing-ok: a partial clone lacks the parent's files, and checking they exist would fetch them all.
        tree = repo.git.write_tree("--missing-ok", env=env)
        parents = ["-p", parent] if parent is not None else []
        return repo.git.commit_tree(tree, *parents, "-m", message, env=env)


# A push that lost a race to another job's push: fetch, merge, try again.
_LOST_RACE = (
    "fetch first",
    "non-fast-forward",
    "stale info",
    "failed to update ref",
    "cannot lock ref",
    "failed to lock",
    "already exists",
)


def push(repo: git.Repo, remote: str, commit_sha: str, branch: str) -> bool:
    """Fast-forward the remote branch to `commit_sha`. False if another push got there first."""
    try:
        repo.git.push("--porcelain", remote, f"{commit_sha}:refs/heads/{branch}")
    except git.GitCommandError as exc:
        text = f"{exc.stdout or ''}\n{exc.stderr or ''}"
        if any(marker in text for marker in _LOST_RACE):
            return False
        raise RegressError(
            f"cannot push to branch '{branch}' of remote '{remote}': {gitrepo.git_reason(exc)}; "
            "the job needs write access (GitHub Actions: permissions: contents: write)"
        ) from None
    return True
