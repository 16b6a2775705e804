"""The change points' search beside the site build (report/steps_beside.py): a forked child's candidates
are the search's own, a child that fails or is not wanted leaves the build to search itself, and a site
built with the search beside it is the site built without."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from regress.analysis import changepoints
from regress.analysis.table import Table
from regress.report import forked as forked_child
from regress.report import site as report_site
from regress.report.steps_beside import Beside, Found, decode, encode
from regress.storage import summary
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"
NOTHING = changepoints.Search([], None, False)
SHAPE = {"commits": 60, "benchmarks": 12, "rounds": "5-8", "times": "5-10"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    fabricate(root, machines=(MACHINE,), **SHAPE)
    return root


def _table(folder) -> Table:
    return Table.of(summary.history(Store(folder), MACHINE, ENV), site=True)


def test_the_child_finds_the_searchs_own_candidates(folder):
    table = _table(folder)
    here = changepoints.candidates(table, threshold=0.05)
    assert here, "the fabricated history has steps"
    assert decode(encode(here)) == here  # every field survives JSON, to the bit
    beside = Beside(lambda: changepoints.search(table, threshold=0.05), fork=True)
    assert beside.pid is not None  # searching in a child from here on
    assert beside.get().candidates == here and beside.pid is None
    assert beside.get().keep is None  # a history shorter than one seal keeps no prefix
    steps = changepoints.find_steps(table, threshold=0.05, found=beside.get().candidates)
    assert steps == changepoints.find_steps(table, threshold=0.05)


def test_a_failed_child_leaves_the_search_to_the_build(monkeypatch):
    calls = []

    def compute():
        calls.append(os.getpid())
        if os.getpid() != parent:
            raise RuntimeError("the child dies")
        return NOTHING

    parent = os.getpid()
    assert Beside(compute, fork=True).get() == Found([]) and calls == [parent]  # the child's own call is not seen here
    calls.clear()
    assert Beside(compute, fork=False).get() == Found([]) and calls == [parent]  # no fork: searched when asked


def test_a_search_still_running_when_the_build_fails_is_stopped():
    beside = Beside(lambda: time.sleep(60) or NOTHING, fork=True)
    pid = beside.pid
    beside.stop()
    assert beside.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left


def test_a_site_built_with_the_search_beside_it_is_the_site_built_without(folder, tmp_path, monkeypatch):
    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    forked = []
    real_start = forked_child.Forked._start
    monkeypatch.setattr(forked_child.Forked, "_start", lambda self, work: forked.append(1) or real_start(self, work))
    store = Store(folder)
    monkeypatch.setattr(forked_child, "can_fork", lambda: True)
    report_site.build(store, tmp_path / "beside")
    assert forked == [1]
    with sqlite3.connect(folder / summary.FILE) as db:  # nothing kept from that build: search and judge again
        db.execute("DELETE FROM memo")
    db.close()
    monkeypatch.setattr(forked_child, "can_fork", lambda: False)
    report_site.build(store, tmp_path / "alone")
    assert forked == [1]
    assert files(tmp_path / "beside") == files(tmp_path / "alone")


def test_a_child_that_stops_working_is_stopped_and_the_build_searches(monkeypatch):
    monkeypatch.setattr(forked_child, "STALLED", 0.3)
    parent = os.getpid()

    def compute():
        if os.getpid() != parent:
            time.sleep(60)  # stuck, using no CPU (as on a lock no thread will release)
        return NOTHING

    beside = Beside(compute, fork=True)
    pid = beside.pid
    started = time.perf_counter()
    assert beside.get() == Found([]) and beside.pid is None
    assert time.perf_counter() - started < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped
