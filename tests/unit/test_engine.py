"""The round engine's decisions on fabricated rounds and a fake clock: what gets another round, in what order, when it stops."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from factories import bench, commit, rounds_of

from regress.analysis import changepoints, diff, levels
from regress.core.config import Config
from regress.core.records import BenchmarkId, BenchmarkResult, CommitInfo, Settings, TaskSpec
from regress.core.reporter import Reporter
from regress.measure import adaptive, engine, one_commit
from regress.storage.store import Store


def spec(name: str) -> TaskSpec:
    return TaskSpec(stmt=f"{name}()", label="ops", sub_label=name)


class FakeMachine:
    """Stands in for the worker: each benchmark's next round value from a script, and a clock that each one advances."""

    def __init__(self, script: dict[str, list[float]], seconds_per_benchmark: float) -> None:
        self.script = {name: list(values) for name, values in script.items()}
        self.cost = seconds_per_benchmark
        self.now = 0.0
        self.calls: list[tuple[str, list[str]]] = []  # (commit, benchmarks measured) per round

    def clock(self) -> float:
        return self.now

    def measure(self, cfg, req: one_commit.Request, progress, *, collector, on_result):
        measured = []
        for name, values in self.script.items():
            key = one_commit.key(spec(name))
            if key in req.skip:
                continue
            value = values.pop(0) if len(values) > 1 else values[0]
            collector.results[key] = BenchmarkResult(spec(name), "bench.py:1", rounds_of([value]))
            measured.append(name)
            self.now += self.cost
            on_result()
        self.calls.append((req.info.sha, measured))
        return collector


def targets_for(tmp_path: Path, shas: list[str]) -> list[engine.Target]:
    (tmp_path / "benchmarks").mkdir(exist_ok=True)
    return [
        engine.Target(
            CommitInfo(sha * 40, (), "A", "a@x", 0, 0, sha), Settings(), tmp_path, tmp_path / "benchmarks", tmp_path
        )
        for sha in shas
    ]


def cfg_for(tmp_path: Path) -> Config:
    return Config(root=tmp_path, machine="box")


def test_agreeing_rounds_stop_at_the_minimum_and_disagreeing_ones_get_more(tmp_path):
    # "steady": every round the same floor. "jumpy": rounds 40% apart, so its floor never settles.
    fake = FakeMachine({"steady": [1.0], "jumpy": [1.0, 1.4, 1.4, 1.4, 1.0, 1.4, 1.4, 1.4, 1.4, 1.4]}, 0.1)
    budget = adaptive.Budget(min_rounds=3, max_rounds=7, seconds=100.0)
    cfg = cfg_for(tmp_path)
    targets = targets_for(tmp_path, ["a"])
    engine.measure_targets(cfg, Store(tmp_path / "results"), targets, budget, measure=fake.measure, clock=fake.clock)
    stored = Store(tmp_path / "results").load("box", "default", "a" * 40).by_id()
    counts = {bid.sub_label: len(r.samples) for bid, r in stored.items()}
    assert counts == {"steady": 3, "jumpy": 7}
    # Rounds 4-7 measured only the benchmark that needed them.
    assert [names for _, names in fake.calls] == [["steady", "jumpy"]] * 3 + [["jumpy"]] * 4
    assert Store(tmp_path / "results").load("box", "default", "a" * 40).complete


def test_the_per_commit_budget_stops_extra_rounds_but_never_the_minimum(tmp_path):
    # Each benchmark-round costs 2 fake seconds; the budget is 9 s a commit.
    fake = FakeMachine({"x": [1.0, 1.5], "y": [1.0, 1.5]}, 2.0)
    budget = adaptive.Budget(min_rounds=3, max_rounds=20, seconds=9.0)
    targets = targets_for(tmp_path, ["a", "b"])
    engine.measure_targets(
        cfg_for(tmp_path), Store(tmp_path / "r"), targets, budget, measure=fake.measure, clock=fake.clock
    )
    for t in targets:
        # 3 rounds (12 s, over the 9 s budget already): never fewer than the minimum, nothing beyond.
        assert {len(v) for v in t.values.values()} == {3}
        assert t.spent == pytest.approx(12.0)
    budget = adaptive.Budget(min_rounds=2, max_rounds=20, seconds=9.0)
    fake = FakeMachine({"x": [1.0, 1.5], "y": [1.0, 1.5]}, 2.0)
    targets = targets_for(tmp_path, ["c"])
    engine.measure_targets(
        cfg_for(tmp_path), Store(tmp_path / "r2"), targets, budget, measure=fake.measure, clock=fake.clock
    )
    # 2 rounds = 8 s < 9 s, so one more round (12 s), then the budget is spent.
    assert {len(v) for v in targets[0].values.values()} == {3}


def test_rounds_are_interleaved_and_alternate_direction(tmp_path):
    fake = FakeMachine({"x": [1.0]}, 0.5)
    budget = adaptive.Budget(min_rounds=3, max_rounds=3, seconds=100.0)
    targets = targets_for(tmp_path, ["a", "b", "c"])
    engine.measure_targets(
        cfg_for(tmp_path), Store(tmp_path / "r"), targets, budget, measure=fake.measure, clock=fake.clock
    )
    order = [sha[0] for sha, _ in fake.calls]
    assert order == list("abccbaabc")


def test_time_left_counts_the_rounds_still_owed(tmp_path):
    budget = adaptive.Budget(min_rounds=4, max_rounds=4, seconds=100.0)
    targets = targets_for(tmp_path, ["a", "b"])
    assert engine.time_left(targets, budget) is None
    targets[0].rounds, targets[0].spent = 1, 3.0
    targets[0].values = {BenchmarkId("ops", "x", "", 1): [1.0]}
    # a: 3 rounds owed at 3 s; b: not started, 4 rounds at the pace so far.
    assert engine.time_left(targets, budget) == pytest.approx(9.0 + 12.0)


def test_settled_needs_three_agreeing_rounds():
    budget = adaptive.Budget.for_threshold(0.05)
    assert budget.settle == pytest.approx(0.0125)
    assert not adaptive.settled([1.0, 1.0], budget)
    assert adaptive.settled([1.0, 1.01, 1.012, 2.0], budget)
    assert not adaptive.settled([1.0, 1.01, 1.05, 1.05], budget)


# -- the reference workload: the machine, not the commit ------------------------

BASE = [1.00, 1.002, 1.004, 1.001, 1.003, 1.002]


def slowed(values, factor):
    return [v * factor for v in values]


def test_a_slowdown_the_reference_shares_is_the_machine_not_the_commit():
    # Every benchmark 8% slower at head, and the reference timed in the same rounds too.
    base = commit("a", bench(BASE, sub="add"), bench(BASE, sub="mul"), reference=BASE)
    head = commit(
        "b", bench(slowed(BASE, 1.08), sub="add"), bench(slowed(BASE, 1.08), sub="mul"), reference=slowed(BASE, 1.08)
    )
    verdicts = diff.compare(base, head)
    assert [v.verdict for v in verdicts] == ["noisy", "noisy"]
    assert all("the machine itself was +8.0% slower" in v.reason for v in verdicts)
    # How the sides were compared still closes the reason, as it does every other verdict's.
    assert all(
        v.reason.endswith("separate runs: allowance 1.5% (no same-code pairs in the history yet)") for v in verdicts
    )
    # The same benchmarks with a steady reference: real regressions.
    steady = commit("b", *head.results, reference=BASE)
    assert [v.verdict for v in diff.compare(base, steady)] == ["regression", "regression"]


def test_a_slowdown_far_beyond_the_machines_own_still_counts():
    base = commit("a", bench(BASE, sub="add"), bench(BASE, sub="mul"), reference=BASE)
    head = commit(
        "b", bench(slowed(BASE, 2.0), sub="add"), bench(slowed(BASE, 1.08), sub="mul"), reference=slowed(BASE, 1.08)
    )
    by = {v.id.sub_label: v.verdict for v in diff.compare(base, head)}
    assert by == {"add": "regression", "mul": "noisy"}


def test_results_without_reference_rounds_are_judged_as_before():
    base = commit("a", bench(BASE))
    head = commit("b", bench(slowed(BASE, 1.08)))
    assert diff.compare(base, head)[0].verdict == "regression"
    assert diff.machine_shift(base, head, threshold=0.05) is None


def test_change_points_leave_out_a_commit_measured_on_a_slow_machine():
    # Ten commits of the same code; commits 5-7 measured while the machine was 30% slower.
    history = []
    for i in range(10):
        factor = 1.3 if 5 <= i <= 7 else 1.0
        history.append(
            commit(
                f"{i:040d}",
                bench(slowed(BASE, factor), sub="add"),
                bench(slowed(BASE, factor), sub="mul"),
                reference=slowed(BASE, factor),
            )
        )
    assert levels.machine_outliers(history, threshold=0.05) == {5, 6, 7}
    assert changepoints.find_steps(history) == []
    # Without the reference the same levels make a step up and back (a blip of 3 at most) or a step.
    bare = [commit(c.commit.sha, *c.results) for c in history]
    assert levels.trusted(bare)[bare[0].results[0].id][0] == list(range(10))


def test_a_step_is_only_reported_where_compare_agrees():
    # Levels step up 8% at commit 5 and stay there. With a steady reference it is a step...
    def history(reference_after: float):
        out = []
        for i in range(10):
            factor = 1.0 if i < 5 else 1.08
            out.append(
                commit(
                    f"{i:040d}",
                    bench(slowed(BASE, factor), sub="add"),
                    reference=slowed(BASE, reference_after if i >= 5 else 1.0),
                )
            )
        return out

    steps = changepoints.find_steps(history(1.0))
    assert [(s.index, s.direction) for s in steps] == [(5, "regression")]
    assert diff.judge_one(history(1.0)[4], history(1.0)[5], steps[0].id).verdict == "regression"
    # ...but when the reference moved with it (the runner changed, say), compare calls it the
    # machine, and regressions reports no step either: half the history is too many to leave out.
    moved = history(1.08)
    assert levels.machine_outliers(moved, threshold=0.05) == set()
    assert diff.judge_one(moved[4], moved[5], steps[0].id).verdict == "noisy"
    assert changepoints.find_steps(moved) == []


class PerCommitMachine(FakeMachine):
    """Like FakeMachine, with each commit's own script: the commits' levels differ."""

    def __init__(self, scripts: dict[str, dict[str, list[float]]], seconds_per_benchmark: float) -> None:
        super().__init__({}, seconds_per_benchmark)
        self.scripts = {sha * 40: {n: list(v) for n, v in script.items()} for sha, script in scripts.items()}

    def measure(self, cfg, req, progress, **kw):
        self.script = self.scripts[req.info.sha]
        return super().measure(cfg, req, progress, **kw)


def test_rounds_go_where_the_verdict_against_a_neighbour_is_undecided(tmp_path):
    budget = adaptive.Budget.for_threshold(0.05, min_rounds=3, max_rounds=8, seconds=100.0)
    # "undecided": a +3% move whose rounds disagree by 6% on each side: noisy at 5%, more rounds may tell.
    # "settles": both sides disagree at first, then agree on one floor: unchanged once they do.
    # "far": 2x apart on floors that agree, and "same": equal levels: decided at the minimum.
    # "ragged": 2x apart, but each side's rounds 10% apart: a change is confirmed on settled floors, so it
    # takes every round the plan allows.
    fake = PerCommitMachine(
        {
            "a": {
                "undecided": [1.0, 1.04, 1.06] * 3,
                "settles": [1.0, 1.06, 1.08, 1.0, 1.001],
                "far": [1.0, 1.002, 1.004],
                "same": [1.0],
                "ragged": [1.0, 1.08, 1.1],
            },
            "b": {
                "undecided": [1.03, 1.07, 1.09] * 3,
                "settles": [1.0, 1.07, 1.09, 1.0, 1.002],
                "far": [2.0, 2.004, 2.008],
                "same": [1.0],
                "ragged": [2.0, 2.16, 2.2],
            },
        },
        0.1,
    )
    targets = targets_for(tmp_path, ["a", "b"])
    engine.measure_targets(
        cfg_for(tmp_path), Store(tmp_path / "r"), targets, budget, measure=fake.measure, clock=fake.clock
    )
    for t in targets:
        counts = {key.sub_label: len(v) for key, v in t.values.items()}
        # (a 2x move on three rounds a side is one more round from decided: with so few rounds beside it,
        # all three landing in a slow mode can't yet be ruled out at modes.ALPHA)
        assert counts["undecided"] == 8 and counts["far"] <= 4 and counts["same"] == 3, (t.info.sha[0], counts)
        assert counts["ragged"] == 8 and 3 < counts["settles"] < 8, (t.info.sha[0], counts)
    # The rule itself: a decided verdict either way holds no rounds; an undecided one does.
    assert adaptive.hinges([1.03, 1.07, 1.09], [1.0, 1.04, 1.06], budget)
    assert not adaptive.hinges([2.0, 2.004, 2.008, 2.002], [1.0, 1.002, 1.004, 1.001], budget)
    assert adaptive.hinges([2.0, 2.16, 2.2], [1.0, 1.08, 1.1], budget)
    assert not adaptive.hinges([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], budget)
    # A benchmark using every core can't be decided by rounds (the drift between runs): it holds none.
    assert not adaptive.hinges([1.03, 1.07, 1.09], [1.0, 1.04, 1.06], replace(budget, cores=2), threads=2)


def test_a_stored_parent_is_a_neighbour_of_a_single_commit_run(tmp_path):
    store = Store(tmp_path / "results")
    parent = commit("p", bench([1.0, 1.0, 1.0], sub="x"))
    store.save(replace(parent, machine="box"))
    (t,) = targets_for(tmp_path, ["c"])
    t.info = replace(t.info, parents=(parent.commit.sha,))
    engine.add_stored_parents(cfg_for(tmp_path), store, [t])
    assert t.neighbours == [{one_commit.key(parent.results[0].spec): [1.0, 1.0, 1.0]}]


def test_compare_calls_one_odd_commit_between_agreeing_neighbours_a_blip():
    # b alone sits 6% up; a and c (either side) agree: compare(a, b) is a blip with the history, a regression without.
    a = commit("a", bench(BASE, sub="add"))
    b = commit("b", bench(slowed(BASE, 1.06), sub="add"))
    c = commit("c", bench(BASE, sub="add"))
    assert diff.compare(a, b)[0].verdict == "regression"
    v = diff.compare(a, b, after=c)[0]
    assert v.verdict == "noisy" and "a blip: bbbbbbbbbb alone differs" in v.reason
    # The mirror image: base is the odd one, the commit before it agrees with head.
    assert diff.compare(b, c, before=a)[0].verdict == "noisy"
    # A change that stays (c keeps b's level) is a regression with or without the history.
    stays = commit("c", bench(slowed(BASE, 1.06), sub="add"))
    assert diff.compare(a, b, after=stays)[0].verdict == "regression"


def test_a_step_after_two_commits_is_found_when_compare_confirms_it():
    # Two commits at the old level: Mann-Whitney alone can't reach p < 0.05; compare on the rounds can.
    history = [commit(f"{i:040d}", bench(BASE if i < 2 else slowed(BASE, 2.0), sub="add")) for i in range(8)]
    assert [(s.index, s.direction) for s in changepoints.find_steps(history)] == [(2, "regression")]

    # The step's commit counts though its floor is unsettled (its second round 11% above its first):
    # compare across it says +100%, and the history reports the step there, not a commit later. A level
    # read off rounds all over the place is left out.
    def unsettled(values) -> bool:  # one run row: its three fastest rounds and its count
        low = np.asarray(sorted(values)[:3], dtype=float)[:, None]
        return bool(levels._unsettled(low, np.asarray([len(values)]))[0])

    assert unsettled([1.0, 1.3, 1.3]) and not unsettled([1.0, 1.107, 1.5, 1.5, 1.5])
    ragged = [v * (1.0, 1.107, 1.11, 1.5, 1.5, 1.5)[k % 6] for k, v in enumerate(slowed(BASE, 2.0))]
    history[2] = commit(f"{2:040d}", bench(ragged, sub="add"))
    assert [(s.index, s.direction) for s in changepoints.find_steps(history)] == [(2, "regression")]


def test_time_left_counts_the_extra_rounds_the_adaptive_plan_takes(tmp_path):
    # Per commit: two benchmarks settle at the minimum, one never does and takes every round to max_rounds.
    jumpy = [1.0] * 5 + [1.4] * 100  # one fast round per commit: its floor never settles
    fake = FakeMachine({"a": [1.0], "b": [1.0], "jumpy": jumpy}, 0.5)
    budget = adaptive.Budget(min_rounds=3, max_rounds=9, seconds=100.0)
    targets = targets_for(tmp_path, ["a", "b", "c", "d", "e"])
    shown = []

    class Watch(Reporter):
        def round_started(self, k, i, n, info, left):
            shown.append((fake.now, left))

    engine.measure_targets(
        cfg_for(tmp_path), Store(tmp_path / "r"), targets, budget, Watch(), measure=fake.measure, clock=fake.clock
    )
    total = fake.now
    assert all(len(t.values[one_commit.key(spec("jumpy"))]) == 9 for t in targets)
    errors = [(at, left / (total - at) - 1) for at, left in shown if at >= total / 10]
    # Before the minimum is in, the share of benchmarks that go on is the prior's guess (here a
    # third do, the prior says half); once the rounds show it, the estimate follows them.
    assert all(abs(e) <= 0.35 for _, e in errors), errors
    minimum_in = 3 * 5 * 1.5  # every commit's three full rounds
    assert all(abs(e) <= 0.25 for at, e in errors if at >= minimum_in), errors
    # Counting only the minimum (the old estimate) read the extra rounds as nothing: 0 s left here.
    assert shown[-(5 * 6) // 2][1] > 0.5 * (total - shown[-(5 * 6) // 2][0])
