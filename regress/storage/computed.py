"""Figures computed from the results, kept beside the summary under a digest of everything they came from.

A site build judges the newest commits of every series (`report/verdict_cache.py`);
after one new commit all but one of those verdicts are the same as last
time. This table keeps each under a key that is a digest of every input (the
result files' content digests, the settings, the analysis code), so an
entry is found again only when nothing it depends on changed, and what
reads it rechecks whatever it could not put in the key. It lives in the
summary's SQLite file (`summary.FILE`), so CI's cache of the summary keeps
it too. It is only a cache: any entry may be missing; an unusable file
means every figure is computed afresh.

Each build marks what it used (in `computed_used`); entries no build used for KEEP_BUILDS builds are dropped.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

from regress import __version__
from regress.core.records import BenchmarkId
from regress.storage import spill, summary

KEEP_BUILDS = 3
# Which build last used each entry, apart from the entries: marking a kept 5 MB block as used in its
# own row rewrote the whole row (SQLite writes a row whole), 500 MB a build at 10,000 commits.
_MARKS = "CREATE TABLE IF NOT EXISTS computed_used (kind TEXT, key TEXT, build INTEGER, PRIMARY KEY (kind, key))"
T = TypeVar("T")


@functools.cache
def analysis_code() -> str:
    """A digest of the code figures are computed by (regress's version, its analysis and core source):
    a changed rule is a new key, whatever the version says."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(__version__.encode())
    for path in sorted([*(root / "analysis").glob("*.py"), *(root / "core").glob("*.py")]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


class Computed:
    """get/put of bytes by key, for one build; `close` writes what was put and drops what is unused."""

    def __init__(self, root: Path, kind: str):
        self.kind, self.root = kind, root
        self._puts: list[tuple[str, str, bytes]] = []
        self._used: list[tuple[str, str]] = []
        self._db: sqlite3.Connection | None = None
        self._build = 0
        try:
            if root.is_dir():
                db = sqlite3.connect(root / summary.FILE, timeout=30, isolation_level=None)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS computed (kind TEXT, key TEXT, value BLOB, build INTEGER,"
                    " PRIMARY KEY (kind, key))"
                )
                db.execute(_MARKS)
                row = db.execute("SELECT MAX(build) FROM computed_used WHERE kind = ?", (kind,)).fetchone()
                self._build = (row[0] or 0) + 1
                self._db = db
        except sqlite3.Error:
            self._db = None

    def get(self, key: str) -> bytes | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT value, (SELECT build FROM computed_used WHERE kind = ? AND key = ?) FROM computed"
                " WHERE kind = ? AND key = ?",
                (self.kind, key, self.kind, key),
            ).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        value = spill.loaded(self.root, row[0])  # a large one from its own file
        if value is None:
            return None
        if row[1] is None or row[1] < self._build - 1:
            self._used.append((self.kind, key))  # marked anew; one the last build marked stays as it is
        return value

    def put(self, key: str, value: bytes) -> None:
        self._puts.append((self.kind, key, value))

    def close(self) -> None:
        """What was put written, and what was used marked, in one transaction; nothing at all (no
        build counted, nothing dropped) where nothing was put and the last build marked all that was used."""
        if self._db is None:
            return
        if not self._puts and not self._used:
            self._db.close()
            self._db = None
            return
        gone: set[str] = set()
        try:
            # A large value to a file of its own first (storage/spill.py); the row names it.
            rows = [
                (kind, key, spill.stored(self.root, kind, key, value), self._build) for kind, key, value in self._puts
            ]
            self._db.execute("BEGIN IMMEDIATE")
            files = self._files()
            # The row's own build column is the build that made it, as older versions prune by it.
            self._db.executemany("INSERT OR REPLACE INTO computed VALUES (?, ?, ?, ?)", rows)
            self._db.executemany(
                "INSERT OR REPLACE INTO computed_used VALUES (?, ?, ?)",
                [(kind, key, self._build) for kind, key in [*self._used, *((k, key) for k, key, _ in self._puts)]],
            )
            old = self._build - KEEP_BUILDS
            self._db.execute(
                "DELETE FROM computed WHERE kind = ? AND key NOT IN"
                " (SELECT key FROM computed_used WHERE kind = ? AND build > ?)",
                (self.kind, self.kind, old),
            )
            self._db.execute("DELETE FROM computed_used WHERE kind = ? AND build <= ?", (self.kind, old))
            gone = files - self._files()  # the files of rows replaced or dropped
            self._db.execute("COMMIT")
        except sqlite3.Error:
            gone = spill.named(stored for _, _, stored, _ in rows)  # written for rows that were not
        finally:
            self._db.close()
            self._db = None
        if gone:
            spill.remove(self.root, gone)
            self._sweep()

    def _sweep(self) -> None:
        """Files of no row at all (a build killed between writing a file and its row) removed."""
        with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(self.root / summary.FILE)) as db:
            rows = db.execute("SELECT value FROM computed WHERE substr(value, 1, ?) = ?", (len(spill.MARK), spill.MARK))
            spill.sweep(self.root, spill.named(value for (value,) in rows))

    def _files(self) -> set[str]:
        """The files this kind's rows name (`spill`)."""
        assert self._db is not None  # open until `close`
        rows = self._db.execute(
            "SELECT value FROM computed WHERE kind = ? AND substr(value, 1, ?) = ?",
            (self.kind, len(spill.MARK), spill.MARK),
        )
        return spill.named(value for (value,) in rows)


def kept(
    store,
    kind: str,
    machine: str,
    env: str,
    shas: list[str],
    params: str,
    compute: Callable[[], T],
    encode: Callable[[T], bytes],
    decode: Callable[[bytes], T],
    digests: dict[str, str] | None = None,
) -> T:
    """What `compute` gives for machine/env's files `shas` (in history order) and `params`: kept if none
    of those files changed (by content digest) nor the analysis code, else computed and kept."""
    entry: Kept[T] = Kept(store, kind, machine, env, shas, params, decode, digests)
    try:
        if entry.found is not None:
            return entry.found
        found = compute()
        entry.keep(encode(found))
        return found
    finally:
        entry.close()


class Kept(Generic[T]):
    """`kept` in two halves, for a value computed later (beside the site build): `found` (what is
    kept for these files and params, or None) now, `keep` once computed, then `close`."""

    def __init__(
        self, store, kind: str, machine: str, env: str, shas: list[str], params: str, decode, digests=None
    ) -> None:
        """`digests`: sha -> content digest as the summary has them (`summary.digests`), if in hand."""
        self.cache = Computed(store.root, f"{kind} {machine}/{env}")
        self.key: str | None = None
        self.found: T | None = None
        digests = summary.digests(store, machine, env) if digests is None else digests
        if not all(sha in digests for sha in shas):
            return  # a file the summary does not know: nothing to key by
        h = hashlib.sha256(f"{analysis_code()} {params}".encode())
        for sha in shas:
            h.update(f" {sha}:{digests[sha]}".encode())
        self.key = h.hexdigest()
        data = self.cache.get(self.key)
        if data is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):  # garbled: computed afresh and replaced
                self.found = decode(data)

    def keep(self, data: bytes) -> None:
        if self.key is not None:
            self.cache.put(self.key, data)

    def close(self) -> None:
        self.cache.close()


def plain(value):
    """json.dumps' default: numpy's scalars as Python numbers (a figure computed with numpy may be one)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _id(b: BenchmarkId) -> list:
    return [b.label, b.sub_label, b.description, b.num_threads]


def kept_pairs(store, machine: str, env: str, shas: list[str], code: dict[str, str], compute, digests=None):
    """The history's same-code pairs (`runs.same_code_pairs`: BenchmarkId -> log differences), kept:
    what `compare` needs of the whole history for an allowance between separate runs."""
    return kept(
        store,
        "pairs",
        machine,
        env,
        shas,
        f"{_PAIRS_FORMAT} {sorted(code.items())!r}",
        compute,
        _encode_pairs,
        _decode_pairs,
        digests,
    )


# The pairs as a JSON line of (id, count) then every difference as float64 (a paired history of 1,000
# commits holds 200,000: 4.8 MB of JSON took a compare 0.14 s to read back, the array a few ms).
_PAIRS_FORMAT = "ids-json+f64"


def _encode_pairs(pairs: dict[BenchmarkId, list[float]]) -> bytes:
    index = json.dumps([[_id(b), len(d)] for b, d in pairs.items()]).encode()
    values = np.concatenate([np.asarray(d, dtype="<f8") for d in pairs.values()] or [np.zeros(0, dtype="<f8")])
    return index + b"\n" + values.tobytes()


def _decode_pairs(data: bytes) -> dict[BenchmarkId, list[float]]:
    index, sep, rest = data.partition(b"\n")
    if not sep:
        raise ValueError("no pairs")
    values = np.frombuffer(rest, dtype="<f8").tolist()
    out, at = {}, 0
    for b, n in json.loads(index):
        out[BenchmarkId(*b)] = values[at : at + n]
        at += n
    if at != len(values):
        raise ValueError("pairs and their index disagree")
    return out
