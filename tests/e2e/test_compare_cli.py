"""`regress compare` and `regress regressions` end to end: the real CLI on a real git repo.

Most tests write fabricated result files with Store.save (no timing, exact
verdicts); one measures for real to show `compare --measure` alternates
base and head in fresh workers and stores every round.
"""

from __future__ import annotations

import json

import numpy as np

from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.storage.store import Store


def _rounds(level: float, n: int, seed: int) -> tuple[Sample, ...]:
    rng = np.random.default_rng(seed)
    values = level * np.exp(np.abs(rng.normal(0, 0.003, n)))
    values[0] = level  # the fastest round is exactly the level
    return tuple(
        Sample(10, tuple(float(v) * 10 * f for f in (1.0, 1.01, 1.02)), float(i)) for i, v in enumerate(values)
    )


def _result(
    label: str, sub: str, level: float, *, rounds: int = 10, seed: int = 0, threads: int = 1
) -> BenchmarkResult:
    return BenchmarkResult(
        TaskSpec(f"{sub}()", label=label, sub_label=sub, num_threads=threads),
        "benchmarks/b.py:1 bench",
        _rounds(level, rounds, seed),
    )


def _save(repo, sha: str, *results: BenchmarkResult, when: int | None = None, subject: str | None = None) -> None:
    c = (
        repo.git("show", "-s", "--format=%H%n%ct%n%s", sha).split("\n")
        if when is None
        else [sha, str(when), subject or "c"]
    )
    info = CommitInfo(c[0], (), "Test Author", "author@example.com", int(c[1]), int(c[1]), c[2])
    Store(repo.path / ".regress").save(
        CommitResult(info, "testbox", "default", Fingerprint("testbox"), Settings(), tuple(results))
    )


def _two_commits(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("make add slower | <b>bold</b>")
    _save(
        repo,
        base,
        _result("ops", "add", 1e-5, seed=1),
        _result("ops", "mul", 2e-5, seed=2),
        _result("ops", "gone", 3e-5, seed=3),
        _result("ops", "add", 1e-5, seed=4, threads=2),
        _result("io|<x>", "read", 5e-3, seed=5),
    )
    failing = BenchmarkResult(
        TaskSpec("read()", label="io|<x>", sub_label="read"),
        "benchmarks/b.py:1",
        failure=Failure("error", "OSError: disk", "b.py:3"),
    )
    _save(
        repo,
        head,
        _result("ops", "add", 1.2e-5, seed=6),
        _result("ops", "mul", 2e-5, seed=7),
        _result("ops", "new one", 1e-6, seed=8),
        _result("ops", "add", 1e-5, seed=9, threads=2),
        failing,
    )
    return base, head


def cli(repo, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """The CLI's own entry point, in this process: same parsing, dispatch and exit codes, no interpreter start."""
    from regress.cli import main as regress_cli

    monkeypatch.chdir(repo.path)
    code = regress_cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(result) -> str:
    code, out, err = result
    assert code == 2, err + out
    (line,) = err.strip().splitlines()
    assert line.startswith("regress: error: ")
    return line


def _error_line(proc) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_compare_text_grouped_worst_first(repo):
    _two_commits(repo)
    proc = repo.regress("compare", "HEAD~1", "HEAD", check=True)
    out = proc.stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("  ") and not line.startswith("  ops /")]
    verdicts = [
        (r[0], r[-1]) for r in rows if r and r[-1] in ("regression", "unchanged", "new", "missing", "failed", "noisy")
    ]
    assert verdicts == [
        ("read", "failed"),
        ("add", "regression"),
        ("new", "new"),
        ("gone", "missing"),
        ("mul", "unchanged"),
        ("add", "unchanged"),
    ]
    assert out.index("[") < out.index("1 thread") < out.index("2 threads")
    assert "+20.0%" in out and "10.00 us" in out and "12.00 us" in out
    assert "OSError: disk" in out
    assert "1 regression, 1 unchanged" not in out and "1 regression, 1 failed, 1 new, 1 missing, 2 unchanged" in out
    assert "\x1b[" not in out


def test_fail_on_regression_and_threshold(repo, monkeypatch, capsys):
    _two_commits(repo)
    proc = repo.regress("compare", "HEAD~1", "HEAD", "--fail-on-regression")
    assert proc.returncode == 1 and "regression" in proc.stdout and proc.stderr == ""
    assert cli(repo, monkeypatch, capsys, "compare", "HEAD~1", "HEAD")[0] == 0
    code, out, _ = cli(
        repo,
        monkeypatch,
        capsys,
        "compare",
        "HEAD~1",
        "HEAD",
        "--fail-on-regression",
        "--threshold",
        "30%",
        "--format",
        "json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["threshold"] == 0.3 and doc["summary"]["regression"] == 0
    code, out, _ = cli(
        repo,
        monkeypatch,
        capsys,
        "compare",
        "HEAD~1",
        "HEAD",
        "--fail-on-regression",
        "--bench",
        "mul",
        "--format",
        "json",
    )
    assert code == 0 and [v["sub_label"] for v in json.loads(out)["verdicts"]] == ["mul"]


def test_compare_json_is_stable_and_complete(repo, monkeypatch, capsys):
    base, head = _two_commits(repo)
    code, out, _ = cli(repo, monkeypatch, capsys, "compare", "HEAD~1", "HEAD", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "regress-compare" and doc["version"] == 1
    assert doc["base"]["sha"] == base and doc["head"]["sha"] == head
    assert doc["machine"] == "testbox" and doc["env"] == "default"
    assert doc["summary"] == {
        "regression": 1,
        "improvement": 0,
        "unchanged": 2,
        "noisy": 0,
        "new": 1,
        "missing": 1,
        "failed": 1,
    }
    reg = next(v for v in doc["verdicts"] if v["verdict"] == "regression")
    assert set(reg) >= {
        "id",
        "label",
        "sub_label",
        "description",
        "num_threads",
        "base",
        "head",
        "base_iqr",
        "head_iqr",
        "ratio",
        "ci_low",
        "ci_high",
        "p_value",
        "base_rounds",
        "head_rounds",
        "reason",
    }
    assert reg["id"] == "ops / add [1 thread]" and abs(reg["ratio"] - 1.2) < 0.01
    assert reg["base"] < reg["head"] and reg["base_rounds"] == 10 and reg["p_value"] < 0.05
    gone = next(v for v in doc["verdicts"] if v["verdict"] == "missing")
    assert gone["head"] is None and gone["ratio"] is None


def test_compare_markdown_table_escapes_names(repo, monkeypatch, capsys):
    _two_commits(repo)
    code, md, _ = cli(repo, monkeypatch, capsys, "compare", "HEAD~1", "HEAD", "--format", "markdown")
    assert code == 0
    assert md.startswith("### regress: 1 regression")
    assert "| benchmark | threads | base | head | change | verdict |" in md
    assert "| add | 1 | 10.00 us" in md and "**regression**" in md
    assert "io\\|&lt;x&gt;" in md and "<x>" not in md
    assert "&lt;b&gt;bold&lt;/b&gt;" in md and "<b>" not in md
    assert "<details>" in md and "OSError: disk" in md


def test_compare_user_mistakes(repo, monkeypatch, capsys):
    _two_commits(repo)
    third = repo.commit("unmeasured")

    def error(*args: str) -> str:
        return _one_error(cli(repo, monkeypatch, capsys, "compare", *args))

    assert "unknown revision 'nope'" in error("HEAD~1", "nope")
    assert "is a range of 2 commits" in error("HEAD~2..HEAD", "HEAD")
    assert "write 5%" in error("HEAD~2", "HEAD~1", "--threshold", "5")
    assert "--threshold" in error("HEAD~2", "HEAD~1", "--threshold", "lots")
    assert "only applies with --measure" in error("HEAD~2", "HEAD~1", "--rounds", "3")
    assert "not a valid regular expression" in error("HEAD~2", "HEAD~1", "--bench", "(")
    line = error("HEAD~1", "HEAD")
    assert f"no results for HEAD ({third[:10]})" in line and "--measure" in line
    # The same mistake through the real entry point: one line, exit 2, no traceback.
    assert "no results for HEAD" in _error_line(repo.regress("compare", "HEAD~1", "HEAD"))


def test_regressions_text_and_json(repo, monkeypatch, capsys):
    assert "regress run HEAD~20..HEAD" in _one_error(cli(repo, monkeypatch, capsys, "regressions"))
    levels = [1e-5] * 12 + [1.3e-5] * 12
    for i, level in enumerate(levels):
        sha = f"{i + 1:02x}" * 20
        _save(
            repo,
            sha,
            _result("ops", "add", level, rounds=3, seed=i),
            _result("ops", "flat", 2e-5, rounds=3, seed=100 + i),
            when=1_000_000 + i,
            subject=f"change {i}",
        )
    proc = repo.regress("regressions", check=True)
    lines = proc.stdout.splitlines()
    assert lines[0] == "0d0d0d0d0d change 12"
    assert lines[1].split()[:2] == ["regression", "+30.0%"]
    assert "10.00 us -> 13.00 us" in lines[1] and "ops / add [1 thread]" in lines[1]
    assert "flat" not in proc.stdout
    code, out, _ = cli(repo, monkeypatch, capsys, "regressions", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "regress-regressions" and doc["commits"] == 24
    (step,) = doc["steps"]
    assert step["commit"]["sha"] == "0d" * 20 and step["index"] == 12
    assert step["direction"] == "regression" and abs(step["ratio"] - 1.3) < 1e-9
    code, out, _ = cli(repo, monkeypatch, capsys, "regressions", "--threshold", "50%")
    assert code == 0 and out.startswith("no steps beyond 50% in 24 measured commits")


def test_compare_measure_alternates_fresh_rounds(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("slower", {"src/mypkg/__init__.py": "def work(n):\n    return sum(range(n * 3))\n"})
    proc = repo.regress(
        "compare", "HEAD~1", "HEAD", "--measure", "--rounds", "2", "--bench", "n=100 ", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stderr.splitlines() if line.startswith("round")] == [
        "round 1/2",
        "round 1/2",
        "round 2/2",
        "round 2/2",
    ]
    store = Store(repo.path / ".regress")
    starts = []
    for sha in (base, head):
        (r,) = store.load("testbox", "default", sha).results
        assert r.id.sub_label == "n=100" and len(r.samples) == 2
        starts += [(s.started_at, sha) for s in r.samples]
    # In turn, and the second round in the other order (base head, head base): a
    # machine that slows down over the minutes slows both sides alike.
    assert [sha for _, sha in sorted(starts)] == [base, head, head, base]
    (v,) = json.loads(proc.stdout)["verdicts"]
    assert v["verdict"] == "noisy" and v["base_rounds"] == v["head_rounds"] == 2
    assert "only 2 round(s)" in v["reason"]


def test_plan_more_takes_what_noisy_verdicts_ask_for():
    import re

    from regress.analysis.diff import Verdict
    from regress.core.records import BenchmarkId
    from regress.flows.rounds import MOST_ROUNDS_PER_SIDE, exact_filter, plan_more

    def v(sub, verdict, b, h, needed=None):
        return Verdict(
            BenchmarkId("ops", sub, "", 1), verdict, 1.0, 1.0, None, None, 1.0, None, "", b, h, rounds_needed=needed
        )

    verdicts = [
        v("a (x)", "noisy", 10, 12, 20),
        v("b", "unchanged", 10, 10),
        v("c", "noisy", 2, 2, 10),
        v("d", "new", 0, 10),
    ]
    take, chosen = plan_more(verdicts)
    assert take == 18 and [c.id.sub_label for c in chosen] == ["a (x)", "c"]
    take, chosen = plan_more(verdicts, rounds=12)
    assert take == 10 and len(chosen) == 3
    assert plan_more([v("b", "unchanged", 10, 10)]) == (0, [])
    assert plan_more([v("a", "noisy", 1, 1, 500)])[0] == MOST_ROUNDS_PER_SIDE - 1
    pattern = re.compile(exact_filter(c.id for c in chosen))
    assert pattern.search("ops / a (x) [1 thread]") and pattern.search("ops / c [1 thread]")
    assert not pattern.search("ops / a (x) [2 threads]") and not pattern.search("ops / cc [1 thread]")
