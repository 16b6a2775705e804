"""Slow modes (analysis/modes.py) on real rounds recorded on a machine that flips between two speeds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from factories import bench, commit, in_run

from regress.analysis import diff, modes
from regress.core.records import Sample
from regress.measure import adaptive

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "modal" / "range_rounds.json"
RECORDED = json.loads(FIXTURE.read_text())
PLANTED = RECORDED["planted"]


def samples(rows) -> tuple[Sample, ...]:
    return tuple(Sample(r["number_per_run"], tuple(r["raw_times"]), run=r["run"], process=r["process"]) for r in rows)


def value(s: Sample) -> float:
    return min(s.raw_times) / s.number_per_run


def recorded(k: int, sub: str, keep=None, first: int | None = None):
    """Commit k of the recorded range with benchmark `sub` (its rounds, or the `first` of those `keep` picks)."""
    got = samples(RECORDED["commits"][k]["benchmarks"][sub])
    if keep is not None:
        got = tuple(s for s in got if keep(s))[:first]
    sha = RECORDED["commits"][k]["sha"]
    return commit(sha, bench(sub=sub, samples=got))


def only(v_list, sub):
    (v,) = [v for v in v_list if v.id.sub_label == sub]
    return v


def test_the_recorded_rounds_fall_in_two_modes():
    for sub in ("add 64", "mul 16384"):
        groups = [[value(s) for s in samples(c["benchmarks"][sub])] for c in RECORDED["commits"]]
        seen = modes.detect(modes.relative(groups))
        assert seen is not None and 1.4 < seen.ratio < 2.0 and 0.2 < seen.share < 0.8


def test_a_commit_whose_few_rounds_all_fell_in_the_slow_mode_is_not_called_a_change(monkeypatch):
    # mul 16384 at c0 and c1 is the same code. c1's five rounds in the slow mode (every one of them 1.6x
    # above c0's floor, agreeing with each other within 10%) against all of c0's: not a regression.
    base = recorded(0, "mul 16384")
    floor = min(value(s) for s in base.results[0].samples)
    head = recorded(1, "mul 16384", keep=lambda s: value(s) > 1.5 * floor, first=5)
    assert len(head.results[0].samples) == 5
    v = only(diff.compare(base, head), "mul 16384")
    assert v.verdict == "noisy" and v.ratio > 1.5
    assert "may all have landed in a slow mode" in v.reason and v.rounds_needed > len(head.results[0].samples)
    # What the floors alone would have said (no slow-mode rule): a confident, wrong +60%.
    monkeypatch.setattr(modes, "ALPHA", 0.0)
    assert only(diff.compare(base, head), "mul 16384").verdict == "regression"


def test_the_round_plan_takes_rounds_until_the_fast_mode_had_its_chance():
    base = [value(s) for s in samples(RECORDED["commits"][0]["benchmarks"]["mul 16384"])]
    slow = [
        v for v in (value(s) for s in samples(RECORDED["commits"][1]["benchmarks"]["mul 16384"])) if v > 1.5 * min(base)
    ]
    budget = adaptive.Budget(min_rounds=5, max_rounds=40, seconds=1e9)
    assert adaptive.wants_round(slow[:5], budget, 0.0, [base])
    # The neighbour's rounds land that high about half the time: ~8 agreeing slow rounds rule it out.
    p = modes.share(modes.relative([base]), math.log(min(slow) / min(base)))
    assert 0.3 < p < 0.8
    assert modes.rounds_to_rule_out(p) == pytest.approx(math.log(modes.ALPHA) / math.log(p), abs=1)
    # A round in the fast mode settles it: the commit's floor is then level with its neighbour's.
    assert not adaptive.wants_round(
        [*slow[:5], min(base) * 1.002, min(base) * 1.003, min(base) * 1.005], budget, 0.0, [base]
    )
    # So do enough agreeing slow rounds: all of them landing there by luck is then unlikely.
    enough = [slow[k % len(slow)] for k in range(modes.rounds_to_rule_out(p) + 1)]
    assert modes.luck([base], [enough]) is None and modes.luck([base], [enough[:5]]) is not None


def test_a_slow_mode_test_takes_the_rounds_it_asks_for_beyond_max_rounds():
    # mul 16384 at c0 and c1 is the same code; c1's rounds all in the slow mode, at the plan's cap of 5.
    base = [value(s) for s in samples(RECORDED["commits"][0]["benchmarks"]["mul 16384"])]
    slow = [
        v for v in (value(s) for s in samples(RECORDED["commits"][1]["benchmarks"]["mul 16384"])) if v > 1.5 * min(base)
    ]
    plan = adaptive.Budget(min_rounds=3, max_rounds=5, seconds=1e9)
    assert modes.luck([base], [slow[:5]]).needed > 5
    assert adaptive.wants_round(slow[:5], plan, 0.0, [base])  # the verdict waits on these rounds: more of them
    assert not adaptive.wants_round(base, plan, 0.0, [slow[:5]])  # the faster side is not the one asked
    assert not adaptive.wants_round(slow[:5], plan, plan.seconds, [base])  # the budget still ends it
    fixed = adaptive.Budget(min_rounds=5, max_rounds=5, seconds=1e9)
    assert not adaptive.wants_round(slow[:5], fixed, 0.0, [base])  # a count asked for is exactly that
    # A real change of the same size with the neighbour's rounds all fast: no slow mode to rule out.
    quiet = [1e-4 * (1 + 0.002 * k) for k in range(5)]
    assert not adaptive.wants_round([1.6 * v for v in quiet], plan, 0.0, [quiet])


def test_every_adjacent_pair_of_the_recorded_modal_range_is_judged_right():
    # Real rounds of one default range run beside the modal neighbour: with the neighbours' rule, every planted
    # change of 1.3x or more is found and no A/A pair is called a change (c8's mul 16384 sits 20% up, alone).
    n = len(RECORDED["commits"])
    results = []
    for k in range(n):
        benches = [bench(sub=sub, samples=samples(rows)) for sub, rows in RECORDED["commits"][k]["benchmarks"].items()]
        results.append(commit(RECORDED["commits"][k]["sha"], *benches))
    found = alarms = 0
    # As `regress compare` judges: with the history's allowances, what commits of one run differ by included.
    apart = diff.Apart(results, {})
    for k in range(1, n):
        planted = RECORDED["commits"][k]["planted"]
        before = results[k - 2] if k >= 2 else None
        after = results[k + 1] if k + 1 < n else None
        for v in diff.compare(results[k - 1], results[k], before=before, after=after, apart=apart):
            op = v.id.sub_label.split()[0]
            if op == planted and abs(math.log(PLANTED[op])) >= math.log(1.3) - 1e-9:
                found += v.verdict == ("regression" if PLANTED[op] > 1 else "improvement")
            elif op != planted:
                alarms += v.verdict in ("regression", "improvement")
    assert alarms == 0
    assert found == 4  # add 64 and add 16384 at 2x, mul 16384 at 0.33x, sin 64 at 1.3x


def test_a_real_change_on_a_machine_without_modes_needs_no_more_rounds():
    quiet = [1e-4 * (1 + 0.002 * k) for k in range(5)]
    slower = [1.1e-4 * (1 + 0.002 * k) for k in range(5)]
    assert modes.luck([quiet], [slower]) is None
    v = only(diff.compare(commit("a", bench(quiet, sub="x")), commit("b", bench(slower, sub="x"))), "x")
    assert v.verdict == "regression"


def test_luck_is_read_per_run_and_from_the_faster_side():
    # Base's rounds in two runs, each with its own floor: each is read against its own.
    base = [[1.0, 1.01, 1.7, 1.72], [2.0, 2.02, 3.4, 3.5]]
    head = [[1.7, 1.71, 1.72]]
    got = modes.luck(base, head)
    assert got is not None and got.side == "head" and got.landed == 4 and got.seen == 8
    assert modes.luck(head, base).side == "base"
    assert "slow mode" in got.describe() and str(got.needed) in got.describe()


def test_the_judged_levels_read_the_fast_modes_rounds():
    # Both sides modal, both with enough fast rounds: the slow ones no longer widen the interval.
    fast = [1e-4 * (1 + 0.001 * k) for k in range(5)]
    rounds = fast + [v * 1.7 for v in fast]
    head = [v * 1.08 for v in rounds]
    v = only(
        diff.compare(commit("a", in_run(bench(rounds, sub="x"), "r")), commit("b", in_run(bench(head, sub="x"), "r"))),
        "x",
    )
    assert v.verdict == "regression" and "fast mode's rounds were compared" in v.reason


def _run_of(sha: str, run: str, levels: dict[str, list[float]], target: list[float]):
    """A commit measured alone by `run`: `target`'s rounds (benchmark "x") and other benchmarks' rounds."""
    others = [in_run(bench(v, sub=name), run) for name, v in levels.items()]
    return commit(sha, in_run(bench(target, sub="x"), run), *others)


def test_separate_runs_read_the_slower_sides_own_run_for_its_slow_mode():
    # Base measured alone in a quiet run; head alone in a run where half of every benchmark's rounds landed
    # about 1.6x slow, and all five of x's did. Base's own run can't say how often head's run put rounds high.
    fast = [1e-4 * (1 + 0.002 * k) for k in range(5)]
    quiet = {f"b{k}": [v * (k + 2) for v in fast] for k in range(6)}
    modal = {f"b{k}": [v * (k + 2) * (1.6 if (i + k) % 2 else 1.0) for i, v in enumerate(fast)] for k in range(6)}
    slow_x = [v * 1.6 for v in fast]
    base = _run_of("a", "r1", quiet, fast)
    v = only(diff.compare(base, _run_of("b", "r2", modal, slow_x)), "x")
    assert v.verdict == "noisy"
    assert "measured by a separate run" in v.reason and "slow mode" in v.reason
    # The same head in a run without modes: its five rounds at 1.6x are the code's.
    calm = {name: [v * (k + 2) for v in fast] for k, name in enumerate(quiet)}
    assert only(diff.compare(base, _run_of("b", "r2", calm, slow_x)), "x").verdict == "regression"
    # And base's run being the modal one says nothing about head's: a quiet head run keeps its regression.
    modal_base = _run_of("a", "r1", modal, fast)
    assert only(diff.compare(modal_base, _run_of("b", "r2", calm, slow_x)), "x").verdict == "regression"


def test_luck_reads_both_sides_where_the_faster_side_skipped_the_band_the_slower_landed_in():
    # One run's real rounds (µs, range evaluation, modal neighbour, `add 64` at a no-change commit): base's rounds
    # jump from 1.15x to 1.8x of its floor, head's all sit 1.29x up or more. The faster side alone sees no round
    # that far up and as low as head's floor (a chance of 0); both sides' rounds, one machine's, do.
    base = [52.0, 53.0, 57.0, 60.0, 94.0, 102.0, 110.0, 111.0, 112.0, 112.0, 136.0, 221.0]
    head = [67.0, 86.0, 94.0, 109.0, 118.0, 120.0, 123.0, 175.0, 180.0, 182.0, 205.0]
    got = modes.luck([base], [head])
    assert got is not None and got.side == "head" and got.both and got.seen == len(base) + len(head)
    assert got.chance >= modes.ALPHA
    assert f"{got.landed} of both sides' {got.seen} rounds" in got.describe()
