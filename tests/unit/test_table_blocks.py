"""A series' figures joined from blocks kept in the memo (analysis/table.py): the table every
file's figures give, field for field; a block is decoded whole on the next read, joined afresh where one of
its files changed, and never trusted garbled."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest
from test_series_figures import ENV, MACHINE, same

from regress.analysis import table as figures_table
from regress.analysis.table import Table
from regress.storage import memo, summary
from regress.storage.memo import Memo
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

SHAPE = {"commits": 2 * figures_table.BLOCK + figures_table.TAIL + 7, "benchmarks": 6, "rounds": "5-6", "times": "4-5"}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("blocks")
    fabricate(folder, machines=(MACHINE,), **SHAPE)
    return folder


@pytest.fixture
def folder(made, tmp_path):
    import shutil

    shutil.copytree(made, tmp_path / "r")
    return tmp_path / "r"


def read(folder, monkeypatch=None) -> tuple[Table, int]:
    """The table, and how many files' own figures (one-commit tables) were decoded to join it."""
    decoded = []
    if monkeypatch is not None:
        real = figures_table.from_tree

        def counted(tree, ids=None):
            decoded.extend([1] if len(tree["reference"]) == 1 else [])
            return real(tree, ids)

        monkeypatch.setattr(figures_table, "from_tree", counted)
    store = Store(folder)
    with Memo(Store(folder), verify=False) as m:  # what is decoded is counted: no hit joined again
        table = Table.kept(summary.per_file(store, m, MACHINE, ENV, figures_table.compute), lambda: [])
    return table, len(decoded)


def test_the_blocks_join_into_the_table_of_every_file_and_are_kept_whole(folder, monkeypatch):
    n = SHAPE["commits"]
    assert figures_table.spans(n) == [(0, 100), (100, 200)]  # the last 17: 10 within TAIL, 7 past the block
    first, decoded = read(folder, monkeypatch)
    assert decoded == n  # nothing kept yet: every file's figures
    full = Table.of(Store(folder).history(MACHINE, ENV), site=True)
    same(first, full)
    again, decoded = read(folder, monkeypatch)
    assert decoded == n - 2 * figures_table.BLOCK  # the two blocks kept whole
    same(again, full)
    with Memo(Store(folder), verify=True) as m:  # each kept block joined again from its files: the same
        same(Table.kept(summary.per_file(Store(folder), m, MACHINE, ENV, figures_table.compute), list), full)


def test_a_block_with_a_changed_file_is_joined_afresh(folder, monkeypatch):
    read(folder)
    store = Store(folder)
    sha = summary.commits(store, MACHINE, ENV)[150].commit.sha
    result = store.load(MACHINE, ENV, sha)
    store.save(dataclasses.replace(result, results=result.results[1:]))  # rerun of an old commit, say
    table, decoded = read(folder, monkeypatch)
    assert decoded == SHAPE["commits"] - figures_table.BLOCK  # the second block from its files again
    same(table, Table.of(Store(folder).history(MACHINE, ENV), site=True))
    assert read(folder, monkeypatch)[1] == SHAPE["commits"] - 2 * figures_table.BLOCK  # and kept whole again


def test_a_garbled_block_is_joined_afresh_and_replaced(folder, monkeypatch):
    read(folder)
    with sqlite3.connect(folder / summary.FILE) as db:
        changed = db.execute(
            "UPDATE memo SET value = substr(value, 1, length(value) - 8) WHERE kind = ?", (figures_table.BLOCKS,)
        ).rowcount
    db.close()
    assert changed == 2
    table, decoded = read(folder, monkeypatch)
    assert decoded == SHAPE["commits"]
    same(table, Table.of(Store(folder).history(MACHINE, ENV), site=True))
    assert read(folder, monkeypatch)[1] == SHAPE["commits"] - 2 * figures_table.BLOCK


def test_a_block_that_names_what_it_does_not_list_or_is_cut_short_does_not_read(folder):
    table, _ = read(folder)

    def back(tree):
        return figures_table.from_tree(memo.decode(memo.encode(tree)), {})

    assert back(figures_table.to_tree(table)).ids == table.ids
    for wrong in (
        figures_table.to_tree(dataclasses.replace(table, ids=table.ids[:1])),  # its rows name benchmark 5
        figures_table.to_tree(dataclasses.replace(table, run_names=table.run_names[:1])),
        {**figures_table.to_tree(table), "pos": table.pos.astype(np.int64)},
        {"ids": "no arrays"},
    ):
        with pytest.raises(ValueError):
            back(wrong)
