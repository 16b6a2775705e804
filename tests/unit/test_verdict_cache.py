"""The site's recent verdicts and change points kept in the memo between builds (report/data.py):
the same verdicts as judging afresh."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from regress.report.data import ACROSS, BARE, WHOLE, CachedCompare, Series, _read, _tree, summarize
from regress.storage import memo, summary
from regress.storage.memo import Memo
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"
SHAPE = {"commits": 36, "benchmarks": 16, "rounds": "5-8", "times": "5-10"}


@pytest.fixture
def folder(tmp_path):
    fabricate(tmp_path, machines=(MACHINE,), **SHAPE)
    return tmp_path


def afresh(folder) -> dict:
    """What the site judged before the cache: every file decoded, every comparison made."""
    return summarize(Series(MACHINE, ENV, Store(folder).history(MACHINE, ENV)), threshold=0.05).verdicts


def cached(folder, verify: bool = False) -> tuple[dict, CachedCompare]:
    """The verdicts through the memo (not verified, unless asked: what is judged is counted)."""
    store = Store(folder)
    with Memo(Store(folder), verify=verify) as m:
        judge = CachedCompare(store, m, MACHINE, ENV)
        series = summarize(Series(MACHINE, ENV, summary.history(store, MACHINE, ENV)), threshold=0.05, judge=judge)
    return series.verdicts, judge


def decode(value: bytes):
    return _read(memo.decode(value))


def encode(verdicts, asked) -> bytes:
    return memo.encode(_tree(verdicts, asked))


def test_the_second_build_judges_nothing_and_says_the_same(folder, monkeypatch):
    first, judge = cached(folder)
    assert first == afresh(folder)
    assert judge.misses > 0 and judge.hits == 0
    decoded = []
    real = Store.load
    monkeypatch.setattr(Store, "load", lambda self, *a: decoded.append(a) or real(self, *a))
    again, judge2 = cached(folder)
    assert again == first
    assert (judge2.hits, judge2.misses) == (judge.misses, 0)
    assert decoded == []  # a hit decodes no file


def test_one_new_commit_costs_only_its_own_comparisons(folder, monkeypatch):
    _, judge = cached(folder)
    fabricate(folder, machines=(MACHINE,), which=[SHAPE["commits"]], **SHAPE)
    decoded = []
    real = Store.load
    monkeypatch.setattr(Store, "load", lambda self, *a: decoded.append(a) or real(self, *a))
    verdicts, judge = cached(folder)
    assert decoded == []  # a miss judges the light copies: no file decoded either
    monkeypatch.undo()
    assert verdicts == afresh(folder)  # ... and says what the files say
    # The new commit's comparison, and the one whose `after` neighbour it now is; some benchmarks
    # judged against an older commit add one each. Far fewer than the first build's.
    assert 1 <= judge.misses <= 4 and judge.hits > 0
    # ... and only the new commit's benchmarks judged: the comparison before it kept its core (no
    # neighbour), so only the blip rule was applied to it again.
    assert SHAPE["benchmarks"] <= judge.rejudged < 2 * SHAPE["benchmarks"]


def test_a_changed_file_a_garbled_entry_or_another_allowance_is_judged_afresh(folder):
    _, judge = cached(folder)
    total = judge.misses
    db = sqlite3.connect(folder / summary.FILE)
    keys = [k for (k,) in db.execute("SELECT inputs FROM memo WHERE kind = ? ORDER BY inputs", (WHOLE,))]
    assert len(keys) == total
    assert 0 < len(db.execute("SELECT inputs FROM memo WHERE kind = ?", (BARE,)).fetchall()) <= total
    db.execute("UPDATE memo SET value = x'7b00' WHERE inputs = ?", (keys[0],))  # garbled
    # a tree that reads, rows that do not make verdicts
    db.execute(
        "UPDATE memo SET value = ? WHERE inputs = ?", (memo.encode({"verdicts": [{"id": 1}], "apart": []}), keys[1])
    )
    # An allowance for separate runs that the history no longer gives (the next pair of runs moved it).
    value = next(
        v
        for k, v in db.execute("SELECT inputs, value FROM memo WHERE kind = ?", (WHOLE,))
        if k not in keys[:2] and decode(v)[1]
    )
    verdicts, asked = decode(value)
    bid = next(iter(asked))
    moved = {**asked, bid: type(asked[bid])(asked[bid].sigma * 1.5, asked[bid].pairs + 1)}
    db.execute("UPDATE memo SET value = ? WHERE value = ?", (encode(verdicts, moved), value))
    db.commit()
    again, judge = cached(folder)
    assert again == afresh(folder)
    assert (judge.misses, judge.partial, judge.hits) == (2, 1, total - 3)
    # The garbled comparisons made from their kept bare verdicts, the moved one judged for its one benchmark alone.
    assert judge.rejudged == 1
    # The bare verdicts garbled too: the two comparisons judged whole.
    db.execute("UPDATE memo SET value = x'7b00' WHERE kind = ?", (BARE,))
    db.execute("UPDATE memo SET value = x'7b00' WHERE inputs IN (?, ?)", keys[:2])
    db.commit()
    db.close()
    again, judge = cached(folder)
    assert again == afresh(folder)
    assert judge.misses == 2 and judge.rejudged == 2 * SHAPE["benchmarks"]
    # A file rewritten (a merge added rounds, say): every comparison that read it is made afresh.
    store = Store(folder)
    newest = summary.history(store, MACHINE, ENV)[-2]
    result = store.load(MACHINE, ENV, newest.commit.sha)
    store.save(result.__class__(**{**result.__dict__, "results": result.results[1:]}))
    again, judge = cached(folder)
    assert again == afresh(folder)
    assert 1 <= judge.misses <= 4


def test_the_same_allowance_from_more_pairs_is_a_hit_with_its_note_brought_up_to_date(folder):
    """A new commit adds same-code pairs; where the allowance stays what it was (most sit at the
    fixed floor) the kept verdicts stand, and only their notes' count of pairs is the history's now."""
    _, judge = cached(folder)
    total = judge.misses
    db = sqlite3.connect(folder / summary.FILE)
    rows = [(k, v) for k, v in db.execute("SELECT inputs, value FROM memo WHERE kind = ?", (WHOLE,)) if decode(v)[1]]
    assert rows
    for key, value in rows:  # as if kept when the history had three pairs fewer
        verdicts, asked = decode(value)
        fewer = {b: dataclasses.replace(a, pairs=a.pairs + 3) for b, a in asked.items()}
        older = [
            dataclasses.replace(v, reason=v.reason.replace(asked[v.id].describe(), fewer[v.id].describe()))
            if v.id in asked
            else v
            for v in verdicts
        ]
        assert older != verdicts  # the notes did name the count
        db.execute("UPDATE memo SET value = ? WHERE inputs = ?", (encode(older, fewer), key))
    db.commit()
    db.close()
    again, judge = cached(folder)
    assert (judge.hits, judge.misses) == (total, 0)
    assert again == afresh(folder)


def test_without_a_summary_nothing_is_kept_and_the_verdicts_are_the_same(folder):
    (folder / summary.FILE).unlink()
    (folder / summary.FILE).mkdir()  # not a file SQLite can open
    verdicts, judge = cached(folder)
    assert verdicts == afresh(folder)
    assert judge.hits == 0


def test_verifying_judges_every_kept_comparison_again_and_finds_it_the_same(folder):
    cached(folder)
    fabricate(folder, machines=(MACHINE,), which=[SHAPE["commits"]], **SHAPE)
    verdicts, judge = cached(folder, verify=True)  # hits, the comparison the new commit neighbours, and it
    assert verdicts == afresh(folder) and judge.hits > 0
    with sqlite3.connect(folder / summary.FILE) as db:  # a kept verdict its inputs do not give
        key, value = db.execute("SELECT inputs, value FROM memo WHERE kind = ? LIMIT 1", (WHOLE,)).fetchone()
        verdicts, asked = decode(value)
        wrong = [dataclasses.replace(verdicts[0], reason="not what the rounds say"), *verdicts[1:]]
        db.execute("UPDATE memo SET value = ? WHERE inputs = ?", (encode(wrong, asked), key))
    db.close()
    assert cached(folder)[0] != afresh(folder)  # read as kept ...
    with pytest.raises(memo.StaleValue, match=WHOLE):
        cached(folder, verify=True)  # ... unless verified


def steps_of(folder, calls: list, verify: bool = False) -> list:
    """The series' change points through the memo, as `regress regressions` reads them."""
    from regress.analysis.changepoints import find_steps
    from regress.report import data

    store = Store(folder)
    history = summary.history(store, MACHINE, ENV)
    shas = [c.commit.sha for c in history]

    def compute():
        calls.append(len(history))
        return find_steps(history, threshold=0.05)

    inputs = data.steps_inputs(summary.digests(store, MACHINE, ENV), shas, threshold=0.05, code={})
    with Memo(Store(folder), verify=verify) as m:
        return m.get(data.STEPS, inputs, compute, from_tree=data.steps_of)


def test_steps_are_kept_for_the_same_files_and_found_afresh_when_one_changes(folder):
    from regress.analysis.changepoints import find_steps
    from regress.report.data import STEPS

    calls: list = []
    first = steps_of(folder, calls)
    assert first and first == find_steps(Store(folder).history(MACHINE, ENV), threshold=0.05)
    kept = steps_of(folder, calls)
    assert kept == first and calls == [SHAPE["commits"]]  # kept: not computed again
    assert [type(s.direction) for s in kept] == [type(s.direction) for s in first]  # the Enum, not its name
    assert steps_of(folder, calls, verify=True) == first  # verified: found again by computing them
    fabricate(folder, machines=(MACHINE,), which=[SHAPE["commits"]], **SHAPE)
    calls.clear()
    assert steps_of(folder, calls) == find_steps(Store(folder).history(MACHINE, ENV), threshold=0.05)
    assert calls == [SHAPE["commits"] + 1]
    db = sqlite3.connect(folder / summary.FILE)
    db.execute("UPDATE memo SET value = ? WHERE kind = ?", (memo.encode([[1]]), STEPS))  # garbled
    db.commit()
    db.close()
    assert steps_of(folder, calls) == find_steps(Store(folder).history(MACHINE, ENV), threshold=0.05)
    assert len(calls) == 2


def test_a_build_keeps_the_pairs_compare_would_read_the_history_for(folder):
    from regress.analysis import diff
    from regress.report import site

    store = Store(folder)

    def kept_pairs(compute):
        shas = [c.commit.sha for c in summary.commits(store, MACHINE, ENV)]
        inputs = memo.files_digest(summary.digests(store, MACHINE, ENV), shas, [])
        with Memo(Store(folder), verify=False) as m:
            return m.get(diff.PAIRS, inputs, compute, diff.pairs_tree, diff.pairs_from_tree)

    with Memo(Store(folder)) as m:
        site._model(store, m, 0.05, None)  # the recent verdicts, whose allowances compute the pairs

    def never():
        raise AssertionError("computed again")

    kept = kept_pairs(never)
    same, _ = kept
    assert same and kept == diff.history_pairs(Store(folder).history(MACHINE, ENV), {})
    fabricate(folder, machines=(MACHINE,), which=[SHAPE["commits"]], **SHAPE)
    calls = []
    kept_pairs(lambda: calls.append(1) or ({}, {}))
    assert calls == [1]  # a new file: not the kept pairs


def test_verdicts_across_candidate_steps_are_kept_and_say_the_same(tmp_path):
    from regress.analysis import changepoints, table

    fabricate(tmp_path, machines=(MACHINE,), **dict(SHAPE, commits=60))
    store = Store(tmp_path)
    light = table.Table.of(summary.history(store, MACHINE, ENV), site=True)
    decoded = []
    history = dataclasses.replace(light, load=lambda i: decoded.append(i) or light.load(i))
    afresh_steps = changepoints.find_steps(light, threshold=0.05)
    with Memo(Store(tmp_path), verify=False) as m:
        judge = CachedCompare(store, m, MACHINE, ENV)
        first = changepoints.find_steps(history, threshold=0.05, judge_one=judge.across)
    assert first == afresh_steps and first  # the fabricated history has steps to check
    assert judge.misses > 0 and judge.hits == 0 and decoded  # a miss reads both sides' rounds
    decoded.clear()
    with Memo(Store(tmp_path), verify=False) as m:
        judge2 = CachedCompare(store, m, MACHINE, ENV)
        assert changepoints.find_steps(history, threshold=0.05, judge_one=judge2.across) == first
    assert (judge2.hits, judge2.misses) == (judge.misses, 0) and decoded == []  # a hit reads none
    with Memo(Store(tmp_path), verify=True) as m:
        assert (
            changepoints.find_steps(history, threshold=0.05, judge_one=CachedCompare(store, m, MACHINE, ENV).across)
            == first
        )
    # Kept apart from the recent verdicts: forgetting those (scripts/time_report.py's "verdicts afresh")
    # leaves the candidates' verdicts, which a build whose change points are kept never judges again.
    db = sqlite3.connect(tmp_path / summary.FILE)
    kinds = dict(db.execute("SELECT kind, COUNT(*) FROM memo GROUP BY kind"))
    db.close()
    assert kinds == {ACROSS: judge.misses}
