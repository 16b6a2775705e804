"""The one table of metric specs, the thresholds config reads from it, the one pairing rule,
and flag help that reads its defaults from where they are defined."""

from __future__ import annotations

import subprocess
import sys

import pytest

from regress.analysis import diff, metrics
from regress.core import config
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind, Kind, Metric
from regress.core.metric_specs import BEYOND_TIME, SPECS, THRESHOLD_KEYS, spec
from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    InstructionCount,
    MemoryUse,
    Sample,
    Settings,
    TaskSpec,
)


def test_every_metric_has_one_spec_and_the_table_reads_true():
    assert set(SPECS) == set(Metric) and all(s.metric == m for m, s in SPECS.items())
    assert set(BEYOND_TIME) == set(Metric) - {Metric.TIME, Metric.INSTRUCTIONS}
    assert THRESHOLD_KEYS == {"memory_threshold": 0.01, "compile_time_threshold": 0.10, "track_threshold": 0.05}
    assert spec(Metric.ALLOCATED).fmt(1536) == "1.50 KiB" and spec(Metric.COMPILE_TIME).fmt(0.0125) == "12.50 ms"
    assert spec("peak").unit == "bytes" and spec(Metric.GRAPH_BREAKS).threshold == 0.0
    assert all(s.field in BenchmarkResult.__dataclass_fields__ for s in SPECS.values())


def test_config_reads_each_metrics_threshold_from_its_key_else_the_specs_default(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.regress]\nthreshold = "3%"\nmemory-threshold = "2%"\n')
    cfg = config.load(tmp_path)
    assert cfg.threshold_for(Metric.TIME) == 0.03
    assert cfg.threshold_for(Metric.ALLOCATED) == cfg.threshold_for(Metric.PEAK) == 0.02
    assert cfg.threshold_for(Metric.COMPILE_TIME) == 0.10 and cfg.threshold_for(Metric.TRACKED) == 0.05
    assert cfg.threshold_for(Metric.INSTRUCTIONS) == 0.01 and cfg.threshold_for(Metric.RECOMPILES) == 0.0
    assert config.DEFAULT.threshold_for(Metric.ALLOCATED) == 0.01
    hash(cfg)  # still a value
    (tmp_path / "pyproject.toml").write_text('[tool.regress]\nmetric_thresholds = "x"\n')
    with pytest.raises(RegressError, match=r"unknown key 'metric_thresholds'.*memory_threshold"):
        config.load(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.regress]\ntrack_threshold = "lots"\n')
    with pytest.raises(RegressError, match="'track_threshold' is not a threshold"):
        config.load(tmp_path)


def _commit(sha: str, *results, failures=()) -> CommitResult:
    info = CommitInfo(sha * 40, (), "A", "a@x", 1, 1, "s")
    return CommitResult(info, "m", "default", Fingerprint("m"), Settings(), tuple(results), failures)


def _timed(name: str, **kw) -> BenchmarkResult:
    samples = tuple(Sample(10, (1e-4,), float(i)) for i in range(5))
    counted = (InstructionCount(1, (1000, 1000)),)
    memory = (MemoryUse(1024, 512, "cpu", 1.0),)
    return BenchmarkResult(TaskSpec(f"{name}()"), "b.py:1", samples, counts=counted, memory=memory, **kw)


def test_times_counts_and_metrics_pair_benchmarks_with_one_rule_and_one_wording():
    crash = Failure(FailureKind.ERROR, "ValueError: boom")
    skip = Failure(FailureKind.SKIPPED, "needs CUDA")
    base = _commit("a", _timed("same"), _timed("gone"), _timed("breaks"), _timed("skips"))
    head = _commit("b", _timed("same"), _timed("added"), _timed("breaks", failure=crash), _timed("skips", failure=skip))
    judged = {
        "time": diff.compare(base, head),
        "instructions": metrics.compare(base, head, Metric.INSTRUCTIONS, threshold=0.01),
        "allocated": metrics.compare(base, head, Metric.ALLOCATED, threshold=0.01),
    }
    for got in judged.values():
        by = {v.id.sub_label.removesuffix("()"): (v.verdict, v.reason) for v in got}
        assert by["added"] == (Kind.NEW, "not measured at base")
        assert by["gone"] == (Kind.MISSING, "not measured at head: the benchmark no longer exists there")
        assert by["breaks"] == (Kind.FAILED, "failed at head: error: ValueError: boom")
        assert by["skips"] == (Kind.MISSING, "skipped at head: skipped: needs CUDA")
        assert by["same"][0] == Kind.UNCHANGED
    uncounted = _commit("c", BenchmarkResult(TaskSpec("same()"), "b.py:1", _timed("same").samples))
    (v,) = [
        v for v in metrics.compare(base, uncounted, Metric.INSTRUCTIONS, threshold=0.01) if v.id.sub_label == "same()"
    ]
    assert (v.verdict, v.reason) == (
        Kind.MISSING,
        "no instruction counts at head; run `regress run --mode instructions` on it",
    )


def _help(*command: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "regress", *command, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())


def test_flag_help_says_the_defaults_that_apply():
    check = _help("check")
    assert "default 10" not in check and "round plan of `regress run`" in check
    d = config.DEFAULT
    assert f"{d.min_rounds} to {d.max_rounds}" in check
    run = _help("run")
    assert f"(default {d.min_rounds})" in run and f"(default {d.max_rounds})" in run
    assert f"(default {d.budget:g})" in run and f"(default {d.timeout:g})" in run
    assert "memory_threshold 1%" in _help("compare")


def test_the_round_constants_say_what_they_bound():
    from regress.analysis import stats
    from regress.flows import rounds
    from regress.measure import adaptive

    assert not hasattr(stats, "MIN_ROUNDS") and not hasattr(rounds, "MAX_ROUNDS")
    assert not hasattr(adaptive, "MIN_ROUNDS") and not hasattr(adaptive, "MAX_ROUNDS")
    plan = adaptive.Budget()
    assert (plan.min_rounds, plan.max_rounds, plan.seconds) == (
        config.DEFAULT.min_rounds,
        config.DEFAULT.max_rounds,
        config.DEFAULT.budget,
    )
    assert stats.FEWEST_ROUNDS_TO_JUDGE <= plan.min_rounds <= plan.max_rounds <= rounds.MOST_ROUNDS_PER_SIDE
    # The timing settings are declared once, for [tool.regress] and for the results alike.
    assert (d := config.DEFAULT).min_run_time == Settings().min_run_time and d.timeout == Settings().timeout
