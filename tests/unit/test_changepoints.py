"""Steps in fabricated histories: where they are, how big, and what is not a step."""

from __future__ import annotations

import math

import factories
import numpy as np
import pytest

from regress.analysis.changepoints import Step, find_steps
from regress.core.records import (
    BenchmarkResult,
    CommitResult,
    Fingerprint,
    Sample,
    TaskSpec,
)

SPEC = TaskSpec("f()", label="hist", sub_label="f")
OTHER = TaskSpec("g()", label="hist", sub_label="g")


def history(levels, *, spec=SPEC, rounds=3, noise=0.01, seed=0, extra=None) -> list[CommitResult]:
    """One commit per level (None: benchmark not measured there); rounds jitter around it."""
    rng = np.random.default_rng(seed)
    out = []
    for i, level in enumerate(levels):
        results = []
        if level is not None:
            # One noise draw per commit, as rounds of one run share their minutes.
            commit_level = level * math.exp(rng.normal(0, noise))
            samples = tuple(Sample(1, (commit_level * (1 + abs(rng.normal(0, noise / 3))),)) for _ in range(rounds))
            results.append(BenchmarkResult(spec, "b.py:1", samples))
        if extra is not None:
            results.append(extra[i])
        out.append(factories.commit(f"{i:040x}", *results, when=1000 + i, subject=f"commit {i}"))
    return out


def test_flat_noisy_history_has_no_steps():
    for seed in range(5):
        assert find_steps(history([1e-4] * 80, seed=seed, noise=0.02)) == []


def test_one_step_is_found_at_its_first_commit():
    levels = [1e-4] * 30 + [1.2e-4] * 30
    (step,) = find_steps(history(levels))
    assert isinstance(step, Step)
    assert step.index == 30 and step.sha == f"{30:040x}"
    assert step.direction == "regression" and step.span == 1 and step.end_sha == step.sha
    assert step.ratio == pytest.approx(1.2, rel=0.02)
    assert step.before == pytest.approx(1e-4, rel=0.02) and step.after == pytest.approx(1.2e-4, rel=0.02)
    assert step.p_value < 0.05


def test_improvement_and_regression_in_one_history():
    levels = [1e-4] * 25 + [0.8e-4] * 25 + [1.1e-4] * 25
    steps = find_steps(history(levels, seed=1))
    assert [(s.index, s.direction) for s in steps] == [(25, "improvement"), (50, "regression")]
    assert steps[0].ratio == pytest.approx(0.8, rel=0.03)
    assert steps[1].ratio == pytest.approx(1.1 / 0.8, rel=0.03)


def test_single_outlier_commit_is_not_a_step():
    for bad in (1.5, 3.0, 0.5):
        levels = [1e-4] * 40
        levels[20] = 1e-4 * bad
        assert find_steps(history(levels, seed=2)) == []


def test_two_commit_blip_that_comes_back_is_not_a_step():
    levels = [1e-4] * 40
    levels[15] = levels[16] = 1.4e-4
    assert find_steps(history(levels, seed=3)) == []


def test_step_at_the_end_needs_three_commits():
    assert find_steps(history([1e-4] * 30 + [1.3e-4])) == []
    assert find_steps(history([1e-4] * 30 + [1.3e-4] * 2)) == []
    (step,) = find_steps(history([1e-4] * 30 + [1.3e-4] * 3))
    assert step.index == 30


def test_gradual_slide_is_one_step_over_several_commits():
    # Five commits of +3% each: no single one crosses 5%, together +16%.
    levels = [1e-4] * 30 + [1e-4 * 1.03**k for k in range(1, 6)] + [1e-4 * 1.03**5] * 30
    steps = find_steps(history(levels, noise=0.005, seed=4))
    assert len(steps) == 1, steps
    (step,) = steps
    assert step.direction == "regression"
    assert 30 <= step.index <= 32 and step.span >= 2
    assert step.total == pytest.approx(1.03**5, rel=0.03)  # the slide's whole move, apart
    assert step.ratio < 1.03**4  # the step's own change is not the slide's


def test_a_steps_own_change_is_reported_not_the_segment_levels_of_a_climb():
    # +6.4% at commit 30, then a climb of +2% a commit to +15% in all: the step is +6.4%,
    # what compare across commit 30 says, and the climb's total comes apart with its span.
    climb = [1.064 * 1.02**k for k in range(1, 5)]
    levels = [1e-4] * 30 + [1.064e-4] + [1e-4 * c for c in climb] + [1e-4 * 1.064 * 1.02**4] * 30
    steps = find_steps(history(levels, noise=0.003, seed=5))
    first = steps[0]
    assert first.index == 30 and first.direction == "regression", steps
    assert first.ratio == pytest.approx(1.064, rel=0.02)
    assert first.before == pytest.approx(1e-4, rel=0.02)
    total = first.total if first.total is not None else math.prod(s.ratio for s in steps)
    assert total == pytest.approx(1.064 * 1.02**4, rel=0.03)
    assert first.span > 1 or len(steps) > 1


def test_step_below_threshold_is_not_reported():
    levels = [1e-4] * 30 + [1.03e-4] * 30
    assert find_steps(history(levels, noise=0.002), threshold=0.05) == []
    # Below the threshold of 2% it is one. Paired pushes: compare across it judges one run's
    # rounds (each commit its own run, it could not confirm 3% from three rounds a side).
    (step,) = find_steps(factories.pushes(levels, [1.0] * 60, seed=2), threshold=0.02)
    assert step.index == 30


def test_positions_count_commits_where_the_benchmark_was_not_measured():
    levels = [1e-4] * 20 + [None] * 5 + [1.25e-4] * 20
    extra = [BenchmarkResult(OTHER, "b.py:2", (Sample(1, (5e-5,)),)) for _ in levels]
    steps = find_steps(history(levels, extra=extra))
    assert [(s.id.sub_label, s.index) for s in steps] == [("f", 25)]


def test_short_history_has_no_steps():
    assert find_steps(history([1e-4, 2e-4, 2e-4])) == []
    assert find_steps([]) == []


def test_failed_commits_are_skipped():
    from regress.core.records import Failure

    h = history([1e-4] * 20 + [1.3e-4] * 20)
    broken = BenchmarkResult(SPEC, "b.py:1", failure=Failure("error", "boom"))
    h[5] = CommitResult(**{**h[5].__dict__, "results": (broken,)})
    (step,) = find_steps(h)
    assert step.index == 20


def test_commits_whose_rounds_disagree_are_left_out():
    """Five commits measured while the machine was never quiet: their fastest rounds disagree."""

    def with_excursion(settled: bool):
        h = history([1e-4] * 30 + [1e-4] * 30, seed=5)
        for i in range(20, 25):
            values = (1.3e-4, 1.3e-4, 1.3e-4) if settled else (1.3e-4, 1.6e-4, 2.2e-4)
            r = BenchmarkResult(SPEC, "b.py:1", tuple(Sample(1, (v,)) for v in values))
            h[i] = CommitResult(**{**h[i].__dict__, "results": (r,)})
        return h

    assert find_steps(with_excursion(settled=False)) == []
    # Had the rounds agreed, five commits at +30% would be real steps up and down.
    assert [(s.index, s.direction) for s in find_steps(with_excursion(settled=True))] == [
        (20, "regression"),
        (25, "improvement"),
    ]


def test_benchmark_using_every_core_needs_a_bigger_step():
    spec2 = TaskSpec("f()", label="hist", sub_label="f", num_threads=2)
    levels = [1e-4] * 30 + [1.07e-4] * 30
    on_two = [
        CommitResult(**{**c.__dict__, "fingerprint": Fingerprint("box", cores=2)})
        for c in history(levels, spec=spec2, noise=0.003)
    ]
    on_four = [CommitResult(**{**c.__dict__, "fingerprint": Fingerprint("box", cores=4)}) for c in on_two]
    assert find_steps(on_two) == []
    assert [s.index for s in find_steps(on_four)] == [30]


def test_a_wobble_in_the_newest_two_commits_does_not_swallow_the_step_before_it():
    # Eval p14: a 3x improvement at commit 4, then the newest two commits 7% lower still. The search cuts at
    # both, and the cuts are one slide; the newest pair is not a level yet, so the move ends before it
    # (it used to be dropped whole).
    levels = [135e-6] * 4 + [44.2e-6, 44.3e-6, 42.6e-6, 42.4e-6, 39.6e-6, 40.0e-6]
    (step,) = find_steps(history(levels, noise=0.003))
    assert step.index == 4 and step.direction == "improvement" and step.end_sha != f"{8:040x}"
    assert step.ratio == pytest.approx(44e-6 / 135e-6, rel=0.05)


def test_an_outlier_just_past_a_step_does_not_move_it():
    # Fabricated history 2: -10% at commit 37 and a +30% outlier commit two later. The running median that
    # clips outliers straddles both and used to pull commit 37 up to the old level: the cut came a commit
    # late, and compare across the wrong pair (two commits of the new level) refuted the step.
    for seed in range(4):
        levels = [4.0e-5] * 37 + [3.6e-5] * 23
        levels[39] = 4.76e-5
        (step,) = find_steps(history(levels, noise=0.004, seed=seed, rounds=10))
        assert step.index == 37 and step.direction == "improvement"


def test_compare_across_a_move_passes_over_an_outlier_commit_beside_it():
    # Fabricated history 9: after the commit before a move, an outlier +60% (then two ordinary commits of the
    # new stretch); compare against it would confirm any move. A commit between the two levels stays.
    from regress.analysis.changepoints import _typical

    raw = np.log([2.03, 2.03, 2.03, 3.29, 2.04, 2.03])
    assert _typical(raw, 3, 6, 3, float(raw[0]), 0.05) == 4
    raw = np.log([34.1, 34.7, 32.9, 38.7, 42.2, 42.1])  # eval p15: commit 3 is half-way, not an outlier
    assert _typical(raw, 3, 6, 3, float(np.median(raw[:3])), 0.05) == 3
    assert _typical(raw, 0, 3, 2, float(np.median(raw[3:])), 0.05) == 2
