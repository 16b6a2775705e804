"""A series' table joined from every file's figures kept in the memo (analysis/table.py); a kept
table that does not read is never trusted."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_series_figures import ENV, MACHINE

from regress.analysis import table as figures_table
from regress.analysis.table import Table
from regress.storage import memo, series_figures
from regress.storage.memo import Memo
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

SHAPE = {"commits": 217, "benchmarks": 6, "rounds": "5-6", "times": "4-5"}


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
    with Memo(folder, verify=False) as m:  # what is decoded is counted: no hit joined again
        table = Table.kept(series_figures.per_file(store, m, MACHINE, ENV, figures_table.compute), lambda: [])
    return table, len(decoded)


def test_a_kept_table_that_names_what_it_does_not_list_or_is_cut_short_does_not_read(folder):
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
