"""Each result file's figures kept in the memo (storage.summary.SeriesFigures, analysis/table.py): the same
numbers as computed from the files, made once per file, made again for a changed file, never trusted garbled."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

from regress.analysis import changepoints, diff
from regress.analysis import table as figures_table
from regress.analysis.table import Table
from regress.storage import memo, summary
from regress.storage.memo import Memo
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"
SHAPE = {"commits": 30, "benchmarks": 12, "rounds": "5-8", "times": "5-10"}
COLUMNS = ("pos", "bench", "status", "ok", "level", "band", "torch", "instructions", "extra")
RUN_COLUMNS = ("run_pos", "run_bench", "run", "run_n", "low")


@pytest.fixture
def folder(tmp_path):
    fabricate(tmp_path, machines=(MACHINE,), **SHAPE)
    return tmp_path


def kept(folder, made: list | None = None) -> Table:
    def compute(result):
        if made is not None:
            made.append(result.commit.sha)
        return figures_table.compute(result)

    store = Store(folder)
    with Memo(Store(folder), verify=False) as m:  # what is computed is counted: no hit computed again
        return Table.kept(summary.per_file(store, m, MACHINE, ENV, compute), lambda: [])


def same(a: Table, b: Table) -> None:
    assert a.ids == b.ids and [c.commit.sha for c in a.history] == [c.commit.sha for c in b.history]
    for name in COLUMNS + RUN_COLUMNS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.messages == b.messages and a.units == b.units and a.run_names == b.run_names
    assert np.array_equal(a.reference, b.reference, equal_nan=True)


def test_kept_figures_are_the_files_own_and_made_once(folder):
    made: list[str] = []
    first = kept(folder, made)
    assert len(made) == SHAPE["commits"]
    full = Store(folder).history(MACHINE, ENV)
    same(first, Table.of(full, site=True))
    made.clear()
    same(kept(folder, made), first)
    assert made == []  # nothing computed again
    # What the analyses find from them is what they find from the files in full.
    assert changepoints.find_steps(first, threshold=0.05) == changepoints.find_steps(full, threshold=0.05)
    assert diff.same_code_pairs(first, {}) == diff.same_code_pairs(full, {})


def test_a_changed_file_is_made_again_and_a_garbled_entry_is_not_trusted(folder):
    kept(folder)
    store = Store(folder)
    sha = summary.commits(store, MACHINE, ENV)[5].commit.sha
    result = store.load(MACHINE, ENV, sha)
    store.save(dataclasses.replace(result, results=result.results[1:]))  # a merge rewrote it, say
    made: list[str] = []
    again = kept(folder, made)
    assert made == [sha]
    same(again, Table.of(Store(folder).history(MACHINE, ENV), site=True))
    digest = summary.digests(store, MACHINE, ENV)[sha]

    def garble(value: bytes) -> None:
        with sqlite3.connect(folder / summary.FILE) as db:
            where = (summary.FIGURES, digest)
            assert db.execute("UPDATE memo SET value = ? WHERE kind = ? AND inputs = ?", (value, *where)).rowcount
        db.close()

    garble(b"\x00\xff\x00")  # bytes that do not decode: a miss, made again
    made.clear()
    same(kept(folder, made), again)
    assert made == [sha]
    garble(memo.encode({"ids": 5}))  # a tree that is no figures: the light history's table, not the entry's
    light = summary.history(Store(folder), MACHINE, ENV)
    with Memo(Store(folder), verify=False) as m:  # (verifying, it would be a stale value: computed, it differs)
        fallback = Table.kept(summary.per_file(Store(folder), m, MACHINE, ENV, figures_table.compute), lambda: light)
    assert fallback.history is light
    same(fallback, Table.of(light, site=True))
