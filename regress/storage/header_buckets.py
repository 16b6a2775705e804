"""The summary's headers read a bucket of commits at a time: one blob for dozens of headers, not one each.

Every command that reads a history reads each commit's header (its result
without the benchmarks: commit, runs, fingerprint, problems). At 10,000
commits that was 10,000 blobs selected and unpickled at every build, one
Unpickler each, their fingerprints and settings each a new object: a second.
Here the commits of a series are put in BUCKETS buckets by their sha, and a
bucket's headers are kept as one pickle (equal fingerprints and settings
pickled once) under a digest of its commits' shas and content digests and
the summary's version; a new commit changes one bucket, made afresh from
its entries. The pickle is read back by the summary's allow-listed
unpickler, like every entry. Only a cache: a bucket that does not read back
is made again from the entries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import pickle
import sqlite3

from regress.core.records import CommitResult
from regress.storage import entry_pickle
from regress.storage.light import header

BUCKETS = 64
CREATE = (
    "CREATE TABLE IF NOT EXISTS header_buckets (machine TEXT, env TEXT, bucket INTEGER, key TEXT, blob BLOB,"
    " PRIMARY KEY (machine, env, bucket))"
)


def _bucket(sha: str) -> int:
    return int(sha[:6], 16) % BUCKETS if sha[:6].isalnum() else 0


def _key(version: str, items: list[tuple[str, str]]) -> str:
    h = hashlib.sha256(version.encode())
    for sha, digest in sorted(items):
        h.update(f" {sha}:{digest}".encode())
    return h.hexdigest()


def headers(
    store, db: sqlite3.Connection, machine: str, env: str, digests: dict[str, str], version: str, stale
) -> list:
    """The headers of these unchanged entries (`read`'s), entry by entry where the buckets fail; an entry
    that does not read back is read from its file, and `stale(sha)` has it rebuilt next time."""
    try:
        return list(read(db, machine, env, digests, version).values())
    except (sqlite3.Error, *entry_pickle.ERRORS):
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
    out = []
    for sha in digests:
        (_, blob), *_ = listed(db, machine, env, [sha]) or [(sha, None)]
        try:
            out.append(entry_pickle.load(blob or b"", CommitResult))  # no entry: b"" fails to load, as a bad one
        except entry_pickle.ERRORS:
            stale(sha)
            result = store.load_or_refuse(machine, env, sha)
            if result is not None:
                out.append(header(result))
    return out


def read(db: sqlite3.Connection, machine: str, env: str, digests: dict[str, str], version: str) -> dict:
    """sha -> header of each of `digests` (sha -> its entry's content digest, every one current), kept buckets
    where their commits are the same, the rest from the entries (and kept)."""
    db.execute(CREATE)
    groups: dict[int, list[tuple[str, str]]] = {}
    for sha, digest in digests.items():
        groups.setdefault(_bucket(sha), []).append((sha, digest))
    kept = {
        b: (key, blob)
        for b, key, blob in db.execute(
            "SELECT bucket, key, blob FROM header_buckets WHERE machine = ? AND env = ?", (machine, env)
        )
    }
    out: dict[str, CommitResult] = {}
    made = []
    for b, items in groups.items():
        key = _key(version, items)
        found = _decoded(kept[b][1], {sha for sha, _ in items}) if b in kept and kept[b][0] == key else None
        if found is None:
            found = _from_entries(db, machine, env, [sha for sha, _ in items])
            if found is None:
                raise sqlite3.DatabaseError("an entry went missing")  # the caller reads entry by entry
            made.append((machine, env, b, key, _encoded(found)))
        out.update(found)
    gone = [(machine, env, b) for b in kept if b not in groups]
    if made or gone:
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT OR REPLACE INTO header_buckets VALUES (?, ?, ?, ?, ?)", made)
        db.executemany("DELETE FROM header_buckets WHERE machine = ? AND env = ? AND bucket = ?", gone)
        db.execute("COMMIT")
    return out


def _from_entries(db: sqlite3.Connection, machine: str, env: str, shas: list[str]) -> dict | None:
    out = {}
    for k in range(0, len(shas), 500):
        for sha, blob in listed(db, machine, env, shas[k : k + 500]):
            if blob is None:
                return None
            out[sha] = entry_pickle.load(blob, CommitResult)
    return out if len(out) == len(shas) else None


def listed(db: sqlite3.Connection, machine: str, env: str, shas: list[str]) -> list[tuple[str, bytes | None]]:
    """(sha, header blob) of these entries (at most 500), read from the covering index `summary` keeps
    (the row's own header sits after its 100 KB light copy, on overflow pages SQLite would walk)."""
    marks = ", ".join("?" * len(shas))
    where = f"WHERE machine = ? AND env = ? AND sha IN ({marks})"
    try:
        return db.execute(
            f"SELECT sha, header FROM entries INDEXED BY entries_listed {where}", (machine, env, *shas)
        ).fetchall()
    except sqlite3.OperationalError:  # no such index (a summary that could not be given it)
        return db.execute(f"SELECT sha, header FROM entries {where}", (machine, env, *shas)).fetchall()


def _encoded(headers: dict[str, CommitResult]) -> bytes:
    """One pickle of the bucket, each fingerprint and settings that are equal made one object."""
    same: dict = {}

    def one(value):
        return same.setdefault(value, value) if value is not None else None

    def slim(h: CommitResult) -> CommitResult:
        runs = tuple(dataclasses.replace(r, fingerprint=one(r.fingerprint)) for r in h.runs)
        return dataclasses.replace(h, fingerprint=one(h.fingerprint), settings=one(h.settings), runs=runs)

    return pickle.dumps([(sha, slim(h)) for sha, h in headers.items()], protocol=5)


def _decoded(blob: bytes, shas: set[str]) -> dict | None:
    """The bucket's headers, None where it does not read back as headers of just these commits."""
    try:
        found = entry_pickle.Unpickler(io.BytesIO(blob)).load()
        out = {sha: h for sha, h in found if isinstance(sha, str) and isinstance(h, CommitResult)}
    except (*entry_pickle.ERRORS, pickle.PickleError):
        return None
    return out if set(out) == shas and len(found) == len(shas) else None
