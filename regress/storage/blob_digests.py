"""git's blob id -> content digest of every result file whose bytes the summary saw, in its SQLite file.

A file left on the results branch (`branch_files`) is known only by its blob
id; the summary's entries are keyed by content digest. This table joins the
two, so an entry made from a blob is trusted for that blob without reading
it. The pair is a fact about the bytes, whatever the summary's version.
"""

from __future__ import annotations

import sqlite3

from regress.storage.branch_files import blob_id

CREATE = "CREATE TABLE IF NOT EXISTS blobs (blob TEXT PRIMARY KEY, digest TEXT NOT NULL)"
INSERT = "INSERT OR REPLACE INTO blobs VALUES (?, ?)"


def row(data: bytes, digest: str) -> tuple[str, str]:
    return blob_id(data), digest


def known(db: sqlite3.Connection, blobs: list[str]) -> dict[str, str]:
    """blob id -> content digest, of those of `blobs` the summary has seen."""
    out: dict[str, str] = {}
    for k in range(0, len(blobs), 500):
        part = blobs[k : k + 500]
        marks = ",".join("?" * len(part))
        out.update(db.execute(f"SELECT blob, digest FROM blobs WHERE blob IN ({marks})", part).fetchall())
    return out


def knows(db: sqlite3.Connection, files: dict[str, str]) -> set[str]:
    """Those of `files` (machine/env/sha.pkl -> blob id) whose entry was made from that very blob."""
    digest_of = known(db, sorted(set(files.values())))
    entries = {f"{m}/{e}/{sha}.pkl": d for m, e, sha, d in db.execute("SELECT machine, env, sha, digest FROM entries")}
    return {rel for rel, blob in files.items() if blob in digest_of and entries.get(rel) == digest_of[blob]}
