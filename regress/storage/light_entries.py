"""One commit's light copy (or a few commits'), read from the summary without refreshing the rest:
what a compare and the chart's kept levels need of a long history."""

from __future__ import annotations

import contextlib
import sqlite3

from regress.core import records
from regress.storage import entry_pickle, summary


def light_of(store, machine: str, env: str, shas: list[str]) -> dict[str, records.CommitResult]:
    """sha -> its light result, for those of `shas` whose entries read back (as the last read left them)."""
    out: dict[str, records.CommitResult] = {}
    try:
        with contextlib.closing(summary.connect(store.root)) as db:
            for k in range(0, len(shas), 500):
                part = shas[k : k + 500]
                marks = ",".join("?" * len(part))
                for sha, blob in db.execute(
                    f"SELECT sha, light FROM entries WHERE machine = ? AND env = ? AND sha IN ({marks})",
                    (machine, env, *part),
                ):
                    with contextlib.suppress(*entry_pickle.ERRORS):
                        out[sha] = entry_pickle.load(blob, records.CommitResult)
    except (OSError, sqlite3.Error):
        pass
    return out


def light_now(store, machine: str, env: str, sha: str) -> records.CommitResult | None:
    """sha's light result when its entry was made from its file as the file is now (as `history` checks
    it); None when there is no such entry or the file is elsewhere: then the file is what to read."""
    path = store.path(machine, env, sha)
    try:
        st = path.stat()
        with contextlib.closing(summary.connect(store.root)) as db:
            row = db.execute(
                "SELECT size, mtime_ns, light, error FROM entries WHERE machine = ? AND env = ? AND sha = ?",
                (machine, env, sha),
            ).fetchone()
    except (OSError, sqlite3.Error):
        return None
    if row is None or row[2] is None or row[3] is not None or not summary.made_from(row[0], row[1], st):
        return None
    with contextlib.suppress(*entry_pickle.ERRORS):
        return entry_pickle.load(row[2], records.CommitResult)
    return None
