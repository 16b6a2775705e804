"""Runs: what was measured together decides, and the history has each run's shift taken out.

Fabricated push histories (tests/factories.pushes): push k is its own run on
its own runner, measuring commit k and (paired) commit k-1 again.
"""

from __future__ import annotations

import dataclasses

import factories
import numpy as np

from regress.analysis import changepoints, diff, levels, stats
from regress.core.kinds import Kind

N = 24


def _steps(history, **kw):
    return [(s.index, s.direction) for s in changepoints.find_steps(history, **kw)]


def test_a_cpu_model_switch_moves_no_level_when_pushes_are_paired():
    # Runs 0-11 on one CPU model, 12-23 on another 25% slower; the code never changes.
    shifts = [1.0] * 12 + [1.25] * 12
    cpus = ["Intel Xeon 8370C"] * 12 + ["AMD EPYC 7763"] * 12
    paired = factories.pushes([1e-3] * N, shifts, cpus=cpus)
    ((_, fitted),) = levels.chart(paired).values()
    spread = fitted.max() / fitted.min()
    assert spread < 1.01, fitted
    assert _steps(paired) == []
    # The same pushes unpaired: nothing ties run 12 to run 11, and the switch reads as a step.
    alone = factories.pushes([1e-3] * N, shifts, paired=False, cpus=cpus)
    assert _steps(alone) == [(12, "regression")]


def test_one_slower_runner_moves_nothing_and_a_real_step_is_found_exactly():
    rng = np.random.default_rng(3)
    shifts = list(np.exp(rng.normal(0, 0.05, N)))  # every runner its own speed, +-5%
    shifts[9] = 1.4  # one push landed on a very slow runner
    truth = [1e-3] * 15 + [1.1e-3] * (N - 15)  # a real 10% slowdown at commit 15
    history = factories.pushes(truth, shifts, seed=5)
    assert _steps(history) == [(15, "regression")]
    ((positions, fitted),) = levels.chart(history).values()
    assert positions.tolist() == list(range(N))
    # The slow runner: a run of the usual CPU model 40% slower leaks under 2% into a level (not a step).
    assert abs(fitted[9] / fitted[8] - 1) < 0.02 and abs(fitted[15] / fitted[14] - 1.1) < 0.01


def test_same_code_commits_are_one_level_and_no_step_lies_between_them():
    # Commit 12 only edits the README: its code is commit 11's. Its own run read it 12%
    # slower (a slow runner, and unpaired), which would otherwise be a step.
    shifts = [1.0] * N
    history = factories.pushes([1e-3] * N, shifts, paired=False)
    slow = factories.pushes([1.12e-3] * N, shifts, paired=False)
    history = (
        history[:12]
        + [dataclasses.replace(slow[12], commit=history[12].commit)]
        + [dataclasses.replace(s, commit=h.commit) for s, h in zip(slow[13:], history[13:])]
    )
    code = {c.commit.sha: f"code{k}" for k, c in enumerate(history)}
    code[history[12].commit.sha] = code[history[11].commit.sha]
    found = changepoints.find_steps(history, code=code)
    assert [s.index for s in found] != [12]
    positions, _ = levels.trusted(history, code=code)[found[0].id if found else history[0].results[0].id]
    assert 12 not in positions and 11 in positions
    # compare of the two says so, and calls it unchanged.
    (v,) = diff.compare(history[11], history[12], same_code=history[11].commit.sha)
    assert v.verdict == Kind.UNCHANGED and "same code as" in v.reason


def test_compare_says_paired_or_separate_and_uses_only_the_shared_run():
    paired = factories.pushes([1e-3, 1e-3], [1.0, 1.3])  # run 1 is 30% slower, and measured both
    (v,) = diff.compare(paired[0], paired[1])
    assert v.verdict == Kind.UNCHANGED and "paired in 1 run" in v.reason
    assert v.base_rounds == v.head_rounds == 5  # run 0's rounds of commit 0 left out
    alone = factories.pushes([1e-3, 1e-3], [1.0, 1.3], paired=False)
    (w,) = diff.compare(alone[0], alone[1])
    assert w.verdict == Kind.REGRESSION and "separate runs: allowance 1.5%" in w.reason


def test_the_allowance_between_runs_comes_from_the_history():
    # Each commit measured by two runs whose machines differ by ~3% (sd): the same code.
    rng = np.random.default_rng(7)
    shifts = list(np.exp(rng.normal(0, 0.03, 40)))
    history = factories.pushes([1e-3] * 40, shifts)
    pairs = diff.same_code_pairs(history, {})
    (bid,) = pairs
    got = diff.allowances(pairs)(bid)
    assert got.pairs == 39 and 0.025 < got.sigma < 0.07, got
    assert "from the history (39 same-code pairs)" in got.describe()
    # Too few pairs: the fixed allowance, and it says so.
    few = diff.allowances(diff.same_code_pairs(history[:4], {}))(bid)
    assert few.pairs == 0 and few.sigma == 0.015


def _pairs_by_loop(history, code):
    """same_code_pairs as its definition reads, from the records: per benchmark and code, each run's fastest
    round; the runs in name order; one log difference per consecutive two (numpy's log, as the bulk takes)."""
    from collections import defaultdict

    levels = defaultdict(lambda: defaultdict(list))
    for c in history:
        node = code.get(c.commit.sha) or c.commit.sha
        for r in c.results:
            for run, values in stats.by_run(r).items():
                if run and len(values) >= stats.FEWEST_ROUNDS_TO_JUDGE:
                    levels[(r.id, node)][run].append(min(values))
    out = defaultdict(list)
    for (bid, _), by in levels.items():
        logs = [float(np.log(min(by[run]))) for run in sorted(by)]
        out[bid].extend(y - x for x, y in zip(logs, logs[1:]))
    return {b: sorted(d) for b, d in out.items() if d}


def test_same_code_pairs_in_bulk_are_the_pairs_their_definition_gives():
    from dataclasses import replace

    rng = np.random.default_rng(3)
    n = 30
    add = factories.pushes([1e-3] * n, list(np.exp(rng.normal(0, 0.03, n))), seed=1)
    mul = factories.pushes([2e-3] * n, list(np.exp(rng.normal(0, 0.03, n))), seed=2, sub="mul")
    history = [replace(a, results=a.results + m.results) for a, m in zip(add, mul)]
    # Commits 10-12 are one code (measured by runs 10-13, run 11 and 12 measuring two of them each).
    code = {history[k].commit.sha: "same" for k in (10, 11, 12)}
    for given in ({}, code):
        got = diff.same_code_pairs(history, given)
        assert {b: sorted(d) for b, d in got.items()} == _pairs_by_loop(history, given)
    # One code over three commits: its four runs give three differences, as the three commits' two runs each did.
    bid = history[0].results[0].id
    alone, together = diff.same_code_pairs(history, {})[bid], diff.same_code_pairs(history, code)[bid]
    assert len(alone) == len(together) == n - 1 and sorted(alone) != sorted(together)


def test_a_5_percent_step_each_push_sees_is_found_though_the_levels_alone_blur_it():
    # 60 pushes, each on a runner 4% (sd) apart from the last, four CPU models: a 5% step at push 30.
    rng = np.random.default_rng(11)
    n, at = 60, 30
    levels = [1e-3 * (1.05 if k >= at else 1.0) for k in range(n)]
    shifts = list(np.exp(rng.normal(0, 0.04, n)))
    cpus = [f"CPU model {k % 4}" for k in range(n)]
    paired = factories.pushes(levels, shifts, cpus=cpus, seed=3)
    # Each push's own verdict sees it (its parent measured in the same run)...
    (v,) = diff.compare(paired[at - 1], paired[at], apart=diff.Apart(paired, {}))
    assert v.verdict == Kind.REGRESSION and "paired in 1 run" in v.reason
    # ...and so does the history, at that very push, and nowhere else.
    assert _steps(paired) == [(at, Kind.REGRESSION)]
    # The levels alone blur it: each commit's own push's floor moves by more than 5% between neighbours
    # that did not change, again and again (the runners' shifts).
    own = [
        stats.level([stats.round_value(x) for x in c.results[0].samples if x.run.endswith(f"run{k}")])
        for k, c in enumerate(paired)
    ]
    jumps = [abs(np.log(b / a)) > np.log(1.05) for k, (a, b) in enumerate(zip(own, own[1:]), 1) if k != at]
    assert sum(jumps) >= 10
