"""The differ on fabricated rounds: no timing, every number chosen, every verdict deterministic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from factories import bench, commit, noisy_rounds, rounds_of

from regress.analysis import diff, stats
from regress.analysis.diff import Verdict, compare
from regress.analysis.judge import judge
from regress.core.records import (
    BenchmarkResult,
    CommitResult,
    Failure,
    Fingerprint,
    TaskSpec,
)


def one(base_values, head_values, *, threshold=0.05, **kw) -> Verdict:
    return judge(bench(base_values, **kw), bench(head_values, **kw), threshold=threshold)


# -- the four cases the issue names -----------------------------------------


def test_identical_distributions_are_unchanged():
    values = noisy_rounds(1e-4, 10, seed=1)
    v = one(values, values)
    assert v.verdict == "unchanged", v.reason
    assert v.ratio == pytest.approx(1.0)
    assert v.p_value == pytest.approx(1.0)
    assert v.ci_low <= 1.0 <= v.ci_high


@pytest.mark.parametrize("seed", range(6))
def test_two_draws_of_one_distribution_are_unchanged(seed):
    v = one(noisy_rounds(1e-4, 10, seed=seed), noisy_rounds(1e-4, 10, seed=100 + seed))
    assert v.verdict == "unchanged", v.reason
    assert abs(v.ratio - 1) < 0.02


@pytest.mark.parametrize(
    "factor, verdict", [(1.10, "regression"), (1.25, "regression"), (1 / 1.10, "improvement"), (0.5, "improvement")]
)
def test_clear_shift_beyond_threshold(factor, verdict):
    v = one(noisy_rounds(1e-4, 10, seed=3), noisy_rounds(1e-4 * factor, 10, seed=4))
    assert v.verdict == verdict, v.reason
    assert v.ratio == pytest.approx(factor, rel=0.02)
    assert v.p_value < stats.ALPHA
    assert v.ci_low <= v.ratio <= v.ci_high
    word = "slower" if factor > 1 else "faster"
    assert word in v.reason and "interval" in v.reason


def test_shift_at_the_threshold_is_reported():
    # A 5% slowdown is worth reporting at a 5% threshold even when drift
    # between runs makes it look like 4.5%.
    v = one(noisy_rounds(1e-4, 10, seed=5), noisy_rounds(1.045e-4, 10, seed=6))
    assert v.verdict == "regression", v.reason


def test_shift_below_threshold_is_unchanged():
    v = one(noisy_rounds(1e-4, 10, seed=7, busy=0), noisy_rounds(1.015e-4, 10, seed=8, busy=0))
    assert v.verdict == "unchanged", v.reason
    assert v.ratio == pytest.approx(1.015, rel=0.01)


def test_real_change_below_threshold_says_so():
    tight = [1e-4 * (1 + 0.0005 * k) for k in range(10)]
    v = one(tight, [t * 1.10 for t in tight], threshold=0.25)
    assert v.verdict == "unchanged"
    assert "real change" in v.reason and "25% threshold" in v.reason
    assert v.ci_low > 1.0


def test_threshold_decides_what_is_worth_reporting():
    base, head = noisy_rounds(1e-4, 10, seed=9), noisy_rounds(1.12e-4, 10, seed=10)
    assert one(base, head, threshold=0.05).verdict == "regression"
    assert one(base, head, threshold=0.5).verdict == "unchanged"


def test_wildly_spread_samples_are_noisy_and_say_why():
    rng = np.random.default_rng(11)
    v = one((1e-4 * rng.uniform(1, 3, 10)).tolist(), (1e-4 * rng.uniform(1, 3, 10)).tolist())
    assert v.verdict == "noisy", v.reason
    assert "fastest rounds" in v.reason and "disagree" in v.reason
    assert "--measure" in v.reason
    assert v.rounds_needed >= stats.RECOMMENDED_ROUNDS


def test_noisy_mentions_torch_iqr_warning_and_threads():
    rng = np.random.default_rng(12)
    kw = dict(threads=2, within=0.8)
    v = one((1e-4 * rng.uniform(1, 3, 10)).tolist(), (1e-4 * rng.uniform(1, 3, 10)).tolist(), **kw)
    assert v.verdict == "noisy"
    assert "IQR within a round" in v.reason and "torch" in v.reason
    assert "2 threads" in v.reason


def test_too_few_rounds_is_noisy_and_asks_for_more():
    v = one([1e-4], [2e-4])
    assert v.verdict == "noisy"
    assert v.ratio == pytest.approx(2.0)
    assert "only 1 round(s) of base and 1 of head" in v.reason
    assert v.rounds_needed == stats.RECOMMENDED_ROUNDS
    assert v.p_value is None and v.base_iqr is None


def test_slow_rounds_from_a_busy_machine_do_not_move_the_level():
    """Half of head's rounds ran while the machine was busy: the floor is what counts."""
    base = noisy_rounds(1e-4, 10, seed=13, busy=0)
    head = [v * (2.0 if i % 2 else 1.0) for i, v in enumerate(noisy_rounds(1e-4, 10, seed=14, busy=0))]
    v = one(base, head)
    assert v.verdict == "unchanged", v.reason
    assert v.ratio == pytest.approx(1.0, abs=0.01)


def test_levels_are_fastest_round_of_fastest_blocks():
    b = bench([3e-4, 2e-4, 4e-4, 2.01e-4])
    h = bench([2.2e-4, 2.2e-4, 2.3e-4, 2.21e-4])
    v = judge(b, h)
    assert v.base_level == pytest.approx(2e-4) and v.head_level == pytest.approx(2.2e-4)
    assert v.ratio == pytest.approx(1.1)
    assert v.base_rounds == v.head_rounds == 4
    q1, q3 = np.percentile([3e-4, 2e-4, 4e-4, 2.01e-4], [25, 75])
    assert v.base_iqr == pytest.approx(q3 - q1)


def test_verdicts_are_deterministic():
    base, head = noisy_rounds(1e-4, 10, seed=15), noisy_rounds(1.05e-4, 10, seed=16)
    assert one(base, head) == one(base, head)


def test_changed_definition_is_noted():
    b = bench(noisy_rounds(1e-4, 10, seed=17))
    h = BenchmarkResult(
        TaskSpec("other()", label="ops", sub_label="add"), "x", rounds_of(noisy_rounds(1e-4, 10, seed=18))
    )
    assert "definition differs" in judge(b, h).reason


def test_shift_interval_never_narrower_than_drift_between_runs():
    same = [1e-4] * 10
    s = stats.shift(same, [v * 1.01 for v in same])
    # Identical rounds within each run, but 1% between runs is within drift.
    assert s.low < 1.0 < s.high
    assert not s.significant
    assert math.log(s.high / s.ratio) == pytest.approx(stats.Z * stats.DRIFT, rel=0.01)


# -- whole commits -------------------------------------------------------------


def test_compare_new_missing_failed_and_order():
    steady = noisy_rounds(1e-4, 10, seed=20)
    base = commit(
        "a",
        bench(steady, sub="same"),
        bench(steady, sub="slower"),
        bench(steady, sub="gone"),
        bench(steady, sub="breaks"),
        bench(steady, sub="fixed", threads=2),
        bench(steady, label="alpha", sub="x"),
    )
    broken = BenchmarkResult(
        TaskSpec("breaks()", label="ops", sub_label="breaks"),
        "o",
        failure=Failure("error", "ValueError: boom", "bench_ops.py:9"),
    )
    base = CommitResult(
        **{
            **base.__dict__,
            "results": base.results
            + (
                BenchmarkResult(
                    TaskSpec("f()", label="ops", sub_label="fixed2"), "o", failure=Failure("crash", "segfault")
                ),
            ),
        }
    )
    head = commit(
        "b",
        bench(noisy_rounds(1e-4, 10, seed=21), sub="same"),
        bench(noisy_rounds(1.3e-4, 10, seed=22), sub="slower"),
        broken,
        bench(steady, sub="fixed", threads=2),
        bench(steady, sub="fixed2"),
        bench(steady, sub="brand new"),
        bench(steady, label="alpha", sub="x"),
    )
    verdicts = compare(base, head)
    got = [(v.id.label, v.id.num_threads, v.id.sub_label, v.verdict) for v in verdicts]
    assert got == [
        ("alpha", 1, "x", "unchanged"),
        ("ops", 1, "slower", "regression"),
        ("ops", 1, "breaks", "failed"),
        ("ops", 1, "brand new", "new"),  # Kind's one order: new before missing
        ("ops", 1, "fixed2", "new"),
        ("ops", 1, "gone", "missing"),
        ("ops", 1, "same", "unchanged"),
        ("ops", 2, "fixed", "unchanged"),
    ]
    by = {v.id.sub_label: v for v in verdicts}
    assert "ValueError: boom" in by["breaks"].reason and by["breaks"].base_level is not None
    assert by["gone"].head_level is None and by["gone"].ratio is None and "no longer exists" in by["gone"].reason
    assert by["brand new"].base_level is None and by["brand new"].head_rounds == 10
    assert "failed at base" in by["fixed2"].reason


def test_compare_against_unmeasured_commits():
    c = commit("a", bench([1e-4] * 3))
    assert [v.verdict for v in compare(None, c)] == ["new"]
    assert [v.verdict for v in compare(c, None)] == ["missing"]
    assert compare(None, None) == []


def test_missing_because_of_build_or_suite_failure_is_failed():
    base = commit("a", bench([1e-4] * 3))
    head = commit("b", failures=[Failure("build", "exited with status 1", "make")])
    (v,) = compare(base, head)
    assert v.verdict == "failed" and "build" in v.reason
    head = commit("b", failures=[Failure("suite", "SyntaxError: bad", "benchmarks/bench_ops.py:2")])
    (v,) = compare(base, head)
    assert v.verdict == "failed" and "SyntaxError" in v.reason
    head = commit("b", complete=False)
    (v,) = compare(base, head)
    assert v.verdict == "missing" and "interrupted" in v.reason
    head = commit("b", bench_filter="other")
    (v,) = compare(base, head)
    assert v.verdict == "missing" and "--bench" in v.reason


def test_benchmark_using_every_core_gets_a_wider_drift_allowance():
    tight = [1e-4 * (1 + 0.0005 * k) for k in range(10)]
    base_r, head_r = bench(tight, threads=2), bench([t * 1.07 for t in tight], threads=2)

    def on(cores):
        base, head = commit("a", base_r), commit("b", head_r)
        fp = Fingerprint("box", cores=cores)
        return compare(
            CommitResult(**{**base.__dict__, "fingerprint": fp}), CommitResult(**{**head.__dict__, "fingerprint": fp})
        )[0]

    assert on(4).verdict == "regression"
    spare = on(2)
    assert spare.verdict == "noisy" and "all 2 cores" in spare.reason and spare.rounds_needed is None
    assert on(0).verdict == "regression"  # cores unknown: the usual allowance


def test_every_core_benchmark_switching_modes_is_noisy():
    # Base's run never reached the fast mode; head's did: 3x apart, both floors settled.
    slow_mode = [3e-4 * (1 + 0.001 * k) for k in range(7)] + [9e-4, 3e-3, 2e-2]
    fast_mode = [1e-4 * (1 + 0.001 * k) for k in range(7)] + [3e-4, 4e-4, 3e-3]
    base = CommitResult(
        **{**commit("a", bench(slow_mode, threads=2)).__dict__, "fingerprint": Fingerprint("box", cores=2)}
    )
    head = CommitResult(
        **{**commit("b", bench(fast_mode, threads=2)).__dict__, "fingerprint": Fingerprint("box", cores=2)}
    )
    (v,) = compare(base, head)
    assert v.verdict == "noisy" and "fast and a slow mode" in v.reason and v.ratio == pytest.approx(1 / 3)
    on_four = [CommitResult(**{**c.__dict__, "fingerprint": Fingerprint("box", cores=4)}) for c in (base, head)]
    assert compare(*on_four)[0].verdict == "improvement"


def test_skipped_at_head_is_missing_not_failed():
    base = commit("a", bench([1e-4] * 3))
    skipped = BenchmarkResult(
        TaskSpec("add()", label="ops", sub_label="add"), "o", failure=Failure("skipped", "needs CUDA")
    )
    (v,) = compare(base, commit("b", skipped))
    assert v.verdict == "missing" and "needs CUDA" in v.reason and v.base_level == pytest.approx(1e-4)


def test_negative_threshold_is_refused():
    with pytest.raises(ValueError):
        compare(None, None, threshold=-0.1)


def test_a_run_on_a_busy_machine_widens_the_interval():
    calm = [1e-4 * (1 + 0.001 * k) for k in range(10)]
    busy = calm[:3] + [v * 2 for v in calm[3:]]  # 7 of 10 rounds slowed: the floor is suspect too
    s_calm, s_busy = stats.shift(calm, calm), stats.shift(calm, busy)
    assert s_calm.ratio == s_busy.ratio == pytest.approx(1.0)
    assert math.log(s_busy.high / s_busy.low) > 1.5 * math.log(s_calm.high / s_calm.low)


def test_a_significant_shift_with_a_small_estimate_is_noisy_not_a_verdict(monkeypatch):
    # A busy machine's A/A: the interval excludes no change and reaches -5%, but the estimate is -2.4%.
    base = noisy_rounds(1.0, 5, seed=578, jitter=0.02, busy=0.2)
    head = noisy_rounds(0.98, 5, seed=5578, jitter=0.02, busy=0.2)
    v = one(base, head)
    assert v.verdict == "noisy" and "best estimate is under half the 5% threshold" in v.reason
    assert v.ci_high < 1.0 and v.ci_low <= 1 / 1.05 and abs(v.ratio - 1) < 0.025
    import regress.analysis.modes

    monkeypatch.setattr(stats, "MIN_ESTIMATE_SHARE", 0.0)
    monkeypatch.setattr(regress.analysis.modes, "ALPHA", 0.0)  # nor a slow mode's luck
    assert one(base, head).verdict == "improvement"  # what the interval alone would have said


def test_the_neighbour_rule_added_to_verdicts_is_compare_with_the_neighbours():
    # compare judges each benchmark once and then adds the blip rule; the result is the one-pass compare's,
    # for a blip at head, a blip at base, a change that stays, one that was undone and a benchmark missing.
    level = [1.00, 1.002, 1.004, 1.001, 1.003, 1.002]
    at = {"a": {}, "b": {}, "c": {}, "d": {}}
    for sub, moves in {"blip": (1, 1.06, 1, 1), "stays": (1, 1.07, 1.07, 1.07), "calm": (1, 1, 1, 1)}.items():
        for side, f in zip(at.values(), moves):
            side[sub] = bench([v * f for v in level], sub=sub)
    at["a"]["early"] = bench([v * 0.9 for v in level], sub="early")
    for name in "bcd":
        at[name]["early"] = bench(level, sub="early")
    del at["d"]["calm"]
    c = {name: commit(name, *side.values()) for name, side in at.items()}
    for base, head, before, after in (("a", "b", None, "c"), ("b", "c", "a", "d"), ("a", "b", None, None)):
        b, h = c[base], c[head]
        nb, na = (c[n] if n else None for n in (before, after))
        once = compare(b, h, before=nb, after=na)
        assert diff.with_neighbours(compare(b, h), b, h, nb, na, threshold=0.05) == once
    kinds = {v.id.sub_label: v.verdict for v in compare(c["a"], c["b"], after=c["c"])}
    assert kinds["blip"] == "noisy" and kinds["stays"] == "regression"
