"""A long history's sealed prefix (analysis/sealed.py): the search carried on from a kept prefix finds what
the search from scratch finds, a prefix made from other commits is never used, the sealed levels stay put
as commits are added, and the site build keeps it (report/prefix_cache.py) and reads back the same site."""

from __future__ import annotations

import dataclasses
import sqlite3

import factories
import numpy as np
import pytest
from chart_data import made

from regress.analysis import changepoints, sealed, sealed_fit, trusted_levels
from regress.analysis.partition import cuts_of, search
from regress.analysis.table import Table
from regress.report import prefix_cache
from regress.report import site as report_site
from regress.storage import memo, summary
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

N = sealed.SEAL + 150
STEPS = (300, 1060, 1120)


def _pushes(n: int) -> list:
    """The first n pushes of a push history past one seal: every push its own run on its own runner,
    paired with its parent (the same first n whatever n: each push draws its noise in turn)."""
    rng = np.random.default_rng(1)
    truth = [1e-3] * N
    for k in STEPS:
        truth[k:] = [v * 1.15 for v in truth[k:]]
    return factories.pushes(truth[:n], list(np.exp(rng.normal(0, 0.03, N)))[:n], seed=2)


@pytest.fixture(scope="module")
def history():
    return _pushes(N)


def test_the_push_just_past_a_seal_keeps_the_prefix_and_every_older_chart_level():
    """The push of commit SEAL measures commit SEAL-1 again: a newer run's rows at a sealed position,
    which leave the sealed part as it was (the search's and the chart's), to the bit."""
    before, after = Table.of(_pushes(sealed.SEAL)), Table.of(_pushes(sealed.SEAL + 1))
    assert len(after.history[sealed.SEAL - 1].runs) == 2 > len(before.history[sealed.SEAL - 1].runs)
    kept = changepoints.search(before).prefix
    carried = changepoints.search(after, kept=kept)
    assert kept is not None and not carried.changed
    assert carried.found == changepoints.search(after).found
    old, prefix = sealed_fit.chart(before)
    new, again = sealed_fit.chart(after, kept=prefix)
    assert again.digest == prefix.digest and again.levels is prefix.levels
    (old,), (new,) = [{bid: _points(line) for bid, line in c.items()}.values() for c in (old, new)]
    assert {p: v for p, v in new.items() if p < sealed.SEAL} == old and sealed.SEAL in new
    fresh = {bid: _points(line) for bid, line in sealed_fit.chart(after)[0].items()}
    assert fresh == {b: new for b in fresh}  # kept or not, the same


def test_a_history_that_ends_on_a_seal_is_carried_on_by_the_push_after_it():
    """At exactly SEAL commits every level is sealed; the next push's level is the first the last
    sealed ones' clipping reads. Where it moves their clipped values (an outlier among them), the
    search still carries on from the kept checkpoints (the centre is the checkpoint's levels'), not
    from scratch (16 s at 10,000 commits), and finds what the search from scratch finds."""
    half = sealed.SEAL // 2
    # Half the history a step up; the last sealed level back down, clipped up to the newer level while it
    # is the last (its window mirrored), not once the next push's level agrees with it: it crosses the
    # middle of the sealed levels.
    truth = [1e-3] * half + [1.2e-3] * (sealed.SEAL - 1 - half) + [1e-3, 1e-3]
    noise = np.exp(np.random.default_rng(4).normal(0, 0.005, len(truth)))
    runs = factories.pushes(truth, list(noise), seed=3, paired=False)
    before, after = Table.of(runs[:-1]), Table.of(runs)
    kept = changepoints.search(before).prefix
    carried = changepoints.search(after, kept=kept)
    assert kept is not None and not carried.changed
    assert carried.found == changepoints.search(after).found


def _points(line) -> dict[int, float]:
    positions, levels = line
    assert (np.diff(positions) > 0).all()
    return dict(zip(positions.tolist(), levels.tolist()))


def test_carried_on_from_the_kept_prefix_the_search_finds_what_it_finds_from_scratch(history):
    before = changepoints.search(Table.of(history[:-1]))
    assert before.prefix is not None and before.changed and len(before.prefix.checkpoints) == 1
    # Candidates are moves compare may call a change (half the threshold); compare across them keeps the steps.
    assert set(STEPS) <= {c.start for c in before.found}
    assert [s.index for s in changepoints.find_steps(Table.of(history[:-1]), found=before.found)] == list(STEPS)
    again = changepoints.search(Table.of(history[:-1]), kept=before.prefix)
    assert again.found == before.found and not again.changed  # nothing new to keep
    table = Table.of(history)
    carried = changepoints.search(table, kept=before.prefix)
    fresh = changepoints.search(table)
    assert carried.found == fresh.found and set(STEPS) <= {c.start for c in fresh.found}
    assert not carried.changed  # one more commit past the seal: the prefix is the same
    kept = trusted_levels.sealed_series(table, kept=before.prefix)[0]
    assert kept == trusted_levels.sealed_series(table)[0]


def test_a_prefix_made_from_other_sealed_commits_is_not_used(history):
    kept = changepoints.search(Table.of(history)).prefix
    # Commit 500 measured again, 30% slower, by a run of its own: a sealed commit changed.
    slow = factories.pushes([1.3e-3], [1.0], seed=9)[0].results[0]
    again = factories.in_run(slow, "20270101T000000-again")
    edited = list(history)
    edited[500] = dataclasses.replace(
        history[500],
        results=(
            dataclasses.replace(history[500].results[0], samples=history[500].results[0].samples + again.samples),
        ),
    )
    table = Table.of(edited)
    carried = changepoints.search(table, kept=kept)
    assert carried.changed and carried.prefix.digest != kept.digest
    assert carried.found == changepoints.search(table).found


def test_the_sealed_levels_stay_put_as_commits_are_added(history):
    (short,) = trusted_levels.series(history[: N - 100]).values()
    (longer,) = trusted_levels.series(history).values()
    below = [(p, v) for p, v in zip(*short) if p < sealed.SEAL - 1]
    assert below and below == [(p, v) for p, v in zip(*longer) if p < sealed.SEAL - 1]


def test_a_history_shorter_than_one_seal_keeps_nothing(history):
    found = changepoints.search(Table.of(history[: sealed.SEAL - 1]))
    assert found.prefix is None and not found.changed


def test_the_kept_prefix_reads_back_and_garble_reads_as_none(history):
    prefix = changepoints.search(Table.of(history)).prefix
    back = prefix_cache.decode(prefix_cache.encode(prefix))
    assert back.digest == prefix.digest and back.levels.keys() == prefix.levels.keys()
    for bid, part in prefix.levels.items():
        assert np.array_equal(back.levels[bid].positions, part.positions)
        assert np.array_equal(back.levels[bid].log_levels, part.log_levels) and back.levels[bid].cpu == part.cpu
        mark, got = prefix.checkpoints[bid], back.checkpoints[bid]
        assert (got.t, got.digest) == (mark.t, mark.digest) and np.array_equal(got.back, mark.back)
        assert all(np.array_equal(got.slots[k], v) for k, v in mark.slots.items())
    assert changepoints.search(Table.of(history), kept=back).found == changepoints.search(Table.of(history)).found
    assert prefix_cache.decode(b"not an npz") is None and prefix_cache.decode(None) is None


def test_the_search_resumed_from_a_checkpoint_gives_the_optimum():
    rng = np.random.default_rng(5)
    series = []
    for n in (0, 1, 3, 40, 400, 900):
        x = rng.normal(size=n)
        for _ in range(3):
            x[int(rng.integers(0, max(n, 1))) :] += rng.choice([-6, 6])
        series.append(x)
    keep = [max(len(x) - 30, 0) for x in series]
    _, marks = search([x[: len(x) - 10] for x in series], 20.0, 2, keep_at=keep)
    assert [m is not None for m in marks] == [k > 0 for k in keep]
    resumed, _ = search(series, 20.0, 2, resume=marks)
    assert resumed == cuts_of(series, 20.0, 2)
    other = [x + 1.0 for x in series]  # other first points: every checkpoint ignored
    assert search(other, 20.0, 2, resume=marks)[0] == cuts_of(other, 20.0, 2)


def test_the_site_build_keeps_the_prefix_and_an_incremental_build_reads_back_as_a_full_one(tmp_path):
    results = tmp_path / "results"
    shape = {"commits": sealed.SEAL + 12, "benchmarks": 4, "rounds": "5-6", "times": "3-4"}
    fabricate(results, machines=("ci-runner",), which=range(sealed.SEAL + 11), **shape)
    store = Store(results)
    report_site.build(store, tmp_path / "site")

    def kept():
        with sqlite3.connect(results / summary.FILE) as db:
            rows = db.execute("SELECT inputs, value FROM memo WHERE kind = 'prefix'").fetchall()
        db.close()
        return rows

    (first,) = kept()
    assert prefix_cache.decode(memo.decode(first[1]).tobytes()) is not None
    fabricate(results, machines=("ci-runner",), which=[sealed.SEAL + 11], **shape)
    report_site.build(Store(results), tmp_path / "site", incremental=True)
    assert kept() == [first]  # the same prefix served the build after one more commit
    with sqlite3.connect(results / summary.FILE) as db:
        db.execute("DELETE FROM memo")
    db.close()
    report_site.build(Store(results), tmp_path / "afresh")

    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    assert files(tmp_path / "site") == files(tmp_path / "afresh")


def test_a_paired_site_past_a_seal_keeps_its_settled_chart_files_unmade_and_reads_back_as_a_full_build(tmp_path):
    """Past a seal, the chart's levels below every newer run's reach are the sealed fit's alone
    (`sealed_fit.chart_fixed`): their files are kept by their settled key (report/settled.py) after a
    paired push, never made, and the site is the one a full build makes."""
    results = tmp_path / "results"
    shape = {"commits": sealed.SEAL + 12, "benchmarks": 2, "rounds": "3", "times": "3", "paired": True}
    fabricate(results, machines=("ci-runner",), which=range(sealed.SEAL + 11), **shape)
    report_site.build(Store(results), tmp_path / "site")
    fabricate(results, machines=("ci-runner",), which=[sealed.SEAL + 11], **shape)
    with made() as found:
        report_site.build(Store(results), tmp_path / "site", incremental=True)
    made_at = {k for _, _, k in found}
    # Positions 0-499 settled; 500-999 hold 999, which the push at 1000 measured again in a newer run.
    assert 0 not in made_at and 500 in made_at and sealed.SEAL in made_at
    report_site.build(Store(results), tmp_path / "full")

    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    assert files(tmp_path / "site") == files(tmp_path / "full")
