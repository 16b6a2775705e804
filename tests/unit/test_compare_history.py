"""What compare reads of the history, read cheaply: each shortcut gives what the long way gives, to the bit.

The neighbours are judged from the summary's light results instead of their
files, the allowance for separate runs is pooled once per kind, and the
medians are taken without numpy's per-call cost; none of it may change a verdict.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pytest
from factories import bench, commit, rounds_of

from regress.analysis import diff, stats
from regress.core.records import BenchmarkId
from regress.storage import summary
from regress.storage.store import Store
from regress.storage.summary import light
from scripts.fabricate_history import fabricate

MACHINE, ENV = "ci-runner", "default"


def test_median_and_floor_gap_are_numpys_to_the_bit():
    rng = random.Random(18)
    for _ in range(3000):
        n = rng.randrange(1, 40)
        values = [rng.lognormvariate(-9, 0.3) for _ in range(n)]
        if rng.random() < 0.3:  # repeated readings: ties
            values = [round(v, 7) for v in values]
        for given in (values, tuple(values), np.asarray(values), np.asarray(values, dtype=np.float32)):
            assert stats.median(given) == float(np.median(np.asarray(given, dtype=float)))
        if n >= 2:  # as it was written with numpy (math.log, not np.log: numpy's SIMD log can differ in the last bit)
            low = np.sort(np.asarray(values, dtype=float))
            assert stats.floor_gap(values) == float(math.log(low[min(2, n - 1)] / low[0]))
    assert stats.median([3, 1, 2, 4]) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def _allowance_with_numpy(pairs, bid, cores):
    """diff.allowances as it was written before the pooled pairs were kept: every benchmark walks them all."""
    fixed = stats.drift_for(bid.num_threads, cores, apart=True)
    own = pairs.get(bid, [])
    if len(own) < diff.MIN_PAIRS:
        own = [
            d
            for other, ds in pairs.items()
            for d in ds
            if (bool(cores) and other.num_threads >= cores) == (bool(cores) and bid.num_threads >= cores)
        ]
    within = stats.drift_for(bid.num_threads, cores)  # no neighbouring pairs given: the fixed one
    if len(own) < diff.MIN_PAIRS:
        return diff.Allowance(fixed, 0, within)
    sigma = float(np.median(np.abs(np.asarray(own, dtype=float)))) / stats.Z_75
    stated = math.ceil(sigma / diff.STEP - 1e-9) * diff.STEP  # as it is stated: a tenth of a percent, rounded up
    assert sigma <= stated < sigma + diff.STEP
    return diff.Allowance(max(stated, fixed), len(own), within)


def test_pooled_allowances_are_each_benchmarks_own_rule():
    rng = random.Random(7)
    for trial in range(200):
        ids = [BenchmarkId("ops", f"b{k}", "", rng.choice((1, 2, 4))) for k in range(rng.randrange(1, 12))]
        pairs = {
            b: [rng.gauss(0, rng.choice((0.005, 0.03))) for _ in range(rng.randrange(0, 14))]
            for b in ids
            if rng.random() < 0.8
        }
        cores = rng.choice((0, 2, 4))
        given = diff.allowances(pairs, cores=cores)
        for b in [*ids, BenchmarkId("ops", "never-measured", "", 2)]:
            expected = _allowance_with_numpy(pairs, b, cores)
            assert given(b) == expected == diff.allowances(pairs, cores=cores)(b), (trial, b)


def _blip_history():
    # "blip": b alone sits 6% up; "stays": b moves 7% and stays; "calm" never moves. Each round's blocks
    # spread 30% within it, so the light copy (one figure a round) can't say what the files say of it.
    level = [1.00, 1.002, 1.004, 1.001, 1.003, 1.002]
    at = {"a": [], "b": [], "c": [], "d": []}
    for sub, moves in {"blip": (1, 1.06, 1, 1), "stays": (1, 1.07, 1.07, 1.07), "calm": (1, 1, 1, 1)}.items():
        for (name, side), f in zip(at.items(), moves):
            samples = rounds_of([v * f * 1e-3 for v in level], within=0.3)
            side.append(bench(sub=sub, samples=tuple(replace(s, run=f"run-{name}") for s in samples)))
    return {name: commit(name, *side) for name, side in at.items()}


def test_light_neighbours_give_the_verdicts_their_files_give():
    c = _blip_history()
    checked = 0
    for base, head, before, after in (("a", "b", None, "c"), ("b", "c", "a", "d"), ("a", "c", None, "d")):
        b, h = c[base], c[head]
        nb, na = (c[n] if n else None for n in (before, after))
        verdicts = diff.compare(b, h)
        full = diff.with_neighbours(verdicts, b, h, nb, na, threshold=0.05)
        lean = diff.with_neighbours(
            verdicts, b, h, *(None if x is None else light(x) for x in (nb, na)), threshold=0.05
        )
        assert lean == full
        checked += full != verdicts
    assert checked  # the rule did change a verdict: the comparison above can fail
    judged = diff.with_neighbours(diff.compare(c["a"], c["b"]), c["a"], c["b"], None, c["c"], threshold=0.05)
    kinds = {v.id.sub_label: v.verdict for v in judged}
    assert kinds == {"blip": "noisy", "stays": "regression", "calm": "unchanged"}
    (blipped,) = [v for v in judged if v.id.sub_label == "blip"]
    assert "but a blip" in blipped.reason and diff.basis(blipped.reason).startswith("separate runs: allowance")


def test_light_neighbours_of_a_fabricated_history_give_the_verdicts_their_files_give(tmp_path):
    fabricate(tmp_path, commits=30, benchmarks=24, machines=(MACHINE,))
    store = Store(tmp_path)
    full = store.history(MACHINE, ENV)
    lean = {sha: r for sha, r in summary.light_of(store, MACHINE, ENV, [r.commit.sha for r in full]).items()}
    assert len(lean) == len(full)
    changes = 0
    for k in range(1, len(full) - 2):
        before, base, head, after = full[k - 1 : k + 3]
        pairs = {r.id: [0.01, -0.02, 0.015, 0.0, -0.01, 0.02, 0.005, -0.004] for r in head.results}
        apart = diff.allowances(pairs, cores=4)
        verdicts = diff.compare(base, head, apart=apart)
        expected = diff.with_neighbours(verdicts, base, head, before, after, threshold=0.05, apart=apart)
        got = diff.with_neighbours(
            verdicts, base, head, lean[before.commit.sha], lean[after.commit.sha], threshold=0.05, apart=apart
        )
        assert got == expected, k
        changes += sum(v.verdict in ("regression", "improvement") for v in verdicts)
    assert changes  # the neighbour rule had verdicts to look at


def test_the_integer_unique_is_numpys():
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 100, 5000):
        for span in (1, 3, 50, 10**12):
            values = rng.integers(0, span, size=n, dtype=np.int64)
            found, counts = stats.unique(values, counts=True)
            expected, index, expected_counts = np.unique(values, return_inverse=True, return_counts=True)
            assert np.array_equal(found, expected) and np.array_equal(counts, expected_counts)
            assert np.array_equal(stats.unique(values), np.unique(values))
            got, inverse = stats.unique(values, inverse=True)
            assert np.array_equal(got, expected) and np.array_equal(inverse, index.reshape(-1))
