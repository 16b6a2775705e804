"""A cache of the result files' index, so commands that read the history need not decode every file.

FILE holds, per result file, its light copy (`light`), its header and its commit, pickled and read back
with an allow-list. The files stay the record: each read checks every entry against its file (size and
mtime, else content digest; on the results branch, the digest `blobs` records for its blob id) and
the summary's `_version`, rebuilds what disagrees, drops entries without a file, and falls back to
decoding the files where the summary cannot be used. `Store` updates the entry of each file it writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import io
import os
import pickle
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from regress.core import blocks, records
from regress.core.errors import RegressError
from regress.core.history import history_order
from regress.storage import branch_files, codec, memo
from regress.storage.memo import Memo

FILE = memo.FILE
FLUSH = 200  # entries written in one transaction while rebuilding
FIGURES = "figures"  # the memo's kind of a file's figures (`SeriesFigures`)
CHUNK = 100  # files whose light results are read at once to compute what the memo lacks
_INSERT_BLOB = "INSERT OR REPLACE INTO blobs VALUES (?, ?)"
_INSERT_ENTRY = "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# What `commits` and `headers` read, so they need not walk past the light copies (docs/scale.md).
_LISTED = (
    "CREATE INDEX IF NOT EXISTS entries_listed"
    " ON entries (machine, env, sha, size, mtime_ns, digest, error, commit_info, header)"
)


# -- the light copy ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LightResult(records.BenchmarkResult):
    """A BenchmarkResult whose rounds hold only their round values, with torch's pooled-block
    figures kept aside: (q1, median, q3, significant figures), empty when it has no times."""

    torch_stats: tuple[float, ...] = ()


def _light_times(s: records.Sample) -> tuple[float, ...]:
    """A round's one figure (its fastest block, per run); a round torch would warn about also keeps its
    quartiles and slowest block, so the verdict's note on it (`blocks.worst_round_iqr`) reads the same."""
    if not s.raw_times:
        return ()
    fastest = min(s.raw_times) / s.number_per_run
    times = s.times
    if blocks.round_iqr(times) < blocks.IQR_WARN:
        return (fastest,)
    q1, q2, q3 = blocks.quartiles(sorted(times))
    return (fastest, q1, q2, q3, max(times))  # five sorted values: their quartiles are these three exactly


def _light_samples(samples: tuple[records.Sample, ...]) -> tuple[records.Sample, ...]:
    return tuple(dataclasses.replace(s, number_per_run=1, raw_times=_light_times(s)) for s in samples)


def _light_result(r: records.BenchmarkResult, seen: dict) -> records.BenchmarkResult:
    figures: tuple[float, ...] = ()
    if r.ok and any(s.raw_times for s in r.samples):
        times = np.concatenate([np.asarray(s.raw_times, dtype=np.float64) / s.number_per_run for s in r.samples])
        figures = tuple(float(a[0]) for a in blocks.summarize_times(times[None, :]))  # q1, median, q3, sig. figures
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(records.BenchmarkResult)}
    fields["samples"] = _light_samples(r.samples)
    # Memory figures without their start time; equal ones share one record.
    fields["memory"] = tuple(seen.setdefault(m, m) for m in (dataclasses.replace(m, started_at=0.0) for m in r.memory))
    return LightResult(**fields, torch_stats=figures)


def header(result: records.CommitResult) -> records.CommitResult:
    """A result without its benchmarks or reference rounds: the commit, its runs and fingerprint, its problems."""
    return dataclasses.replace(result, results=(), reference=())


def light(result: records.CommitResult) -> records.CommitResult:
    """The summary's copy of a result: what history readers need, without the block times."""
    seen: dict = {}
    return dataclasses.replace(
        result,
        results=tuple(_light_result(r, seen) for r in result.results),
        reference=_light_samples(result.reference),
    )


# -- entries: pickles of records, read back without running code ------------------


_ALLOWED = {**codec.Unpickler.allowed, (__name__, "LightResult"): LightResult}
# What a garbled entry raises on the way back: the caller rebuilds it from its file.
ERRORS = (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError)


class _Unpickler(codec.Unpickler):
    allowed = _ALLOWED


def _load(blob: bytes, kind: type):
    value = _Unpickler(io.BytesIO(blob)).load()
    if not isinstance(value, kind):
        raise pickle.UnpicklingError(f"not a {kind.__name__}")
    return value


def _entry(result: records.CommitResult) -> tuple[bytes, None, bytes, bytes]:
    """(light, error, commit_info, header) of an entry, pickled."""
    dump = functools.partial(pickle.dumps, protocol=5)
    return dump(light(result)), None, dump(result.commit), dump(header(result))


# -- the file ------------------------------------------------------------------


def connect(root: Path) -> sqlite3.Connection:
    try:
        return _open(root)
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError:  # not a database (a torn copy, say): it is only a summary, start afresh
        (root / FILE).unlink(missing_ok=True)
        return _open(root)


def _open(root: Path) -> sqlite3.Connection:
    if not root.is_dir():
        raise OSError(f"no results folder {root}")
    db = sqlite3.connect(root / FILE, timeout=30, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    if row is None or row[0] != _version():
        db.execute("BEGIN IMMEDIATE")
        # Another version's tables go, but the memo's (its rows name their code) and `blobs` (facts about bytes).
        keep = {"meta", "blobs", *memo.TABLES}
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if name not in keep and not name.startswith("sqlite_"):
                db.execute(f'DROP TABLE IF EXISTS "{name}"')
        db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (_version(),))
        db.execute("COMMIT")
    db.execute(
        "CREATE TABLE IF NOT EXISTS entries (machine TEXT, env TEXT, sha TEXT, size INTEGER, mtime_ns INTEGER,"
        " digest TEXT, light BLOB, error TEXT, commit_info BLOB, header BLOB, PRIMARY KEY (machine, env, sha))"
    )
    db.execute("CREATE TABLE IF NOT EXISTS blobs (blob TEXT PRIMARY KEY, digest TEXT NOT NULL)")
    for statement in memo.SCHEMA:
        db.execute(statement)
    with contextlib.suppress(sqlite3.OperationalError):  # busy or read-only: the table answers, only slower
        db.execute(_LISTED)
    return db


@functools.cache
def _version() -> str:
    """What an entry is made by: this module and what it imports (`memo.imports_digest`) but the memo's module,
    which only lends helpers (docs/scale.md), and the results format."""
    return f"{memo.imports_digest(__name__, leave_out=(memo.__name__,))}/{codec.FORMAT_VERSION}"


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


# -- what readers ask ------------------------------------------------------------


def record(store, path: Path, result: records.CommitResult, data: bytes) -> None:
    """After a save or a merge wrote `data` (`result`) to `path`: its entry, from the result in hand
    (best effort: a summary that cannot be written is rebuilt by the next read)."""
    if result.commit.sha == records.WORKTREE:
        return
    with contextlib.suppress(OSError, sqlite3.Error):
        st = path.stat()
        digest = _digest(data)
        db = store.db()
        db.execute(
            _INSERT_ENTRY, (result.machine, result.env, path.stem, st.st_size, st.st_mtime_ns, digest, *_entry(result))
        )
        db.execute(_INSERT_BLOB, (branch_files.blob_id(data), digest))


@dataclasses.dataclass(frozen=True)
class Listed:
    """A stored commit without its results: what `core.history.neighbours` looks up."""

    commit: records.CommitInfo


def history(store, machine: str, env: str) -> list[records.CommitResult]:
    """Every commit measured on machine/env as light results, oldest first (as `Store.history`);
    unreadable files are listed in `store.refused`."""
    return _listed(store, machine, env, "light", light)


def headers(store, machine: str, env: str) -> list[records.CommitResult] | None:
    """Every commit measured on machine/env without its benchmarks (`header`), oldest first; None when
    the summary is unusable."""
    return _listed(store, machine, env, "header")


def commits(store, machine: str, env: str) -> list[Listed]:
    """Every commit measured on machine/env, oldest first, without decoding any results."""
    return _listed(store, machine, env, "commit_info", lambda r: Listed(r.commit))


def knows(store, files: dict[str, str]) -> set[str]:
    """Those of `files` (machine/env/sha.pkl -> git blob id) whose entry was made from that very blob."""
    try:
        db = store.db()
        digest_of = _known(db, sorted(set(files.values())))
        entries = {
            f"{m}/{e}/{sha}.pkl": d for m, e, sha, d in db.execute("SELECT machine, env, sha, digest FROM entries")
        }
    except (OSError, sqlite3.Error):
        return set()
    return {rel for rel, blob in files.items() if blob in digest_of and entries.get(rel) == digest_of[blob]}


def digests(store, machine: str, env: str) -> dict[str, str]:
    """sha -> its file's content digest, as the last `history` checked it ({} without a summary)."""
    try:
        rows = store.db().execute("SELECT sha, digest FROM entries WHERE machine = ? AND env = ?", (machine, env))
        return {sha: digest for sha, digest in rows if digest}
    except (OSError, sqlite3.Error):
        return {}


def light_of(store, machine: str, env: str, shas: list[str]) -> dict[str, records.CommitResult]:
    """sha -> its light result, for those of `shas` whose entries read back (as the last read left them),
    without refreshing the rest."""
    out: dict[str, records.CommitResult] = {}
    sql = "SELECT sha, light FROM entries WHERE machine = ? AND env = ? AND sha IN ({marks})"
    with contextlib.suppress(OSError, sqlite3.Error):
        for sha, blob in memo.in_batches(store.db(), sql, shas, machine, env):
            with contextlib.suppress(*ERRORS):
                out[sha] = _load(blob, records.CommitResult)
    return out


def light_or_file(store, machine: str, env: str, shas: list[str]) -> dict[str, records.CommitResult]:
    """sha -> its light result (`light_of`), else its result file decoded, for those of `shas` with either."""
    out = light_of(store, machine, env, shas)
    for sha in dict.fromkeys(shas):
        if sha not in out and (loaded := store.load(machine, env, sha)) is not None:
            out[sha] = loaded
    return out


def light_now(store, machine: str, env: str, sha: str) -> records.CommitResult | None:
    """sha's light result when its entry was made from its file as the file is now (as `history` checks
    it); None when there is no such entry or the file is elsewhere: then the file is what to read."""
    path = store.path(machine, env, sha)
    try:
        st = path.stat()
        sql = "SELECT size, mtime_ns, light, error FROM entries WHERE machine = ? AND env = ? AND sha = ?"
        row = store.db().execute(sql, (machine, env, sha)).fetchone()
    except (OSError, sqlite3.Error):
        return None
    if row is None or row[2] is None or row[3] is not None or not _made_from(row[0], row[1], st):
        return None
    with contextlib.suppress(*ERRORS):
        return _load(row[2], records.CommitResult)
    return None


def _made_from(size: int, mtime_ns: int, st: os.stat_result) -> bool:
    """An entry of this size and mtime was made from the file `st` describes (every reader's one test)."""
    return size == st.st_size and mtime_ns == st.st_mtime_ns


def _known(db: sqlite3.Connection, blobs: list[str]) -> dict[str, str]:
    """blob id -> content digest, of those of `blobs` the summary has seen."""
    return dict(memo.in_batches(db, "SELECT blob, digest FROM blobs WHERE blob IN ({marks})", blobs))


def in_order(found: list) -> list:
    """These results (or `Listed` commits) oldest first, each commit once, the WORKTREE left out."""
    by_sha = {r.commit.sha: r for r in found if r.commit.sha != records.WORKTREE}
    return [by_sha[c.sha] for c in history_order([r.commit for r in by_sha.values()])]


# -- the refresh ---------------------------------------------------------------------


def _listed(store, machine: str, env: str, column: str, fallback: Callable | None = None) -> Any:
    """The `column` of every entry of machine/env, refreshed from the files, oldest first (`in_order`; a
    commit_info as a `Listed`); where the summary is unusable, `fallback` of each of `store.history`, else None."""
    try:
        db = store.db()
    except (OSError, sqlite3.Error):
        db = None
    found = None
    if db is not None:
        was_enabled = gc.isenabled()
        gc.disable()  # many small records, no cycles among them
        try:
            with contextlib.suppress(sqlite3.Error):
                found = _refresh(store, db, machine, env, column)
        finally:
            gc.freeze()  # later collections skip them
            if was_enabled:
                gc.enable()
    if found is None:
        return None if fallback is None else [fallback(r) for r in store.history(machine, env)]
    return in_order([Listed(c) for c in found] if column == "commit_info" else found)


# A column a reader asks for: its place in `_entry`, its type, and how a result gives it.
_COLUMNS = {
    "light": (0, records.CommitResult, light),
    "commit_info": (2, records.CommitInfo, lambda r: r.commit),
    "header": (3, records.CommitResult, header),
}


def _refresh(store, db: sqlite3.Connection, machine: str, env: str, column: str) -> list:
    at, kind, made = _COLUMNS[column]
    folder = store.root / machine / env
    files: dict[str, os.stat_result] = {}
    if folder.is_dir():
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".pkl") and entry.name != f"{records.WORKTREE}.pkl" and entry.is_file():
                    files[entry.name[: -len(".pkl")]] = entry.stat()
    on_branch = branch_files.absent(store.root, machine, env)  # sha -> blob id, of files not here
    sql = f"SELECT sha, size, mtime_ns, digest, {column}, error FROM entries WHERE machine = ? AND env = ?"
    rows = {row[0]: row[1:] for row in db.execute(sql, (machine, env))}  # sha -> (size, mtime, digest, blob, error)
    known = _known(db, list(on_branch.values())) if on_branch else {}
    out: list = []
    writes, touches, blobs = [], [], []
    for sha in sorted({*files, *on_branch}):
        st = files.get(sha)
        row = rows.get(sha)
        if st is not None and row is not None and _made_from(row[0], row[1], st):
            blob, error = row[3], row[4]
        elif st is None and row is not None and row[2] == known.get(on_branch[sha]):
            blob, error = row[3], row[4]  # the branch's file, as its entry was made from
        else:
            rel = f"{machine}/{env}/{sha}.pkl"
            try:
                data = store.raw(rel) if st is not None else branch_files.fetch(store.root, rel, on_branch[sha])
            except RegressError as exc:
                store.refused.append(str(exc))
                continue
            digest = _digest(data)
            blobs.append((branch_files.blob_id(data), digest))
            size, mtime = (st.st_size, st.st_mtime_ns) if st is not None else (-1, -1)
            if row is not None and row[2] == digest:
                touches.append((size, mtime, machine, env, sha))
                blob, error = row[3], row[4]
            else:
                fields: tuple[bytes | None, str | None, bytes | None, bytes | None]
                try:
                    fields = _entry(codec.decode(data, str(store.root / rel)))
                except RegressError as exc:
                    fields = (None, str(exc), None, None)
                writes.append((machine, env, sha, size, mtime, digest, *fields))
                blob, error = fields[at], fields[1]
                if len(writes) >= FLUSH:  # one batch's entries in memory at a time
                    _write(db, writes, [], [], blobs)
                    writes, blobs = [], []
        if error is not None:
            store.refused.append(error)
            continue
        try:
            out.append(_load(blob, kind))
        except ERRORS:
            # An entry that does not read back is rebuilt from its file next time; now the file is read.
            writes.append((machine, env, sha, -1, -1, "", None, None, None, None))
            result = store.load_or_refuse(machine, env, sha)
            if result is not None:
                out.append(made(result))
    gone = [(machine, env, sha) for sha in rows if sha not in files and sha not in on_branch]
    _write(db, writes, touches, gone, blobs)
    return out


def _write(db: sqlite3.Connection, writes: list, touches: list, gone: list, blobs: Sequence = ()) -> None:
    if writes or touches or gone or blobs:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(_INSERT_BLOB, blobs)
        db.executemany(_INSERT_ENTRY, writes)
        db.executemany("UPDATE entries SET size = ?, mtime_ns = ? WHERE machine = ? AND env = ? AND sha = ?", touches)
        db.executemany("DELETE FROM entries WHERE machine = ? AND env = ? AND sha = ?", gone)
        db.execute("COMMIT")


# -- each file's figures, kept in the memo -------------------------------------------


@dataclasses.dataclass(eq=False)
class SeriesFigures:
    """A series' commits in history order (`headers`), each file's figures (`blobs`), and
    `load(position)`: that commit's light result. `memo`: where the figures are kept; `by_sha`: sha ->
    its file's content digest, as the summary has it."""

    store: Any
    memo: Memo
    machine: str
    env: str
    headers: list[records.CommitResult]
    by_sha: dict[str, str]
    compute: Callable[[records.CommitResult], Any]

    def __post_init__(self) -> None:
        self.shas = [h.commit.sha for h in self.headers]
        self.digests = [self.by_sha.get(sha, "") for sha in self.shas]  # each file's content digest ("": none)
        self._loaded: dict[int, records.CommitResult] = {}

    def blobs(self, a: int, b: int) -> list[Any]:
        """The figures of positions a to b (excluded), kept or computed (and kept); ValueError where a
        file's light result is gone from the summary."""
        found = self.memo.get_many(FIGURES, {p: self.digests[p] or None for p in range(a, b)}, self._made)
        return [found[p] for p in range(a, b)]

    def _made(self, positions: list[int]) -> dict[int, Any]:
        out = {}
        for k in range(0, len(positions), CHUNK):  # a chunk's light results in memory at a time
            part = positions[k : k + CHUNK]
            light = light_of(self.store, self.machine, self.env, [self.shas[p] for p in part])
            for p in part:
                result = light.get(self.shas[p])
                if result is None:
                    raise ValueError(f"the summary lost {self.shas[p][:10]}'s light result")
                out[p] = self.compute(result)
        return out

    def load(self, position: int) -> records.CommitResult:
        if position not in self._loaded:
            sha = self.shas[position]
            found = light_of(self.store, self.machine, self.env, [sha]).get(sha)
            if found is None:  # its entry went missing since: the file, else the commit without its benchmarks
                result = self.store.load(self.machine, self.env, sha)
                found = light(result) if result is not None else self.headers[position]
            self._loaded[position] = found
        return self._loaded[position]


def per_file(
    store, kept: Memo, machine: str, env: str, compute: Callable[[records.CommitResult], Any]
) -> SeriesFigures | None:
    """machine/env's files with `compute(light result)` of each, kept in `kept`; None where the summary
    is unusable."""
    found = headers(store, machine, env)
    if found is None:
        return None
    return SeriesFigures(store, kept, machine, env, found, digests(store, machine, env), compute)
