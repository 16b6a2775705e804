"""What an analysis derives from each result file, kept beside that file's summary entry.

A thousand commits' light results are still a million round records to
unpickle and walk; the history-wide analyses need a few numbers of each
(`analysis/figures.py`). Those are computed once per file and kept here,
keyed by the file's content digest and by `kind` (the caller's name for what
it computes, with its version and code digest): a file that changed, or a new
rule, is a miss, and a miss is computed from that one file's light result.
So after one new commit a build reads every file's few numbers and computes
one file's. Only a cache, in the summary's SQLite file: an unusable one
gives None and the caller reads the light history instead.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable

from regress.core.records import CommitResult
from regress.storage import light_entries, summary
from regress.storage.computed import Computed, analysis_code
from regress.storage.light import light

# Files whose light results are read at once to compute what they lack.
CHUNK = 100
# Kinds kept (the most recently made): two checkouts of regress reading one results folder,
# an A/B of regress itself, keep their own figures instead of making them again in turn.
KINDS = 3


class Derived:
    """A series' commits in history order (their headers: no benchmarks) and each one's derived blob,
    read from the summary when asked for (`blobs`), so a reader that keeps most of them joined in
    blocks (`analysis/table_blocks.py`, through `blocks`) reads only the rest; `load(position)`: that
    commit's light result (rounds and all), for the few rules that read them. `close` when done."""

    def __init__(self, store, machine: str, env: str, kind: str, headers: list[CommitResult], digests, made) -> None:
        self.store, self.machine, self.env, self.kind = store, machine, env, kind
        self.headers = headers
        self.by_sha: dict[str, str] = digests  # sha -> its file's content digest (the build's other caches key by it)
        self.shas = [h.commit.sha for h in headers]
        self.digests = [digests.get(sha, "") for sha in self.shas]  # each file's content digest
        self.made = made  # sha -> blob made by this read
        self.blocks = Computed(store.root, f"{kind} blocks {machine}/{env}")
        self._loaded: dict[int, CommitResult] = {}

    def blobs(self, a: int, b: int) -> list[bytes]:
        """The blobs of positions a to b (excluded); ValueError where the summary no longer has one."""
        shas = self.shas[a:b]
        found = {sha: self.made[sha] for sha in shas if sha in self.made}
        wanted = [sha for sha in shas if sha not in found]
        try:
            with contextlib.closing(summary.connect(self.store.root)) as db:
                for k in range(0, len(wanted), 500):  # SQLite's limit on bound parameters
                    part = wanted[k : k + 500]
                    found.update(
                        db.execute(
                            f"SELECT sha, blob FROM derived WHERE machine = ? AND env = ? AND kind = ?"
                            f" AND sha IN ({', '.join('?' * len(part))})",
                            (self.machine, self.env, self.kind, *part),
                        )
                    )
        except sqlite3.Error as exc:
            raise ValueError(f"derived figures unreadable: {exc}") from None
        if len(found) != len(set(shas)):
            raise ValueError("a file's derived figures went missing")
        return [found[sha] for sha in shas]

    def load(self, position: int) -> CommitResult:
        if position not in self._loaded:
            sha = self.shas[position]
            found = light_entries.light_of(self.store, self.machine, self.env, [sha]).get(sha)
            if found is None:  # its entry went missing since: the file, else the commit without its benchmarks
                result = self.store.load(self.machine, self.env, sha)
                found = light(result) if result is not None else self.headers[position]
            self._loaded[position] = found
        return self._loaded[position]

    def close(self) -> None:
        self.blocks.close()


def per_file(store, machine: str, env: str, kind: str, compute: Callable[[CommitResult], bytes]) -> Derived | None:
    """`compute(light result)` of every file of machine/env, kept ones where the file is unchanged."""
    kind = f"{kind} {analysis_code()}"  # a changed rule is a new kind
    headers = summary.headers(store, machine, env)
    if headers is None:
        return None
    shas = [h.commit.sha for h in headers]
    digests = summary.digests(store, machine, env)
    try:
        with contextlib.closing(summary.connect(store.root)) as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS derived (machine TEXT, env TEXT, sha TEXT, kind TEXT, digest TEXT,"
                " blob BLOB, PRIMARY KEY (machine, env, sha, kind))"
            )
            db.execute("CREATE TABLE IF NOT EXISTS derived_kinds (kind TEXT PRIMARY KEY, used REAL)")
            kept = dict(
                db.execute(
                    "SELECT sha, digest FROM derived WHERE machine = ? AND env = ? AND kind = ?", (machine, env, kind)
                )
            )
            missing = [sha for sha in shas if sha not in kept or kept[sha] != digests.get(sha)]
            made: dict[str, bytes] = {}
            for k in range(0, len(missing), CHUNK):  # a chunk's light results in memory at a time
                part = light_entries.light_of(store, machine, env, missing[k : k + CHUNK])
                made.update((sha, compute(result)) for sha, result in part.items())
            if len(made) != len(missing):
                return None  # an entry went missing under us: read the light history instead
            if made:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    "INSERT OR REPLACE INTO derived VALUES (?, ?, ?, ?, ?, ?)",
                    [(machine, env, sha, kind, digests.get(sha, ""), blob) for sha, blob in made.items()],
                )
                _prune(db, kind)
                db.execute("COMMIT")
    except sqlite3.Error:
        return None
    return Derived(store, machine, env, kind, headers, digests, made)


def _prune(db: sqlite3.Connection, kind: str) -> None:
    """`kind` made now; the figures of kinds older than the KINDS newest are dropped."""
    db.execute("INSERT OR REPLACE INTO derived_kinds VALUES (?, ?)", (kind, time.time()))
    old = [k for (k,) in db.execute("SELECT kind FROM derived_kinds ORDER BY used DESC LIMIT -1 OFFSET ?", (KINDS,))]
    db.executemany("DELETE FROM derived WHERE kind = ?", [(k,) for k in old])
    db.executemany("DELETE FROM derived_kinds WHERE kind = ?", [(k,) for k in old])
