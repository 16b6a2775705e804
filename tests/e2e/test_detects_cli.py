"""What each benchmark can detect, through the real CLI on a fabricated results folder: `compare --format
json` carries each verdict's figure, `regressions --format json` a "detectable" list for the newest
commit, and `show` a line a benchmark after its Compare table, with what would help where the threshold
is out of reach.

Rounds of known spread, on a 2-core machine, each push measured with its parent in one run: "calm"
(every round within 0.3% of its floor: a 5% change is well within reach), "busy" (one thread, rounds spread
evenly up to 10% above their floor: 5 or 8 rounds can't catch 5%, a dozen can) and "wide" (two threads on
two cores: the allowance for using every core is 5%, which no number of rounds lowers).
"""

from __future__ import annotations

import json

import numpy as np

from regress.core.records import BenchmarkResult, CommitInfo, CommitResult, Fingerprint, Sample, Settings, TaskSpec
from regress.storage.store import Store

CONFIG = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
machine = "testbox"
min_rounds = 5
max_rounds = 15
"""


def _rounds(level: float, top: float, n: int, run: str) -> tuple[Sample, ...]:
    """n rounds from `level` to `top` (log) above it, evenly spread, all taken by `run`."""
    values = (level * np.exp(np.linspace(0.0, top, n))).tolist()
    return tuple(Sample(10, (v * 10, v * 10.1, v * 10.2), float(i), run=run) for i, v in enumerate(values))


def _result(sub: str, level: float, top: float, runs: list[str], threads: int = 1, n: int = 8) -> BenchmarkResult:
    task = TaskSpec(f"{sub}()", label="ops", sub_label=sub, num_threads=threads)
    return BenchmarkResult(task, "benchmarks/b.py:1 bench", sum((_rounds(level, top, n, r) for r in runs), ()))


def _history(repo) -> list[str]:
    """Four commits, each measured by its push's run and again by the next push's (8 rounds a run); the
    newest also has two rounds of a fourth benchmark, "few", that no other commit measured."""
    repo.write("pyproject.toml", CONFIG)
    shas = [repo.commit(f"change {k} | <b>{k}</b>") for k in range(4)]
    store = Store(repo.path / ".regress")
    for k, sha in enumerate(shas):
        when = int(repo.git("show", "-s", "--format=%ct", sha)) + k  # one commit a second: in history order
        parents = (shas[k - 1],) if k else ()
        info = CommitInfo(sha, parents, "Test Author", "a@x", when, when, f"change {k} | <b>{k}</b>")
        runs = [f"run-{k}"] + ([f"run-{k + 1}"] if k + 1 < len(shas) else [])
        level = 1e-4 * (1 + 0.001 * k)
        results = [
            _result("calm", level, 0.003, runs),
            _result("busy", level, 0.10, runs),
            _result("wide", 2 * level, 0.003, runs, threads=2),
        ]
        if k == len(shas) - 1:
            results.append(_result("few", 3e-4, 0.003, runs, n=2))
        store.save(
            CommitResult(info, "testbox", "default", Fingerprint("testbox", cores=2), Settings(), tuple(results))
        )
    return shas


def test_compare_json_carries_each_verdicts_figure(repo):
    _history(repo)
    proc = repo.regress("compare", "HEAD~1", "HEAD", "--format", "json", check=True)
    verdicts = {v["sub_label"]: v for v in json.loads(proc.stdout)["verdicts"]}
    calm, busy, wide = verdicts["calm"], verdicts["busy"], verdicts["wide"]
    # The calm one catches 5% at its own 8 rounds; its rounds are the ones it needs.
    assert 0 < calm["detectable"] <= 0.05 and calm["detect_rounds"] == 8
    # The busy one can't at 8, but more rounds can; the wide one no number of rounds gets to 5%.
    assert busy["detectable"] > 0.05 and 8 < busy["detect_rounds"] <= 40
    assert wide["detectable"] > 0.05 and wide["detect_rounds"] is None
    assert f"detects {wide['detectable'] * 100:.1f}% at 8 rounds a side" in wide["reason"]
    assert verdicts["few"]["verdict"] == "new" and verdicts["few"]["detectable"] is None


def test_regressions_json_lists_what_each_benchmark_can_detect(repo):
    shas = _history(repo)
    proc = repo.regress("regressions", "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert doc["detectable_commit"]["sha"] == shas[-1]
    found = {d["sub_label"]: d for d in doc["detectable"]}
    assert list(found) == ["calm", "busy", "wide", "few"]
    calm, busy, wide, few = (found[k] for k in ("calm", "busy", "wide", "few"))
    assert set(calm) >= {
        "id",
        "label",
        "sub_label",
        "description",
        "num_threads",
        "paired",
        "rounds",
        "most",
        "most_rounds",
        "history",
        "rounds_for_threshold",
        "reaches",
        "advice",
    }
    assert calm["reaches"] is True and calm["paired"] <= 0.05 and calm["advice"] == ""
    assert calm["rounds"] == 5 and calm["most_rounds"] == 15 and calm["rounds_for_threshold"] == 5
    # A step in the history needs compare across it to agree: never finer than the paired figure.
    assert calm["history"] is not None and calm["history"] >= calm["paired"] - 1e-9
    assert busy["reaches"] is False and busy["paired"] > 0.05 and busy["most"] < busy["paired"]
    assert busy["rounds_for_threshold"] > 5 and f"needs {busy['rounds_for_threshold']} rounds a side" in busy["advice"]
    assert wide["num_threads"] == 2 and wide["reaches"] is False and wide["rounds_for_threshold"] is None
    assert "fewer threads (it uses 2 of 2 cores)" in wide["advice"] and "instruction counts" in wide["advice"]
    # Two rounds of its own, and no earlier commit measured it: nothing to tell, and it says so.
    assert few["paired"] is None and few["reaches"] is None and few["advice"].startswith("too few rounds to tell")

    # --bench filters the list as it filters the steps.
    only = json.loads(repo.regress("regressions", "--format", "json", "--bench", "wide", check=True).stdout)
    assert [d["sub_label"] for d in only["detectable"]] == ["wide"]


def test_show_prints_a_line_a_benchmark_after_the_compare_table(repo):
    _history(repo)
    out = repo.regress("show", "HEAD", check=True).stdout
    table, _, block = out.partition("what each benchmark can detect")
    assert "calm" in table and block, out
    heading, *rows = block.splitlines()
    lines = {row.split(":")[0].strip(): row for row in rows}
    calm = lines["ops / calm [1 thread]"]
    assert calm.startswith("  ops / calm [1 thread]: detects ") and "% in a paired push at 5 rounds" in calm
    assert "in the history" in calm and "would help" not in calm and "needs" not in calm
    busy = lines["ops / busy [1 thread]"]
    assert "a 5% change needs" in busy and "rounds a side (`--min-rounds" in busy
    wide = lines["ops / wide [2 threads]"]
    assert "no number of rounds catches a 5% change here" in wide and "fewer threads (it uses 2 of 2 cores)" in wide
    assert "too few rounds to tell (2 here" in lines["ops / few [1 thread]"]
    assert heading == " (threshold 5%, the plan's 5 to 15 rounds a side; 2 of 4 can't reach 5% at 5 rounds):"
