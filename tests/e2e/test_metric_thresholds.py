"""The site's metric tables and `regress compare --metric` judge a pair with the same thresholds:
the project's `[tool.regress]` ones (memory_threshold, compile_time_threshold, track_threshold),
so they give the same verdict. Real git repository, real CLI in a subprocess, real `regress report`.

Each change below sits between the metric's default threshold and the project's own, so a
site that judged with the defaults would say the opposite of `regress compare`.
"""

from __future__ import annotations

import json
import re

from regress.core import records as rec
from regress.storage.store import Store

THRESHOLDS = 'memory_threshold = "5%"\ncompile_time_threshold = "3%"\ntrack_threshold = "1%"\n'
# metric -> (base figure, head/base, the verdict under THRESHOLDS; the defaults would give the other)
CHANGES = {
    "allocated": (100 << 10, 1.03, "unchanged"),  # +3%: within 5%, beyond the default 1%
    "peak": (200 << 10, 0.98, "unchanged"),  # -2%: within 5%, an improvement at the default 1%
    "compile_time": (0.5, 1.06, "regression"),  # +6%: beyond 3%, within the default 10%
    "tracked": (1000.0, 1.03, "regression"),  # +3%: beyond 1%, within the default 5%
}
JITTER = (1.0, 1.002, 0.999, 1.001, 1.0005)  # compile times vary a little between rounds


def _save(repo, sha: str, head: bool, later: int = 0) -> None:
    c = repo.git("show", "-s", "--format=%H%n%ct%n%s", sha).split("\n")
    when = int(c[1]) + later  # commits made in one second: the history's order must not be a tie
    info = rec.CommitInfo(c[0], (), "Test Author", "author@example.com", when, when, c[2])

    def figure(metric: str) -> float:
        base, ratio, _ = CHANGES[metric]
        return base * ratio if head else base

    rounds = range(len(JITTER))
    timed = rec.BenchmarkResult(
        rec.TaskSpec("f()", label="ops", sub_label="f"),
        "benchmarks/b.py:1 f",
        tuple(rec.Sample(10, (1e-4, 1.01e-4), float(i)) for i in rounds),
        memory=tuple(rec.MemoryUse(int(figure("allocated")), int(figure("peak")), "cpu", float(i)) for i in rounds),
        compiled=tuple(rec.CompileStats(figure("compile_time") * j, 1, 0, 0, float(i)) for i, j in enumerate(JITTER)),
    )
    tracked = rec.BenchmarkResult(
        rec.TaskSpec("track: track_params()", label="ops", sub_label="track_params"),
        "benchmarks/b.py:9 track_params",
        tracked=tuple(rec.TrackedValue(figure("tracked"), "parameters", "lower", float(i)) for i in rounds),
    )
    Store(repo.path / ".regress").save(
        rec.CommitResult(info, "testbox", "default", rec.Fingerprint("testbox"), rec.Settings(), (timed, tracked))
    )


def _site_verdicts(repo) -> dict[str, list[str]]:
    repo.regress("report", check=True)
    (label,) = (repo.path / "site" / "label").glob("*.html")
    data = json.loads(re.search(r'id="label-data">(.*?)</script>', label.read_text()).group(1))
    tables = {t["metric"]: t["rows"] for t in data["metrics"]}
    return {metric: [row["verdict"] for row in tables[metric]] for metric in CHANGES}


def _compare_verdicts(repo, base: str, head: str) -> dict[str, list[str]]:
    out = {}
    for metric in CHANGES:
        proc = repo.regress("compare", base, head, "--metric", metric, "--format", "json", check=True)
        out[metric] = [v["verdict"] for v in json.loads(proc.stdout)["verdicts"]]
    return out


def test_the_site_and_compare_judge_each_metric_with_the_projects_thresholds(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("a change")
    _save(repo, base, head=False)
    _save(repo, head, head=True, later=60)
    pyproject = repo.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + THRESHOLDS)

    compared = _compare_verdicts(repo, base, head)
    assert compared == {metric: [want] for metric, (_, _, want) in CHANGES.items()}
    assert _site_verdicts(repo) == compared

    # Without the project's thresholds both read the defaults, and still agree: every verdict flips.
    pyproject.write_text(pyproject.read_text().replace(THRESHOLDS, ""))
    defaults = _compare_verdicts(repo, base, head)
    assert defaults == {"allocated": ["regression"], "peak": ["improvement"]} | {
        "compile_time": ["unchanged"],
        "tracked": ["unchanged"],
    }
    assert _site_verdicts(repo) == defaults
