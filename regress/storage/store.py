"""The results folder: one pickle per commit, machine and environment.

Layout: <results>/<machine>/<env>/<sha>.pkl (the uncommitted working tree is
stored as WORKTREE.pkl). Writes are atomic (temp file, fsync, rename), so a
killed run never leaves half a file. Loading never runs code: the unpickler
only builds the record classes of `regress.core.records` and plain containers.

Format versions (bump FORMAT_VERSION and add a line for every change):
  1  first format: {"format": "regress-results", "version": 1, "result": CommitResult}
  2  BenchmarkResult.counts (InstructionCount records) added; version 1 files
     read as having no counts
  3  CommitResult.reference (the reference workload's Samples, one per round)
     and Settings.min_rounds/max_rounds/budget (the round plan) added;
     versions 1 and 2 read as having no reference rounds and a 1-round plan
  4  the record classes moved from regress.model to regress.core.records (the
     pickles name the new module); older files load through the old name
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pickle
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from regress.core import records as model
from regress.core.errors import RegressError
from regress.core.merge import Conflict, combine
from regress.core.records import WORKTREE, CommitResult, merge_results

FORMAT = "regress-results"
FORMAT_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)

_MODEL_CLASSES = frozenset(
    {
        "BenchmarkId",
        "TaskSpec",
        "Sample",
        "Failure",
        "BenchmarkResult",
        "InstructionCount",
        "CommitInfo",
        "Fingerprint",
        "Settings",
        "CommitResult",
    }
)
# Files of formats 1-3 name the records' old module.
_RECORD_MODULES = frozenset({"regress.core.records", "regress.model"})
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class _Refused(pickle.UnpicklingError):
    pass


class _AllowListUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module in _RECORD_MODULES and name in _MODEL_CLASSES:
            return getattr(model, name)
        raise _Refused(f"refusing to load {module}.{name}")


def check_name(kind: str, value: str) -> str:
    """Machine and env names become folder names: keep them plain."""
    if not _SAFE_NAME.match(value) or value in {".", ".."}:
        raise RegressError(
            f"{kind} name {value!r} can't be a folder name; use letters, digits, '.', '_', '+' or '-'"
        )
    return value


@dataclass(frozen=True)
class Store:
    root: Path

    def path(self, machine: str, env: str, sha: str) -> Path:
        return self.root / check_name("machine", machine) / check_name("env", env) / f"{sha}.pkl"

    # -- reading ---------------------------------------------------------

    def load_file(self, path: Path) -> CommitResult:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RegressError(f"cannot read result file {path}: {exc.strerror}") from None
        return decode(data, str(path))

    def load(self, machine: str, env: str, sha: str) -> CommitResult | None:
        path = self.path(machine, env, sha)
        return self.load_file(path) if path.exists() else None

    def machines(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def envs(self, machine: str) -> list[str]:
        folder = self.root / machine
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def shas(self, machine: str, env: str) -> list[str]:
        folder = self.root / machine / env
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.pkl"))

    def load_all(self, machine: str, env: str) -> list[CommitResult]:
        folder = self.root / machine / env
        return [self.load_file(folder / f"{sha}.pkl") for sha in self.shas(machine, env)]

    def history(self, machine: str, env: str) -> list[CommitResult]:
        """Every commit measured on machine/env, oldest first (the WORKTREE left out)."""
        results = {r.commit.sha: r for r in self.load_all(machine, env) if r.commit.sha != WORKTREE}
        return [results[c.sha] for c in model.history_order([r.commit for r in results.values()])]

    # -- writing ---------------------------------------------------------

    def save(self, result: CommitResult) -> Path:
        """Write `result`, merged into what is already stored for that commit."""
        path = self.path(result.machine, result.env, result.commit.sha)
        if path.exists():
            old = self.load_file(path)
            result = merge_results(old, result, replace_all=result.commit.sha == WORKTREE)
        write_atomic(path, encode(result))
        return path

    # -- merging results from elsewhere (`regress merge`, the results branch) --

    def result_files(self) -> dict[str, Path]:
        """Every commit's file here by its relative name (machine/env/sha.pkl); the WORKTREE left out."""
        if not self.root.is_dir():
            return {}
        found = {}
        for path in sorted(self.root.glob("*/*/*.pkl")):
            rel = path.relative_to(self.root).as_posix()
            if parse_relpath(rel) is not None and path.stem != WORKTREE:
                found[rel] = path
        return found

    def raw(self, rel: str) -> bytes:
        """A result file's bytes as stored, to tell whether another copy is identical."""
        try:
            return (self.root / rel).read_bytes()
        except OSError as exc:
            raise RegressError(f"cannot read result file {self.root / rel}: {exc.strerror}") from None

    def load_checked(self, rel: str, path: Path) -> CommitResult:
        """A file's result, which must be the one its name says (a moved file would land on the wrong commit)."""
        return check_relpath(rel, self.load_file(path), str(path))

    def absorb(self, incoming: CommitResult) -> tuple[bool, tuple[Conflict, ...]]:
        """Merge a result measured elsewhere into this folder; on a conflict what is here is kept.

        Returns whether the file changed, and the refused conflicts.
        """
        path = self.path(incoming.machine, incoming.env, incoming.commit.sha)
        if not path.exists():
            write_atomic(path, encode(incoming))
            return True, ()
        old = self.load_file(path)
        merged, conflicts = combine(old, incoming)
        if merged == old:
            return False, conflicts
        write_atomic(path, encode(merged))
        return True, conflicts

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Only one `regress run` writes to a results folder at a time."""
        self.root.mkdir(parents=True, exist_ok=True)
        lock_path = self.root / ".lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
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


_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def parse_relpath(rel: str) -> tuple[str, str, str] | None:
    """(machine, env, sha) of a committed result's relative name; None for anything else."""
    parts = rel.split("/")
    if len(parts) != 3 or not parts[2].endswith(".pkl"):
        return None
    machine, env, sha = parts[0], parts[1], parts[2][: -len(".pkl")]
    if not (_SAFE_NAME.match(machine) and _SAFE_NAME.match(env) and _SHA.match(sha)):
        return None
    return machine, env, sha


def check_relpath(rel: str, result: CommitResult, where: str) -> CommitResult:
    expected = parse_relpath(rel)
    actual = (result.machine, result.env, result.commit.sha)
    if expected != actual:
        raise RegressError(
            f"{where} holds results of {actual[0]}/{actual[1]}/{actual[2][:10]}, not what its name says; "
            "move it back to <machine>/<env>/<sha>.pkl or delete it"
        )
    return result


def encode(result: CommitResult) -> bytes:
    return pickle.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "result": result},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def decode(data: bytes, where: str) -> CommitResult:
    try:
        envelope = _AllowListUnpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise RegressError(
            f"{where} is not a regress result file ({exc}); nothing was run from it; delete or move it away"
        ) from None
    except Exception as exc:  # truncated or garbage bytes raise many kinds
        raise RegressError(
            f"{where} is corrupt ({type(exc).__name__}); delete it and measure that commit again"
        ) from None
    if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
        raise RegressError(f"{where} is not a regress result file; delete or move it away")
    version = envelope.get("version")
    if not isinstance(version, int):
        raise RegressError(f"{where} has no format version; delete it and measure that commit again")
    if version > FORMAT_VERSION:
        raise RegressError(
            f"{where} was written by a newer regress (format {version}, this one reads {FORMAT_VERSION}); "
            "upgrade regress (pip install -U regress)"
        )
    if version not in READABLE_VERSIONS:
        raise RegressError(
            f"{where} uses result format {version}, which this regress no longer reads; measure that commit again"
        )
    result = envelope.get("result")
    if not isinstance(result, CommitResult):
        raise RegressError(f"{where} holds no commit result; delete or move it away")
    return result


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
