"""Commits' code identities kept in the summary: a commit's tree never changes, so git is asked once.

Every command that reads the history asks which commits share code
(`code_identity.for_config`): reading 10,000 commits' trees through git took
0.6 s of each site build, `regressions` and `compare`, for digests that
were the same as last time. They are kept per sha under a digest of the
rule (`code_identity.rule`: the config fields and patterns that pick a
tree's code), so another `code_paths` or a new rule asks git afresh; a
commit git does not have is not kept. Only a cache, in the summary's
SQLite file: without a results folder, or with one that cannot be used,
git is asked every time.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

from regress.storage import summary

_TABLE = "CREATE TABLE IF NOT EXISTS code_ids (rule TEXT, sha TEXT, id TEXT, PRIMARY KEY (rule, sha))"


def through(root: Path, rule: str, shas: list[str], read: Callable[[list[str]], dict[str, str]]) -> dict[str, str]:
    """sha -> code identity of `shas`: the kept ones, and `read(missing)` for the rest (then kept)."""
    if not (root / summary.FILE).is_file():
        return read(shas)
    try:
        with contextlib.closing(summary.connect(root)) as db:
            db.execute(_TABLE)
            found = dict(db.execute("SELECT sha, id FROM code_ids WHERE rule = ?", (rule,)))
            missing = [sha for sha in dict.fromkeys(shas) if sha not in found]
            if missing:
                made = read(missing)
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM code_ids WHERE rule != ?", (rule,))  # another config's: not asked again
                db.executemany("INSERT OR REPLACE INTO code_ids VALUES (?, ?, ?)", [(rule, *kv) for kv in made.items()])
                db.execute("COMMIT")
                found.update(made)
    except sqlite3.Error:
        return read(shas)
    return {sha: found[sha] for sha in shas if sha in found}
