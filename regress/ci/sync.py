"""The steps of the CI workflows, as commands that run the same on a laptop and in a test.

`.github/workflows/benchmarks.yml` only wires these together:

- `regress results pull` / `regress results push`: the history lives on a
  results branch of the project's remote (see `results_branch`); a CI job
  restores it, measures, and adds its results back;
- `regress merge DIR...`: the results of sharded jobs (`run --shard K/N`) put
  back together (the rules are in `merge`);
- `regress check BASE HEAD` (in `check.py`): the pull-request check.

Every step merges, none replaces: a measurement is never lost, whichever job
finishes first.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.merge import Conflict, combine
from regress.core.records import CommitResult
from regress.storage import branch_files, gitrepo, results_branch, summary
from regress.storage.codec import decode, encode
from regress.storage.store import Store, check_relpath, parse_relpath

DEFAULT_RETRIES = 8


@dataclass(frozen=True)
class Synced:
    """What a pull, push or merge did."""

    files: int = 0  # result files looked at (on the branch, or in the merged folders)
    written: int = 0  # files written (here for pull and merge, on the branch for push)
    attempts: int = 0  # pushes tried
    tip: str | None = None  # the branch's commit afterwards; None if it does not exist
    conflicts: tuple[Conflict, ...] = ()
    left: int = 0  # files left on the branch, read when needed (`pull --partial`)


def _where(remote: str, branch: str, rel: str) -> str:
    return f"{remote}/{branch}:{rel}"


def _absorb_branch(repo, store: Store, tip: str, remote: str, branch: str, only: set[str] | None = None) -> Synced:
    """Merge the result files of the branch's commit `tip` (those named in `only`, if given) into the results folder.

    The files to read are fetched in one request first: after a partial fetch
    (`pull --near`) the clone holds none of them.
    """
    listed = _results_at(repo, tip)
    on_branch = {rel: blob for rel, blob in listed.items() if only is None or rel in only}
    return _absorb(repo, store, tip, remote, branch, on_branch, store.result_files())


def _results_at(repo, tip: str) -> dict[str, str]:
    """The result files of the branch's commit `tip` (the README is not results): relative name -> blob id."""
    return {rel: blob for rel, blob in results_branch.files(repo, tip).items() if parse_relpath(rel) is not None}


def _absorb(repo, store: Store, tip: str, remote: str, branch: str, on_branch: dict[str, str], local) -> Synced:
    """Merge these files of the branch (relative name -> blob id) into the folder, whose files are `local`."""
    wanted = {
        rel: blob
        for rel, blob in on_branch.items()
        if not (rel in local and branch_files.blob_id(store.raw(rel)) == blob)
    }
    _have(repo, remote, tip, set(wanted.values()))
    written = 0
    conflicts: list[Conflict] = []
    for rel, blob in wanted.items():
        where = _where(remote, branch, rel)
        data = results_branch.read(repo, blob)
        changed, refused = store.absorb(check_relpath(rel, decode(data, where), where), data)
        written += changed
        conflicts.extend(refused)
    return Synced(files=len(on_branch), written=written, tip=tip, conflicts=tuple(conflicts))


def _have(repo, remote: str, tip: str, blobs: set[str]) -> None:
    """The branch's blobs `blobs` here, those a partial fetch left behind fetched in one request."""
    if blobs and results_branch.is_partial(repo, remote):
        results_branch.fetch_blobs(repo, remote, blobs & results_branch.missing(repo, tip))


# How far back `pull --near` looks for measured ancestors: as far as `run --paired` does.
NEAR_DEPTH = 1000
# Measured ancestors `pull --near` restores: the one `run --paired` measures again, and the one before it.
NEAR_ANCESTORS = 2


def _near(repo, tip: str, rev: str) -> set[str]:
    """The branch's files a run of `rev` reads: rev's own, and its newest measured first-parent ancestors', per series."""
    sha = gitrepo.resolve_one(repo, rev, what="results pull --near", worktree=False)
    order = {s: i for i, s in enumerate([sha, *gitrepo.first_parent_ancestors(repo, sha, NEAR_DEPTH)])}
    series: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for rel in results_branch.files(repo, tip):
        parsed = parse_relpath(rel)
        if parsed is not None and parsed[2] in order:
            series.setdefault(parsed[:2], []).append((order[parsed[2]], rel))
    chosen: set[str] = set()
    for found in series.values():
        found.sort()
        own = 1 if found[0][0] == 0 else 0
        chosen.update(rel for _, rel in found[: own + NEAR_ANCESTORS])
    return chosen


def _distinct(conflicts: list[Conflict]) -> tuple[Conflict, ...]:
    """Each conflict once, though pushing and then pulling meet it from both sides."""
    seen: dict[tuple[str, str, str, str], Conflict] = {}
    for c in conflicts:
        seen.setdefault((c.machine, c.env, c.sha, c.what), c)
    return tuple(seen.values())


def pull(
    cfg: Config,
    *,
    remote: str = branch_files.REMOTE,
    branch: str = branch_files.BRANCH,
    near: str | None = None,
    partial: bool = False,
) -> Synced:
    """Restore the results branch into the results folder, merged with what is here.

    `near` (a revision): only what a run of it reads, its own results and its
    newest measured ancestors', fetched without the branch's history or any
    other file (a push job's measure step needs no more). `partial`: every
    file of the branch's tip, but only those the folder and its summary lack
    fetched; the rest stay on the branch (`branch_files`) and are read through
    git when something needs them (a publish job with its summary restored).
    """
    repo = gitrepo.open_repo(cfg.root)
    store = Store(cfg.results_dir)
    with store.lock():
        tip = results_branch.fetch(repo, remote, branch, partial=near is not None or partial)
        if tip is None:
            return Synced()
        if near is not None:
            return _absorb_branch(repo, store, tip, remote, branch, _near(repo, tip, near))
        if partial:
            return _absorb_lacking(repo, store, tip, remote, branch)
        synced = _absorb_branch(repo, store, tip, remote, branch)
        branch_files.forget(store.root)  # every file is here now
        return synced


def _absorb_lacking(repo, store: Store, tip: str, remote: str, branch: str) -> Synced:
    """Merge in the tip's files that the folder lacks and the summary does not know, and list the tip's files."""
    on_branch = _results_at(repo, tip)
    local = store.result_files()
    known = summary.knows(store, {rel: blob for rel, blob in on_branch.items() if rel not in local})
    wanted = {rel: blob for rel, blob in on_branch.items() if rel not in known}  # here (to compare) or lacking
    synced = _absorb(repo, store, tip, remote, branch, wanted, local)
    branch_files.write(store.root, str(Path(repo.git_dir).resolve()), tip, on_branch)
    return dataclasses.replace(synced, files=len(on_branch), left=len(known))


def _message(changes: dict[str, bytes]) -> str:
    names = sorted(changes)
    shown = ", ".join(n.removesuffix(".pkl") for n in names[:3]) + (
        f" and {len(names) - 3} more" if len(names) > 3 else ""
    )
    return f"regress results: {shown}"


def push(
    cfg: Config,
    *,
    remote: str = branch_files.REMOTE,
    branch: str = branch_files.BRANCH,
    retries: int = DEFAULT_RETRIES,
    say: Callable[[str], None] = lambda line: None,
) -> Synced:
    """Add the results folder to the results branch (created on first use); never overwrite, never force.

    Each attempt merges onto the branch's current tip: files only here are
    added, files on both sides are combined (the branch's version wins a
    conflict, which is reported). If another job pushed in between, the push
    is rejected and the next attempt merges with that job's results. After
    the push the results folder gets whatever other jobs added, so a report
    built next shows them too.
    """
    repo = gitrepo.open_repo(cfg.root)
    store = Store(cfg.results_dir)
    with store.lock():
        for attempt in range(1, retries + 1):
            # After `pull --near` the clone stays partial: fetch the new tip the same way.
            tip = results_branch.fetch(repo, remote, branch, partial=results_branch.is_partial(repo, remote))
            on_branch = results_branch.files(repo, tip) if tip else {}
            local = store.result_files()
            ids = {rel: branch_files.blob_id(store.raw(rel)) for rel in local}
            if tip:  # the branch's copies of files here that differ, to merge with
                _have(repo, remote, tip, {on_branch[r] for r in local if on_branch.get(r, ids[r]) != ids[r]})
            changes: dict[str, bytes] = {}
            conflicts: list[Conflict] = []
            for rel, path in local.items():
                blob = on_branch.get(rel)
                if blob == ids[rel]:
                    continue
                data = store.raw(rel)
                if blob is None:
                    store.load_checked(rel, path)  # never publish a file that can't be read back
                    changes[rel] = data
                    continue
                where = _where(remote, branch, rel)
                theirs = check_relpath(rel, decode(results_branch.read(repo, blob), where), where)
                merged, refused = combine(theirs, store.load_checked(rel, path))
                conflicts.extend(refused)
                if merged != theirs:
                    changes[rel] = encode(merged)
            if not changes:
                final = tip
                break
            new = results_branch.commit(repo, tip, changes, _message(changes))
            if results_branch.push(repo, remote, new, branch):
                final = new
                break
            say(
                f"regress: {remote}/{branch} moved on while pushing (another job's results); "
                f"merging with them and trying again ({attempt}/{retries})"
            )
            time.sleep(random.uniform(0.2, 1.0) * attempt)  # jitter: racing jobs don't collide again
        else:
            raise RegressError(
                f"gave up pushing to {remote}/{branch} after {retries} attempts, each overtaken by another push; "
                f"the results are kept in {cfg.results_dir}; rerun `regress results push` (or raise --retries)"
            )
        if final and branch_files.read(store.root) is not None:  # after `pull --partial`: as it did
            pulled = _absorb_lacking(repo, store, final, remote, branch)
        else:  # a partial clone (`pull --near`) brings its own files up to date, not the whole branch
            only = set(local) if results_branch.is_partial(repo, remote) else None
            pulled = _absorb_branch(repo, store, final, remote, branch, only) if final else Synced()
        return Synced(
            files=len(local),
            written=len(changes),
            attempts=attempt,
            tip=final,
            conflicts=_distinct(conflicts + list(pulled.conflicts)),
        )


def merge(cfg: Config, sources: list[Path]) -> Synced:
    """Merge the results folders `sources` (e.g. CI shards' artifacts) into the results folder.

    Every source is read before anything is written, so an unreadable file
    stops the merge without leaving half of it done.
    """
    store = Store(cfg.results_dir)
    target = store.root.resolve()
    incoming: list[CommitResult] = []
    for src in sources:
        if src.resolve() == target:
            raise RegressError(f"{src} is the results folder itself; give the folders to merge into it")
        if not src.is_dir():
            raise RegressError(f"{src} is not a folder; give results folders written by `regress run --results DIR`")
        found = Store(src).result_files()
        if not found:
            deeper = next(iter(src.glob("*/*/*/*.pkl")), None) is not None
            hint = (
                f"; its subfolders hold results: regress merge {src}/*"
                if deeper
                else "; expected files like DIR/<machine>/<env>/<sha>.pkl"
            )
            raise RegressError(f"{src} holds no regress results{hint}")
        incoming.extend(Store(src).load_checked(rel, path) for rel, path in found.items())
    written = 0
    conflicts: list[Conflict] = []
    with store.lock():
        for result in incoming:
            changed, refused = store.absorb(result)
            written += changed
            conflicts.extend(refused)
    return Synced(files=len(incoming), written=written, conflicts=tuple(conflicts))
