"""Tracked values and torch.compile figures, end to end on real commits.

Compiled benchmarks use backend="eager" here: dynamo's counts (graphs, graph
breaks, recompiles) are the same whatever the backend, and eager needs no C++
compiler and compiles in milliseconds.
"""

from __future__ import annotations

import json

from regress.analysis import metrics
from regress.core.kinds import Kind, Metric
from regress.core.records import BenchmarkResult, CompileStats, TaskSpec, TrackedValue

TRACK = """
import regress
from mypkg import model

def track_params():
    return model.params()

@regress.track(unit="accuracy", better="higher")
def accuracy():
    return model.accuracy()
"""

MODEL = """
def params():
    return 1000

def accuracy():
    return 0.9
"""

COMPILED = """
import torch
import regress
from mypkg import fn

X = torch.randn(64)

@regress.benchmark(label="compiled", compile=True, backend="eager")
def step():
    return lambda: fn.step(X)
"""

FN = """
def step(x):
    y = x.sin()
    return y.cos() + 1
"""

FN_BREAK = """
def step(x):
    y = x.sin()
    if y.sum().item() > -1e9:  # .item(): dynamo breaks the graph here
        y = y * 1.0
    return y.cos() + 1
"""

ONE_ROUND = ("--min-rounds", "1", "--max-rounds", "1")


def _verdicts(repo, base, head, metric):
    proc = repo.regress("compare", base, head, "--metric", metric, "--format", "json", check=True)
    return {v["sub_label"]: v for v in json.loads(proc.stdout)["verdicts"]}


def test_track_values_are_stored_compared_and_shown(repo):
    base = repo.commit("model", {"src/mypkg/model.py": MODEL, "benchmarks/bench_work.py": TRACK})
    head = repo.commit(
        "bigger, less accurate", {"src/mypkg/model.py": MODEL.replace("1000", "1500").replace("0.9", "0.8")}
    )
    repo.regress("run", f"{base}^..{head}", *ONE_ROUND, check=True)
    proc = repo.regress("compare", base, head, "--metric", "tracked", "--format", "json", check=True)
    rows = {x["sub_label"]: x for x in json.loads(proc.stdout)["verdicts"]}
    assert {x["label"] for x in rows.values()} == {"bench_work"}  # named like benchmarks: module, then function
    assert set(rows) == {"track_params", "accuracy"}, rows
    assert (rows["track_params"]["base"], rows["track_params"]["head"]) == (1000, 1500)
    assert rows["track_params"]["verdict"] == "regression"  # lower is better by default
    assert rows["accuracy"]["verdict"] == "regression"  # better="higher": a drop is a regression
    # Time comparisons leave tracked values out; show lists them with their units.
    assert json.loads(repo.regress("compare", base, head, "--format", "json", check=True).stdout)["verdicts"] == []
    shown = repo.regress("show", head, check=True).stdout
    assert "tracked values" in shown and "accuracy" in shown and "1500" in shown


def test_a_graph_break_is_a_regression_of_the_graph_break_metric(repo):
    base = repo.commit("fn", {"src/mypkg/fn.py": FN, "benchmarks/bench_work.py": COMPILED})
    same = repo.commit("A/A", {"src/mypkg/fn.py": FN + "\n# no change\n"})
    head = repo.commit("item() in the compiled function", {"src/mypkg/fn.py": FN_BREAK})
    repo.regress("run", f"{base}^..{head}", *ONE_ROUND, check=True)
    breaks = _verdicts(repo, same, head, "graph_breaks")["step()"]
    # dynamo counts the break in step() and in the lambda that calls it.
    assert breaks["verdict"] == "regression" and breaks["base"] == 0 and breaks["head"] >= 1, breaks
    assert _verdicts(repo, same, head, "graphs")["step()"]["verdict"] == "regression"  # 1 graph -> 2
    assert _verdicts(repo, base, same, "graph_breaks")["step()"]["verdict"] == "unchanged"
    assert _verdicts(repo, base, same, "recompiles")["step()"]["verdict"] == "unchanged"
    text = repo.regress("compare", same, head, "--metric", "graph_breaks", check=True).stdout
    assert "regression" in text and "graph breaks" in text
    # The compiled callable is still timed in steady state, and its memory measured.
    assert _verdicts(repo, base, same, "allocated")["step()"]["verdict"] == "unchanged"
    shown = repo.regress("show", head, check=True).stdout
    assert "torch.compile" in shown and "graph_breaks" in shown


def _r(**fields) -> BenchmarkResult:
    return BenchmarkResult(TaskSpec("f()", label="x"), "b.py:1", **fields)


def test_exact_rules_never_say_noisy_and_counts_have_no_threshold():
    one = _r(compiled=(CompileStats(0.1, 1, 0, 0),))
    two = _r(compiled=(CompileStats(0.1, 1, 0, 1),))
    assert metrics.judge(one, two, Metric.RECOMPILES, threshold=0.5).verdict == Kind.REGRESSION
    assert metrics.judge(two, one, Metric.RECOMPILES, threshold=0.5).verdict == Kind.IMPROVEMENT
    assert metrics.judge(one, one, Metric.GRAPHS, threshold=0.0).verdict == Kind.UNCHANGED
    # A tracked value that varies between rounds is judged like a time, from rounds.
    a = _r(tracked=tuple(TrackedValue(v) for v in (1.0, 1.01, 0.99)))
    b = _r(tracked=tuple(TrackedValue(v) for v in (2.0, 2.02, 1.98)))
    assert metrics.judge(a, b, Metric.TRACKED, threshold=0.05).verdict == Kind.REGRESSION
    few = _r(tracked=(TrackedValue(1.0), TrackedValue(1.1)))
    assert metrics.judge(few, b, Metric.TRACKED, threshold=0.05).verdict == Kind.NOISY


def test_no_cpp_compiler_means_skipped_in_one_line(monkeypatch):
    from torch._inductor import cpp_builder

    from regress.suite import compiled

    def none():
        raise RuntimeError("no compiler")

    monkeypatch.setattr(cpp_builder, "get_cpp_compiler", none)
    why = compiled.cannot_compile("inductor")
    assert why is not None and "\n" not in why and "C++ compiler" in why
    assert compiled.cannot_compile("eager") is None
