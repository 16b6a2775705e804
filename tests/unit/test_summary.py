"""The results summary (storage/summary.py): what history readers get from it is what the files say."""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pytest

from regress.analysis import changepoints, stats
from regress.core.records import WORKTREE
from regress.report.data import Series, summarize
from regress.storage import summary
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"


@pytest.fixture
def folder(tmp_path):
    fabricate(tmp_path, commits=40, benchmarks=24, machines=(MACHINE,))
    return tmp_path


def _same_history(light, full):
    assert [c.commit for c in light] == [c.commit for c in full]
    for lc, fc in zip(light, full):
        assert (lc.runs, lc.failures, lc.fingerprint) == (fc.runs, fc.failures, fc.fingerprint)
        assert [stats.round_value(s) for s in lc.reference] == [stats.round_value(s) for s in fc.reference]
        assert [r.id for r in lc.results] == [r.id for r in fc.results]
        for lr, fr in zip(lc.results, fc.results):
            assert stats.round_values(lr) == stats.round_values(fr)
            assert [(s.run, s.process, s.started_at) for s in lr.samples] == [
                (s.run, s.process, s.started_at) for s in fr.samples
            ]
            assert [(m.allocated, m.peak, m.device) for m in lr.memory] == [
                (m.allocated, m.peak, m.device) for m in fr.memory
            ]
            assert (lr.failure, lr.compiled, lr.tracked, lr.counts) == (
                fr.failure,
                fr.compiled,
                fr.tracked,
                fr.counts,
            )


def test_light_history_reads_as_the_files_do(folder):
    store = Store(folder)
    full = store.history(MACHINE, ENV)
    light = summary.history(store, MACHINE, ENV)
    _same_history(light, full)
    assert changepoints.find_steps(light) == changepoints.find_steps(full)
    assert [c.commit for c in summary.commits(store, MACHINE, ENV)] == [c.commit for c in full]
    # The report's numbers (and the table's torch figures) are the same from either.
    a = summarize(Series(MACHINE, ENV, full), threshold=0.05)
    b = summarize(Series(MACHINE, ENV, light), threshold=0.05)
    assert a.tracks.keys() == b.tracks.keys() and a.steps == b.steps and a.failed == b.failed
    assert np.array_equal(a.table.torch, b.table.torch, equal_nan=True)
    for bid, t in a.tracks.items():
        for name in ("commits", "level", "lo", "hi"):
            assert np.array_equal(getattr(t, name), getattr(b.tracks[bid], name)), (bid, name)


def test_saving_updates_the_entry_and_reading_does_not_decode_again(folder, monkeypatch):
    store = Store(folder)
    assert (folder / summary.FILE).is_file()  # written as the fabricated results were saved
    decoded = []
    real = summary.codec.decode
    monkeypatch.setattr(summary.codec, "decode", lambda data, where: decoded.append(where) or real(data, where))
    summary.history(store, MACHINE, ENV)
    assert decoded == []


def test_an_entry_that_disagrees_with_its_file_is_rebuilt(folder):
    store = Store(folder)
    files = sorted((folder / MACHINE / ENV).glob("*.pkl"))
    first = summary.history(store, MACHINE, ENV)
    # Another commit's results copied over one file (a merge, a hand edit): the summary follows the file.
    victim, donor = files[3], files[7]
    victim.write_bytes(donor.read_bytes())
    os.utime(victim, ns=(1, 1))
    # And a file removed: its entry goes.
    files[5].unlink()
    after = summary.history(store, MACHINE, ENV)
    _same_history(after, store.history(MACHINE, ENV))
    assert len(after) == len(first) - 2  # the copy is now the donor's commit, and one file is gone


def test_one_commits_light_copy_is_given_only_while_it_is_its_files(folder):
    store = Store(folder)
    files = sorted((folder / MACHINE / ENV).glob("*.pkl"))
    sha, donor = files[4].stem, files[9]
    got = summary.light_now(store, MACHINE, ENV, sha)
    _same_history([got], [store.load(MACHINE, ENV, sha)])
    assert summary.light_now(store, MACHINE, ENV, "0" * 40) is None  # nothing stored
    # Rewritten behind the summary's back: the file is what counts, until a history read catches up.
    files[4].write_bytes(donor.read_bytes())
    assert summary.light_now(store, MACHINE, ENV, sha) is None
    summary.history(store, MACHINE, ENV)
    assert summary.light_now(store, MACHINE, ENV, sha).commit.sha == donor.stem


def test_a_touched_file_with_the_same_bytes_is_not_decoded(folder, monkeypatch):
    store = Store(folder)
    path = sorted((folder / MACHINE / ENV).glob("*.pkl"))[2]
    os.utime(path, ns=(10**18, 10**18))  # a fresh checkout of the results branch: new mtimes, same bytes
    decoded = []
    real = summary.codec.decode
    monkeypatch.setattr(summary.codec, "decode", lambda data, where: decoded.append(where) or real(data, where))
    summary.history(store, MACHINE, ENV)
    assert decoded == []


def test_an_older_or_broken_summary_is_rebuilt(folder):
    store = Store(folder)
    full = store.history(MACHINE, ENV)
    db = sqlite3.connect(folder / summary.FILE)
    db.execute("UPDATE meta SET value = 'old' WHERE key = 'version'")
    db.execute("UPDATE entries SET light = X'00'")  # what an older version wrote means nothing now
    db.commit()
    db.close()
    _same_history(summary.history(store, MACHINE, ENV), full)
    # An entry that does not read back, with the version right: rebuilt from its file.
    db = sqlite3.connect(folder / summary.FILE)
    db.execute("UPDATE entries SET light = X'80' WHERE rowid = 1")
    db.commit()
    db.close()
    _same_history(summary.history(store, MACHINE, ENV), full)
    (folder / summary.FILE).write_bytes(b"not a database at all" * 100)
    _same_history(summary.history(store, MACHINE, ENV), full)


def test_an_unreadable_file_is_refused_every_time_and_the_rest_still_load(folder):
    store = Store(folder)
    path = sorted((folder / MACHINE / ENV).glob("*.pkl"))[4]
    path.write_bytes(b"garbage")
    for _ in range(2):
        store.refused.clear()
        light = summary.history(store, MACHINE, ENV)
        assert len(light) == 39 and len(store.refused) == 1 and path.name in store.refused[0]


def test_the_worktree_is_left_out(folder):
    store = Store(folder)
    head = store.history(MACHINE, ENV)[-1]
    store.save(
        type(head)(**{**head.__dict__, "commit": type(head.commit)(**{**head.commit.__dict__, "sha": WORKTREE})})
    )
    assert all(c.commit.sha != WORKTREE for c in summary.history(store, MACHINE, ENV))


@pytest.mark.parametrize("within", [0.05, 0.3, 0.9])  # calm rounds, torch's warning, its gross warning
def test_a_light_copy_gives_the_verdicts_and_reasons_its_file_gives(within):
    from factories import bench, commit, rounds_of

    from regress.analysis import diff
    from regress.storage.summary import light

    def side(sha, values):
        # Rounds of 8 blocks spread `within` apart, beside a calm benchmark; a level that wanders between
        # rounds, so the verdicts are noisy and their reasons say what the blocks say.
        return commit(
            sha,
            bench(sub="spread", samples=rounds_of(values, blocks=8, within=within)),
            bench(sub="calm", samples=rounds_of(values, blocks=8, within=0.01)),
        )

    base = side("a", [1.0, 1.3, 0.97, 1.25, 1.02])
    head = side("b", [1.08, 1.4, 1.03, 1.33, 1.1])
    full = diff.compare(base, head)
    assert diff.compare(light(base), light(head)) == full
    spread = next(v for v in full if v.id.sub_label == "spread")
    assert spread.verdict == "noisy"
    assert ("IQR within a round" in spread.reason) == (within > 0.1), spread.reason
