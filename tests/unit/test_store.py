"""The result store on fabricated records: round trip, merging, atomicity, the allow-list."""

from __future__ import annotations

import os
import pickle

import factories
import pytest

from regress.core.errors import RegressError
from regress.core.records import (
    WORKTREE,
    CommitInfo,
    CommitResult,
    Failure,
    Sample,
    TaskSpec,
)
from regress.storage.codec import decode, encode
from regress.storage.store import Store


def result(sha="a" * 40, samples=((1e-3, 1.1e-3),), spec=None, complete=True, failure=None):
    spec = spec or TaskSpec(stmt="f()", label="L", sub_label="s", description="d", num_threads=1)
    samples = tuple(Sample(10, tuple(s), 1.0) for s in samples)
    b = factories.bench(task=spec, samples=samples, failure=failure, origin="benchmarks/x.py:1 bench_f")
    return factories.commit(sha, b, complete=complete, torch="2.13.0", when=1, subject="subject", started_at=1.0)


def test_round_trip(tmp_path):
    store = Store(tmp_path)
    r = result()
    path = store.save(r)
    assert path == tmp_path / "box" / "default" / f"{'a' * 40}.pkl"
    assert store.load("box", "default", "a" * 40) == r
    assert store.machines() == ["box"] and store.envs("box") == ["default"]


def test_second_run_adds_rounds_and_keeps_other_benchmarks(tmp_path):
    store = Store(tmp_path)
    store.save(result(samples=((1.0e-3,),)))
    other = TaskSpec(stmt="g()", label="L", sub_label="t")
    store.save(result(samples=((2.0e-3,),)))
    store.save(result(samples=((3.0e-3,),), spec=other))
    loaded = store.load("box", "default", "a" * 40).by_id()
    first = loaded[TaskSpec(stmt="f()", label="L", sub_label="s", description="d").id]
    assert [s.raw_times for s in first.samples] == [(1.0e-3,), (2.0e-3,)]
    assert other.id in loaded


def test_changed_spec_replaces_instead_of_mixing(tmp_path):
    store = Store(tmp_path)
    store.save(result(samples=((1.0e-3,),)))
    changed = TaskSpec(stmt="f(2)", label="L", sub_label="s", description="d")
    store.save(result(samples=((5.0e-3,),), spec=changed))
    (only,) = store.load("box", "default", "a" * 40).results
    assert only.spec == changed and len(only.samples) == 1


def test_worktree_is_replaced_not_merged(tmp_path):
    store = Store(tmp_path)
    store.save(result(sha=WORKTREE, samples=((1.0e-3,),)))
    store.save(result(sha=WORKTREE, samples=((2.0e-3,),)))
    (only,) = store.load("box", "default", WORKTREE).results
    assert [s.raw_times for s in only.samples] == [(2.0e-3,)]


def test_history_is_in_commit_order_without_worktree(tmp_path):
    store = Store(tmp_path)
    for sha, when in (("c" * 40, 30), ("a" * 40, 10), ("b" * 40, 20)):
        r = result(sha=sha)
        store.save(CommitResult(**{**r.__dict__, "commit": CommitInfo(sha, (), "A", "a@x", when, when, sha[:1])}))
    store.save(result(sha=WORKTREE))
    assert [r.commit.subject for r in store.history("box", "default")] == ["a", "b", "c"]


def test_failed_write_leaves_no_half_file(tmp_path, monkeypatch):
    store = Store(tmp_path)
    store.save(result(samples=((1.0e-3,),)))
    path = tmp_path / "box" / "default" / f"{'a' * 40}.pkl"
    before = path.read_bytes()

    def crash(fd):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        store.save(result(samples=((2.0e-3,),)))
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_allow_list_refuses_foreign_classes():
    class Evil:
        def __reduce__(self):
            return (print, ("should never run",))

    data = pickle.dumps({"format": "regress-results", "version": 1, "result": Evil()})
    with pytest.raises(RegressError, match=r"refusing to load builtins\.print"):
        decode(data, "x.pkl")
    assert isinstance(decode(encode(result()), "ok.pkl"), CommitResult)


def test_bad_names_are_refused(tmp_path):
    with pytest.raises(RegressError, match="machine name"):
        Store(tmp_path).path("../etc", "default", "a" * 40)


def test_lock_refuses_a_second_writer(tmp_path):
    store = Store(tmp_path)
    with store.lock(), pytest.raises(RegressError, match="in use by another regress run"), Store(tmp_path).lock():
        pass
    with store.lock():  # released afterwards
        pass


def test_a_failure_is_not_ok():
    r = result(samples=((1e-3, 2e-3, 3e-3, 4e-3, 5e-3),), failure=None).results[0]
    assert r.ok and abs(r.median - 3e-4) < 1e-12
    failed = result(samples=(), failure=Failure("error", "boom")).results[0]
    assert not failed.ok


def test_a_failed_rerun_keeps_what_was_measured(tmp_path):
    store = Store(tmp_path)
    store.save(result(samples=((1.0e-3,),)))
    store.save(result(samples=(), failure=Failure("crash", "worker killed by SIGSEGV")))
    (r,) = store.load("box", "default", "a" * 40).results
    assert not r.ok and r.failure.kind == "crash"
    assert [s.raw_times for s in r.samples] == [(1.0e-3,)]
    store.save(result(samples=((2.0e-3,),)))
    (r,) = store.load("box", "default", "a" * 40).results
    assert r.ok and len(r.samples) == 2


def test_instruction_counts_live_beside_times(tmp_path):
    from dataclasses import replace

    from regress.core.records import InstructionCount

    store = Store(tmp_path)
    store.save(result(samples=((1.0e-3,),)))
    counted = result(samples=())
    bench = replace(counted.results[0], counts=(InstructionCount(20, (1010, 1000, 1002, 1001), 1.0),))
    store.save(replace(counted, results=(bench,)))
    (r,) = store.load("box", "default", "a" * 40).results
    assert r.ok and r.counted
    assert r.instructions == 1001  # first repeat dropped, median of the rest
    assert r.times == (1.0e-4,)


def test_format_1_files_still_load():
    r = result()
    old_bench = r.results[0]
    state = dict(old_bench.__dict__)
    del state["counts"]  # what a format-1 writer pickled
    object.__setattr__(old_bench, "__dict__", state)
    data = pickle.dumps({"format": "regress-results", "version": 1, "result": r})
    loaded = decode(data, "old.pkl")
    assert loaded.results[0].counts == () and loaded.results[0].ok


def test_history_follows_parents_when_commits_share_a_timestamp(tmp_path):
    # Ten commits made within one second (a script, a rebase): sha order is not history order.
    from regress.core.history import history_order
    from regress.core.records import CommitInfo

    shas = [f"{(7919 * i) % 1000:03d}".ljust(40, "f") for i in range(10)]
    infos = [CommitInfo(sha, (shas[i - 1],) if i else (), "A", "a@x", 5, 5, f"c{i}") for i, sha in enumerate(shas)]
    assert [c.subject for c in history_order(list(reversed(infos)))] == [f"c{i}" for i in range(10)]
    # Unrelated commits (a parent not measured) fall back to their dates.
    loose = [
        CommitInfo("b" * 40, ("x" * 40,), "A", "a@x", 9, 9, "late"),
        CommitInfo("a" * 40, (), "A", "a@x", 1, 1, "early"),
    ]
    assert [c.subject for c in history_order(loose)] == ["early", "late"]
