"""The summary's headers a bucket at a time (storage/summary.py): the same headers the files give, a
new commit rebuilds only its bucket from the entries, and a bucket that does not read back, or names a
class the summary does not know, is made again from the entries and never run."""

from __future__ import annotations

import pickle
import sqlite3

import pytest

from regress.storage import summary
from regress.storage.store import Store
from regress.storage.summary import header
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"
SHAPE = {"commits": 40, "benchmarks": 3, "rounds": "3", "times": "3"}


@pytest.fixture
def folder(tmp_path):
    fabricate(tmp_path, machines=(MACHINE,), which=range(SHAPE["commits"] - 1), **SHAPE)
    return tmp_path


def _made(monkeypatch) -> list[int]:
    """How many headers each read takes from the entries (not from a kept bucket)."""
    made = []
    real = summary._from_entries
    monkeypatch.setattr(summary, "_from_entries", lambda db, m, e, shas: made.append(len(shas)) or real(db, m, e, shas))
    return made


def test_headers_read_a_bucket_at_a_time_are_the_files_and_a_new_commit_remakes_its_bucket(folder, monkeypatch):
    made = _made(monkeypatch)
    store = Store(folder)
    files = [header(r) for r in store.history(MACHINE, ENV)]
    assert summary.headers(store, MACHINE, ENV) == files
    assert sum(made) == len(files) and len(made) > 1  # every bucket made from its entries, once
    made.clear()
    assert summary.headers(Store(folder), MACHINE, ENV) == files and made == []  # all kept
    fabricate(folder, machines=(MACHINE,), which=[SHAPE["commits"] - 1], **SHAPE)
    again = summary.headers(Store(folder), MACHINE, ENV)
    assert again == [header(r) for r in Store(folder).history(MACHINE, ENV)] and len(again) == len(files) + 1
    assert len(made) == 1 and made[0] < len(files)  # the new commit's bucket alone


@pytest.mark.parametrize("garble", ["cut", "foreign"])
def test_a_bucket_that_does_not_read_back_is_made_again_and_never_run(folder, monkeypatch, garble):
    store = Store(folder)
    files = summary.headers(store, MACHINE, ENV)
    ran = []
    evil = pickle.dumps([("x", print)])  # a class (builtins.print) the summary's unpickler refuses
    with sqlite3.connect(folder / summary.FILE) as db:
        blob = db.execute("SELECT blob FROM header_buckets LIMIT 1").fetchone()[0]
        db.execute("UPDATE header_buckets SET blob = ?", (blob[:-9] if garble == "cut" else evil,))
    db.close()
    monkeypatch.setattr("builtins.print", lambda *a: ran.append(a))
    made = _made(monkeypatch)
    assert summary.headers(Store(folder), MACHINE, ENV) == files and ran == []
    assert sum(made) == len(files)  # every bucket made afresh, and kept again
    made.clear()
    assert summary.headers(Store(folder), MACHINE, ENV) == files and made == []
