"""The summary's commit list and headers are read from a covering index, not from the rows' light copies.

An entry's commit and header sit after its light copy in the row (100 KB at
200 benchmarks), and SQLite walks that blob's overflow pages to reach them: a
commit list of 1,000 files read the whole summary. The index `entries_listed`
holds what `summary.commits` and `summary.headers` read; these tests check
that the real queries use it, that a summary made before it gains it, and
that the list is the files'.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from regress.storage import summary
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"


@pytest.fixture
def folder(tmp_path):
    fabricate(tmp_path, commits=12, benchmarks=6, machines=(MACHINE,))
    return tmp_path


def _plans(folder, monkeypatch, read) -> list[str]:
    """The query plans of the SELECTs on entries that `read()` runs (each statement traced as it runs)."""
    statements: list[str] = []
    real = summary.connect

    def traced(root):
        db = real(root)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(summary, "connect", traced)
    read()
    monkeypatch.setattr(summary, "connect", real)
    plans = []
    with contextlib.closing(sqlite3.connect(folder / summary.FILE)) as db:
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT") and " entries " in f"{sql} ":
                plans.append(" ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}")))
    return plans


def test_the_commit_list_reads_the_covering_index(folder, monkeypatch):
    for read in (summary.commits, summary.headers):  # each in a Store of its own, as a command opens it
        plans = _plans(folder, monkeypatch, lambda: read(Store(folder), MACHINE, ENV))  # noqa: B023 - called at once
        assert plans and all("COVERING INDEX entries_listed" in p for p in plans), (read, plans)
    # The light history still reads the rows themselves (it wants the light copies).
    plans = _plans(folder, monkeypatch, lambda: summary.history(Store(folder), MACHINE, ENV))
    assert plans and not any("entries_listed" in p for p in plans), plans


def test_a_summary_made_before_the_index_gains_it_and_lists_the_same_commits(folder):
    store = Store(folder)
    files = [r.commit for r in store.history(MACHINE, ENV)]
    assert [c.commit for c in summary.commits(store, MACHINE, ENV)] == files
    assert summary.headers(store, MACHINE, ENV) == [summary.header(r) for r in store.history(MACHINE, ENV)]
    with contextlib.closing(sqlite3.connect(folder / summary.FILE)) as db:
        db.execute("DROP INDEX entries_listed")
    assert [c.commit for c in summary.commits(Store(folder), MACHINE, ENV)] == files  # the next command's
    with contextlib.closing(sqlite3.connect(folder / summary.FILE)) as db:
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "entries_listed" in names


def test_a_summary_that_cannot_take_the_index_is_still_read(folder, monkeypatch):
    # A summary the index can't be added to (read-only, or busy): the rows answer, only slower.
    store = Store(folder)
    files = [r.commit for r in store.history(MACHINE, ENV)]
    with contextlib.closing(sqlite3.connect(folder / summary.FILE)) as db:
        db.execute("DROP INDEX entries_listed")
    monkeypatch.setattr(summary, "_LISTED", "CREATE INDEX entries_listed ON no_such_table (sha)")  # the fault
    assert [c.commit for c in summary.commits(Store(folder), MACHINE, ENV)] == files
    with contextlib.closing(sqlite3.connect(folder / summary.FILE)) as db:
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "entries_listed" not in names
