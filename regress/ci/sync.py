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

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.merge import Conflict, combine
from regress.storage import gitrepo, results_branch
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


def _where(remote: str, branch: str, rel: str) -> str:
    return f"{remote}/{branch}:{rel}"


def _absorb_branch(repo, store: Store, tip: str, remote: str, branch: str) -> Synced:
    """Merge every result file of the branch's commit `tip` into the results folder."""
    local = store.result_files()
    written, conflicts, seen = 0, [], 0
    for rel, blob in results_branch.files(repo, tip).items():
        if parse_relpath(rel) is None:  # the branch's README, or anything else: not results
            continue
        seen += 1
        if rel in local and results_branch.blob_id(store.raw(rel)) == blob:
            continue
        where = _where(remote, branch, rel)
        result = check_relpath(rel, decode(results_branch.read(repo, blob), where), where)
        changed, refused = store.absorb(result)
        written += changed
        conflicts.extend(refused)
    return Synced(files=seen, written=written, tip=tip, conflicts=tuple(conflicts))


def _distinct(conflicts: list[Conflict]) -> tuple[Conflict, ...]:
    """Each conflict once, though pushing and then pulling meet it from both sides."""
    seen = {}
    for c in conflicts:
        seen.setdefault((c.machine, c.env, c.sha, c.what), c)
    return tuple(seen.values())


def pull(cfg: Config, *, remote: str = results_branch.REMOTE, branch: str = results_branch.BRANCH) -> Synced:
    """Restore the results branch into the results folder, merged with what is here."""
    repo = gitrepo.open_repo(cfg.root)
    store = Store(cfg.results_dir)
    with store.lock():
        tip = results_branch.fetch(repo, remote, branch)
        if tip is None:
            return Synced()
        return _absorb_branch(repo, store, tip, remote, branch)


def _message(changes: dict[str, bytes]) -> str:
    names = sorted(changes)
    shown = ", ".join(n.removesuffix(".pkl") for n in names[:3]) + (
        f" and {len(names) - 3} more" if len(names) > 3 else ""
    )
    return f"regress results: {shown}"


def push(
    cfg: Config,
    *,
    remote: str = results_branch.REMOTE,
    branch: str = results_branch.BRANCH,
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
            tip = results_branch.fetch(repo, remote, branch)
            on_branch = results_branch.files(repo, tip) if tip else {}
            changes: dict[str, bytes] = {}
            conflicts: list[Conflict] = []
            local = store.result_files()
            for rel, path in local.items():
                data = store.raw(rel)
                blob = on_branch.get(rel)
                if blob == results_branch.blob_id(data):
                    continue
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
        pulled = _absorb_branch(repo, store, final, remote, branch) if final else Synced()
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
    incoming = []
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
    written, conflicts = 0, []
    with store.lock():
        for result in incoming:
            changed, refused = store.absorb(result)
            written += changed
            conflicts.extend(refused)
    return Synced(files=len(incoming), written=written, conflicts=tuple(conflicts))
