"""A compact summary of the results folder, so commands that read the history need not decode every file.

`<results>/.summary.sqlite` holds, per result file, a *light* copy of its
CommitResult (`storage/light.py`: each round reduced to the one figure the
differ and the change points read, torch's pooled-block figures kept aside),
its header (the result without its benchmarks) and its commit. Analysis code
reads a light history as it reads a full one. The same file holds the memo
(`storage/memo.py`: what is derived from the results), which names it.

Why SQLite: it is in the standard library, one file, updated one entry at a
time in a transaction (a save rewrites one row, not the whole summary), safe
with several readers and a writer, and a torn write rolls back. A columnar
file would need pyarrow and a rewrite per save.

The result files stay the record. Every read checks each file's entry
against the file: its size and mtime, else its content digest, and the
summary's own version (the source of this module and of every regress module
it imports, and the results format's: a change to the code an entry is made
by rebuilds every entry, while the rest of regress may change and leave the
summary be, as rebuilding it reads every result file); an entry
that disagrees, or a file without one, is rebuilt from the file, an entry
without a file is dropped, and a summary that cannot be opened or written
falls back to decoding the files. Saves and merges (`Store.save`,
`Store.absorb`) update the entry of the file they wrote. A file that stays
on the results branch (`branch_files`) has no size nor mtime here: its entry
stands when its digest is the one recorded for the branch's blob id (the
`blobs` table, filled whenever a file's bytes pass through), else the file
is read through git.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from regress.core import records
from regress.core.errors import RegressError
from regress.core.history import history_order
from regress.storage import blob_digests, branch_files, codec, entry_pickle, header_buckets, memo
from regress.storage.light import header, light

FILE = memo.FILE
FLUSH = 200  # entries written in one transaction while rebuilding


# -- the file ------------------------------------------------------------------


def connect(root: Path) -> sqlite3.Connection:
    try:
        return _listed(_open(root))
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError:  # not a database (a torn copy, say): it is only a summary, start afresh
        (root / FILE).unlink(missing_ok=True)
        return _listed(_open(root))


# An entry's error, commit and header sit after its light copy (100 KB at 200 benchmarks, on overflow pages
# that SQLite walks to reach the columns after it): this covering index holds what `commits` and `headers`
# read (1.4 KB an entry), so at 1,000 files each reads 1.4 MB instead of the whole summary (27 ms -> 3 ms).
_LISTED = (
    "CREATE INDEX IF NOT EXISTS entries_listed"
    " ON entries (machine, env, sha, size, mtime_ns, digest, error, commit_info, header)"
)


def _listed(db: sqlite3.Connection) -> sqlite3.Connection:
    with contextlib.suppress(sqlite3.OperationalError):  # busy or read-only: the table answers, only slower
        db.execute(_LISTED)
    return db


def _open(root: Path) -> sqlite3.Connection:
    if not root.is_dir():
        raise OSError(f"no results folder {root}")
    db = sqlite3.connect(root / FILE, timeout=30, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    if row is None or row[0] != _version():
        db.execute("BEGIN IMMEDIATE")
        # Every table but these and the memo's (which keys its rows by the code): another regress's.
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
    db.execute(blob_digests.CREATE)
    return db


@functools.cache
def _version() -> str:
    """What an entry is made by: this module and what it imports (`memo.imports_digest`), and the results format."""
    return f"{memo.imports_digest(__name__)}/{codec.FORMAT_VERSION}"


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def _entry(result: records.CommitResult) -> tuple[bytes, None, bytes, bytes]:
    """(light, error, commit_info, header) of an entry, pickled."""
    dump = entry_pickle.dump
    return dump(light(result)), None, dump(result.commit), dump(header(result))


def record(root: Path, path: Path, result: records.CommitResult, data: bytes) -> None:
    """After a save or a merge wrote `data` (`result`) to `path`: its entry, from the result in hand.

    Best effort: a summary that cannot be written is rebuilt by the next read.
    """
    if result.commit.sha == records.WORKTREE:
        return
    try:
        st = path.stat()
        digest = _digest(data)
        with contextlib.closing(connect(root)) as db:
            db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (result.machine, result.env, path.stem, st.st_size, st.st_mtime_ns, digest, *_entry(result)),
            )
            db.execute(blob_digests.INSERT, blob_digests.row(data, digest))
    except (OSError, sqlite3.Error):
        pass


@dataclasses.dataclass(frozen=True)
class Listed:
    """A stored commit without its results: what `core.history.neighbours` looks up."""

    commit: records.CommitInfo


def history(store, machine: str, env: str) -> list[records.CommitResult]:
    """Every commit measured on machine/env as light results, oldest first (as `Store.history`).

    Files the summary does not know as they are now are decoded (and their
    entries written); unreadable ones are listed in `store.refused`.
    """
    found = _read(store, machine, env, "light")
    if found is None:
        return [light(r) for r in store.history(machine, env)]
    return _in_order(found)


def headers(store, machine: str, env: str) -> list[records.CommitResult] | None:
    """Every commit measured on machine/env without its benchmarks (`header`), oldest first; None when
    the summary is unusable."""
    found = _read(store, machine, env, "header")
    return None if found is None else _in_order(found)


def made_from(size: int, mtime_ns: int, st: os.stat_result) -> bool:
    """An entry of this size and mtime was made from the file `st` describes (every reader's one test)."""
    return size == st.st_size and mtime_ns == st.st_mtime_ns


def commits(store, machine: str, env: str) -> list[Listed]:
    """Every commit measured on machine/env, oldest first, without decoding any results."""
    found = _read(store, machine, env, "commit_info")
    if found is None:
        return [Listed(r.commit) for r in store.history(machine, env)]
    return _in_order([Listed(c) for c in found])


def knows(store, files: dict[str, str]) -> set[str]:
    """Those of `files` (machine/env/sha.pkl -> git blob id) whose entry was made from that very blob."""
    try:
        with contextlib.closing(connect(store.root)) as db:
            return blob_digests.knows(db, files)
    except (OSError, sqlite3.Error):
        return set()


def digests(store, machine: str, env: str) -> dict[str, str]:
    """sha -> its file's content digest, as the last `history` checked it ({} without a summary)."""
    try:
        with contextlib.closing(connect(store.root)) as db:
            rows = db.execute("SELECT sha, digest FROM entries WHERE machine = ? AND env = ?", (machine, env))
            return {sha: digest for sha, digest in rows if digest}
    except (OSError, sqlite3.Error):
        return {}


def _in_order(found: list) -> list:
    by_sha = {r.commit.sha: r for r in found if r.commit.sha != records.WORKTREE}
    return [by_sha[c.sha] for c in history_order([r.commit for r in by_sha.values()])]


def _read(store, machine: str, env: str, column: str) -> list | None:
    """The `column` of every entry of machine/env, refreshed from the files; None if the summary is unusable."""
    try:
        db = connect(store.root)
    except (OSError, sqlite3.Error):
        return None
    was_enabled = gc.isenabled()
    gc.disable()  # a hundred thousand small records: the cyclic collector would triple the load time
    try:
        return _refresh(store, db, machine, env, column)
    except sqlite3.Error:
        return None
    finally:
        db.close()
        # Records hold no cycles: leave them out of every later collection, which would otherwise
        # walk millions of them again and again (regressions spent 11 of its 25 s in the collector).
        gc.freeze()
        if was_enabled:
            gc.enable()


# A column a reader asks for: its place in `_entry`, its type, and how a result gives it.
_COLUMNS = {
    "light": (0, records.CommitResult, light),
    "commit_info": (2, records.CommitInfo, lambda r: r.commit),
    "header": (3, records.CommitResult, header),
}


def _refresh(store, db: sqlite3.Connection, machine: str, env: str, column: str) -> list:
    at, kind, made = _COLUMNS[column]
    bucketed = column == "header"  # headers: the unchanged ones read a bucket at a time (header_buckets.py)
    folder = store.root / machine / env
    files: dict[str, os.stat_result] = {}
    if folder.is_dir():
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".pkl") and entry.name != f"{records.WORKTREE}.pkl" and entry.is_file():
                    files[entry.name[: -len(".pkl")]] = entry.stat()
    on_branch = branch_files.absent(store.root, machine, env)  # sha -> blob id, of files not here
    rows = {
        sha: (size, mtime, digest, blob, error)
        for sha, size, mtime, digest, blob, error in db.execute(
            f"SELECT sha, size, mtime_ns, digest, {'NULL' if bucketed else column}, error FROM entries"
            " WHERE machine = ? AND env = ?",
            (machine, env),
        )
    }
    known = blob_digests.known(db, list(on_branch.values())) if on_branch else {}
    out: list = []
    writes, touches, blobs = [], [], []
    current: dict[str, str] = {}  # sha -> content digest of an unchanged entry whose header is read so
    for sha in sorted({*files, *on_branch}):
        st = files.get(sha)
        row = rows.get(sha)
        if st is not None and row is not None and made_from(row[0], row[1], st):
            blob, error = row[3], row[4]
        elif st is None and row is not None and row[2] == known.get(on_branch[sha]):
            blob, error = row[3], row[4]  # the branch's file, as its entry was made from
        else:
            path = folder / f"{sha}.pkl"
            try:
                data = (
                    path.read_bytes()
                    if st is not None
                    else branch_files.fetch(store.root, f"{machine}/{env}/{sha}.pkl", on_branch[sha])
                )
            except OSError as exc:
                store.refused.append(f"cannot read result file {path}: {exc.strerror}")
                continue
            except RegressError as exc:
                store.refused.append(str(exc))
                continue
            digest = _digest(data)
            blobs.append(blob_digests.row(data, digest))
            size, mtime = (st.st_size, st.st_mtime_ns) if st is not None else (-1, -1)
            if row is not None and row[2] == digest:
                touches.append((size, mtime, machine, env, sha))
                blob, error = row[3], row[4]
            else:
                fields: tuple[bytes | None, str | None, bytes | None, bytes | None]
                try:
                    fields = _entry(codec.decode(data, str(path)))
                except RegressError as exc:
                    fields = (None, str(exc), None, None)
                writes.append((machine, env, sha, size, mtime, digest, *fields))
                blob, error = fields[at], fields[1]
                if len(writes) >= FLUSH:  # a rebuild of 10,000 files: a batch's entries in memory at a time
                    _write(db, writes, [], [], blobs)
                    writes, blobs = [], []
        if error is not None:
            store.refused.append(error)
            continue
        if blob is None and bucketed and row is not None and row[2]:
            current[sha] = row[2]
            continue
        try:
            out.append(entry_pickle.load(blob, kind))
        except entry_pickle.ERRORS:
            # An entry that does not read back is rebuilt from its file next time; now the file is read.
            writes.append((machine, env, sha, -1, -1, "", None, None, None, None))
            result = store.load_or_refuse(machine, env, sha)
            if result is not None:
                out.append(made(result))
    gone = [(machine, env, sha) for sha in rows if sha not in files and sha not in on_branch]
    _write(db, writes, touches, gone, blobs)
    if current:
        stale = lambda sha: _write(db, [(machine, env, sha, -1, -1, "", None, None, None, None)], [], [])
        out.extend(header_buckets.headers(store, db, machine, env, current, _version(), stale))
    return out


def _write(db: sqlite3.Connection, writes: list, touches: list, gone: list, blobs: Sequence = ()) -> None:
    if writes or touches or gone or blobs:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(blob_digests.INSERT, blobs)
        db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", writes)
        db.executemany("UPDATE entries SET size = ?, mtime_ns = ? WHERE machine = ? AND env = ? AND sha = ?", touches)
        db.executemany("DELETE FROM entries WHERE machine = ? AND env = ? AND sha = ?", gone)
        db.execute("COMMIT")
