"""The results folder: <results>/<machine>/<env>/<sha>.pkl, one file per commit (WORKTREE.pkl for the
uncommitted working tree), written atomically, bytes by `codec`. Files left on the results branch
(`branch_files`) are listed and read as if they were here; a file written over one is written here.
Beside them, operator profiles as `regress explain` keeps them: <machine>/<env>/profiles/<sha>/<slug>.json
(the op table) and <slug>.trace.json (torch.profiler's Chrome trace), read as data only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from regress.core.errors import RegressError
from regress.core.merge import Conflict, combine
from regress.core.ops import Op, OpTable
from regress.core.records import WORKTREE, BenchmarkId, CommitResult
from regress.storage import branch_files, summary
from regress.storage.atomic import make_ignored, write_atomic
from regress.storage.codec import decode, encode

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def check_name(kind: str, value: str) -> str:
    """Machine and env names become folder names: keep them plain."""
    if not _SAFE_NAME.match(value) or value in {".", ".."}:
        raise RegressError(f"{kind} name {value!r} can't be a folder name; use letters, digits, '.', '_', '+' or '-'")
    return value


@dataclass
class Store:
    root: Path
    # Files a history load refused (one line each, naming the file): the other commits still load.
    refused: list[str] = field(default_factory=list, compare=False, repr=False)
    _db: sqlite3.Connection | None = field(default=None, init=False, compare=False, repr=False)

    def db(self) -> sqlite3.Connection:
        """The results folder's FILE, the summary's and the memo's (`summary.connect`), opened the first time
        it is asked for and kept open until `close`; OSError or sqlite3.Error where it cannot be opened."""
        if self._db is None:
            self._db = summary.connect(self.root)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def path(self, machine: str, env: str, sha: str) -> Path:
        return self.root / check_name("machine", machine) / check_name("env", env) / f"{sha}.pkl"

    # -- reading ---------------------------------------------------------

    def load(self, machine: str, env: str, sha: str) -> CommitResult | None:
        path = self.path(machine, env, sha)
        data = self._stored(path)
        return decode(data, str(path)) if data is not None else None

    def has(self, machine: str, env: str, sha: str) -> bool:
        path = self.path(machine, env, sha)
        return path.is_file() or branch_files.blob_of(self.root, self._rel(path)) is not None

    def machines(self) -> list[str]:
        if not self.root.is_dir():
            return []
        here = {p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")}
        return sorted(here | {m for m, _ in branch_files.folders(self.root)})

    def envs(self, machine: str) -> list[str]:
        folder = self.root / machine
        here = {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
        return sorted(here | {e for m, e in branch_files.folders(self.root) if m == machine})

    def shas(self, machine: str, env: str) -> list[str]:
        folder = self.root / machine / env
        here = {p.stem for p in folder.glob("*.pkl")} if folder.is_dir() else set()
        return sorted(here | set(branch_files.absent(self.root, machine, env)))

    def load_all(self, machine: str, env: str) -> list[CommitResult]:
        """Every readable result of machine/env; unreadable ones are listed in `refused`."""
        return [r for sha in self.shas(machine, env) if (r := self.load_or_refuse(machine, env, sha)) is not None]

    def load_or_refuse(self, machine: str, env: str, sha: str) -> CommitResult | None:
        """`load`, with a file that does not read listed in `refused` (the others still load) instead of raised."""
        try:
            return self.load(machine, env, sha)
        except RegressError as exc:
            self.refused.append(str(exc))
            return None

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _stored(self, path: Path) -> bytes | None:
        """What is stored at `path`: the file here, else the results branch's (`branch_files`), else None."""
        if path.exists():
            return _read(path)
        blob = branch_files.blob_of(self.root, self._rel(path))
        return branch_files.fetch(self.root, self._rel(path), blob) if blob is not None else None

    def history(self, machine: str, env: str) -> list[CommitResult]:
        """Every commit measured on machine/env, oldest first (the WORKTREE left out)."""
        return summary.in_order(self.load_all(machine, env))

    # -- writing ---------------------------------------------------------

    def save(self, result: CommitResult, replaced: list[Conflict] | None = None) -> Path:
        """Write a new run's `result`, merged into what is stored for that commit (`combine`); what it
        replaced is added to `replaced`."""
        path = self.path(result.machine, result.env, result.commit.sha)
        make_ignored(self.root)
        stored = None
        if result.commit.sha != WORKTREE:  # the WORKTREE is measured afresh each time
            try:
                stored = self._stored(path)
            except RegressError:
                if path.exists():
                    raise
                # A branch file git can't read now (offline): written here alone; `results push` merges.
        if stored is not None:
            result, changed = combine(decode(stored, str(path)), result, latest=True)
            if changed:
                # Nothing measured is lost: the file as it was goes aside, where the message says.
                kept = path.parent / "replaced" / f"{path.stem}.{time.time_ns()}.pkl"
                write_atomic(kept, stored)
                changed = tuple(dataclasses.replace(c, why=f"{c.why}; the old file is kept as {kept}") for c in changed)
            if replaced is not None:
                replaced.extend(changed)
        self._write(path, result)
        return path

    # -- merging results from elsewhere (`regress merge`, the results branch) --

    def result_files(self) -> dict[str, Path]:
        """Every commit's file here by its relative name (machine/env/sha.pkl); the WORKTREE left out."""
        found = {}
        for path in sorted(self.root.glob("*/*/*.pkl")):  # none where there is no folder
            rel = path.relative_to(self.root).as_posix()
            if parse_relpath(rel) is not None and path.stem != WORKTREE:
                found[rel] = path
        return found

    def raw(self, rel: str) -> bytes:
        """A result file's bytes as stored, by its relative name (machine/env/sha.pkl); RegressError where they
        cannot be read."""
        return _read(self.root / rel)

    def load_checked(self, rel: str, path: Path) -> CommitResult:
        """A file's result, which must be the one its name says (a moved file would land on the wrong commit)."""
        return check_relpath(rel, decode(_read(path), str(path)), str(path))

    def absorb(self, incoming: CommitResult, data: bytes | None = None) -> tuple[bool, tuple[Conflict, ...]]:
        """Merge a result measured elsewhere into this folder (on a conflict what is here is kept); `data`,
        the incoming file's bytes, are written as they are where nothing is here. Returns whether the
        file changed, and the refused conflicts."""
        path = self.path(incoming.machine, incoming.env, incoming.commit.sha)
        make_ignored(self.root)
        stored = self._stored(path)
        if stored is None:
            self._write(path, incoming, data)
            return True, ()
        old = decode(stored, str(path))
        merged, conflicts = combine(old, incoming)
        if merged == old:
            return False, conflicts
        self._write(path, merged)
        return True, conflicts

    def _write(self, path: Path, result: CommitResult, data: bytes | None = None) -> None:
        """The one way a result file is written: atomically, with its summary entry (`summary.py`) after it."""
        data = encode(result) if data is None else data
        write_atomic(path, data)
        summary.record(self, path, result, data)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Only one `regress run` writes to a results folder at a time."""
        make_ignored(self.root)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                raise RegressError(
                    f"results folder {self.root} is in use by another regress run (pid {holder}); "
                    "wait for it to finish, or pass --results to use another folder"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RegressError(f"cannot read result file {path}: {exc.strerror}") from None


_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def parse_relpath(rel: str) -> tuple[str, str, str] | None:
    """(machine, env, sha) of a committed result's relative name; None for anything else."""
    parts = rel.split("/")
    if len(parts) != 3 or not parts[2].endswith(".pkl"):
        return None
    machine, env, sha = parts[0], parts[1], parts[2][: -len(".pkl")]
    return (machine, env, sha) if _SAFE_NAME.match(machine) and _SAFE_NAME.match(env) and _SHA.match(sha) else None


def check_relpath(rel: str, result: CommitResult, where: str) -> CommitResult:
    expected = parse_relpath(rel)
    actual = (result.machine, result.env, result.commit.sha)
    if expected != actual:
        raise RegressError(
            f"{where} holds results of {actual[0]}/{actual[1]}/{actual[2][:10]}, not what its name says; "
            "move it back to <machine>/<env>/<sha>.pkl or delete it"
        )
    return result


# -- operator profiles ---------------------------------------------------------------

PROFILE_FORMAT = "regress-profile"
PROFILE_VERSION = 1


@dataclass(frozen=True)
class Profile:
    """One benchmark profiled at one commit."""

    id: BenchmarkId
    sha: str
    table: OpTable
    trace: Path | None  # the Chrome trace, where it was kept


def _profile_slug(bid: BenchmarkId) -> str:
    """A file name for a benchmark: readable, and unique by a hash of the whole identity."""
    text = str(bid)
    plain = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "bench"
    return f"{plain}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def _profiles_folder(results: Path, machine: str, env: str, sha: str) -> Path:
    return results / check_name("machine", machine) / check_name("env", env) / "profiles" / sha


def save_profile(
    results: Path, machine: str, env: str, sha: str, bid: BenchmarkId, table: OpTable, trace: bytes | None
) -> Profile:
    make_ignored(results)
    where = _profiles_folder(results, machine, env, sha)
    name = _profile_slug(bid)
    trace_path = where / f"{name}.trace.json" if trace is not None else None
    if trace_path is not None and trace is not None:
        write_atomic(trace_path, trace, sync=False)
    doc = {
        "format": PROFILE_FORMAT,
        "version": PROFILE_VERSION,
        "sha": sha,
        "id": asdict(bid),
        "calls": table.calls,
        "ops": [asdict(o) for o in table.ops],
        "trace": trace_path.name if trace_path is not None else None,
    }
    write_atomic(where / f"{name}.json", json.dumps(doc, indent=1))
    return Profile(bid, sha, table, trace_path)


def _read_profile(path: Path) -> Profile:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != PROFILE_FORMAT:
            raise ValueError("not a regress profile")
        bid = BenchmarkId(**doc["id"])
        ops = tuple(
            Op(
                str(o["name"]),
                int(o["count"]),
                float(o["self_cpu_us"]),
                float(o.get("self_cuda_us", 0.0)),
                bool(o.get("user", False)),
            )
            for o in doc["ops"]
        )
        trace = path.with_name(doc["trace"]) if doc.get("trace") else None
        return Profile(bid, str(doc["sha"]), OpTable(int(doc["calls"]), ops), trace)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise RegressError(f"cannot read profile {path} ({exc}); delete it and run `regress explain` again") from None


def profile_pair(
    results: Path, machine: str, env: str, base: str, head: str, bid: BenchmarkId
) -> tuple[Profile, Profile] | None:
    """A benchmark's profiles at two commits, as an earlier `regress explain` kept them; None unless both are."""
    paths = [_profiles_folder(results, machine, env, sha) / f"{_profile_slug(bid)}.json" for sha in (base, head)]
    b, h = (_read_profile(p) if p.is_file() else None for p in paths)
    return (b, h) if b is not None and h is not None else None


def _profiles_of(results: Path, machine: str, env: str, sha: str) -> dict[BenchmarkId, Profile]:
    where = _profiles_folder(results, machine, env, sha)
    paths = sorted(p for p in where.glob("*.json") if not p.name.endswith(".trace.json")) if where.is_dir() else []
    return {p.id: p for p in map(_read_profile, paths)}


def profile_pairs(
    results: Path, machine: str, env: str, base: str, head: str
) -> dict[BenchmarkId, tuple[Profile, Profile]]:
    """Every benchmark an earlier `regress explain` profiled at both commits: its two profiles, by id."""
    b, h = _profiles_of(results, machine, env, base), _profiles_of(results, machine, env, head)
    return {i: (b[i], h[i]) for i in sorted(set(b) & set(h))}
