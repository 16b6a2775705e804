"""How honest `regress run`'s "time left" is: predicted against actual remaining time.

    flock -x /tmp/regress-eval.lock python scripts/eval_clock.py [--commits 10] [--out DIR]
    python scripts/eval_clock.py --replay DIR/clock.json   # re-price the recorded states

Builds a throwaway git repository with a small package, a small torch suite
and N commits, and measures `HEAD~N..HEAD` with the default round plan
(min_rounds 5, max_rounds 15, budget 25 s: nothing set in [tool.regress] but
the machine name) through the same engine `regress run` uses, in process, so
every estimate the progress line shows is recorded with its time. Once the
run is over its length is known, and at 10%, 50% and 90% of it the estimate
shown last is set against the time that was really left. Target: each within
25%. It also records each estimate's inputs (every commit's rounds, seconds
and round values), so `--replay` can price them again after a change to
`regress.measure.clock` without measuring.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))

TARGET = 0.25
POINTS = (0.1, 0.5, 0.9)

PACKAGE = """
import torch

def mul_sum(a, b):
    return a.mul(b).sum(-1)  # commit {i}

def softmax(x):
    return torch.softmax(x, -1)
"""

SUITE = """
import torch
import torch.utils.benchmark as benchmark
from clockpkg import mul_sum, softmax


def bench_ops():
    for n in (64, 256, 1024):
        x = torch.ones((n, n))
        yield benchmark.Timer(stmt="mul_sum(x, x)", globals={"mul_sum": mul_sum, "x": x},
                              label="mul_sum", sub_label=f"[{n}, {n}]")
        yield benchmark.Timer(stmt="softmax(x)", globals={"softmax": softmax, "x": x},
                              label="softmax", sub_label=f"[{n}, {n}]")
"""

PYPROJECT = """
[project]
name = "clockpkg"
version = "0"

[tool.regress]
machine = "clock-eval"
"""


def git(cwd: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "e", "GIT_AUTHOR_EMAIL": "e@x", "GIT_COMMITTER_NAME": "e", "GIT_COMMITTER_EMAIL": "e@x"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"})


def make_repo(root: Path, commits: int) -> None:
    (root / "src" / "clockpkg").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT).lstrip())
    (root / "benchmarks" / "bench_ops.py").write_text(textwrap.dedent(SUITE).lstrip())
    git(root, "init", "-q", "-b", "main")
    for i in range(commits + 1):
        (root / "src" / "clockpkg" / "__init__.py").write_text(textwrap.dedent(PACKAGE.format(i=i)).lstrip())
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {i}")


def snapshot(targets, budget) -> list[dict]:
    """What an estimate is computed from: per commit its rounds, seconds, round values and what is final."""
    return [
        {
            "rounds": t.rounds,
            "spent": t.spent,
            "stopped": t.stopped,
            "values": {repr(k): list(v) for k, v in t.values.items()},
            "final": [repr(k) for k in t.final],
        }
        for t in targets
    ]


def rebuild(state: list[dict]):
    """Targets again from a snapshot, neighbours linked as the engine links a range."""
    from regress.core.records import CommitInfo, Settings
    from regress.measure import engine

    targets = []
    for i, s in enumerate(state):
        info = CommitInfo(f"{i:040d}", (), "", "", 0, 0, "")
        t = engine.Target(info, Settings(), Path("."), Path("."), Path("."))
        t.rounds, t.spent, t.stopped = s["rounds"], s["spent"], s["stopped"]
        t.values, t.final = {k: list(v) for k, v in s["values"].items()}, set(s["final"])
        targets.append(t)
    for before, after in zip(targets, targets[1:]):
        before.neighbours.append(after.values)
        after.neighbours.append(before.values)
    return targets


def score(records: list[dict], total: float) -> list[dict]:
    """At each point of the run, the estimate shown last against the time really left."""
    rows = []
    for share in POINTS:
        at = share * total
        shown = [r for r in records if r["t"] <= at and r["left"] is not None]
        if not shown:
            rows.append({"at": share, "predicted": None, "actual": total - at, "error": None})
            continue
        r = shown[-1]
        actual = total - r["t"]
        rows.append(
            {"at": share, "t": r["t"], "predicted": r["left"], "actual": actual, "error": r["left"] / actual - 1}
        )
    return rows


def report(rows: list[dict], total: float) -> bool:
    print(f"run: {total:.1f} s of measuring")
    ok = True
    for r in rows:
        if r["predicted"] is None:
            print(f"  {r['at']:.0%}: no estimate yet")
            ok = False
            continue
        fine = abs(r["error"]) <= TARGET
        ok &= fine
        print(
            f"  {r['at']:.0%} (estimate shown at {r['t']:.1f} s): predicted {r['predicted']:.1f} s left, "
            f"actual {r['actual']:.1f} s, error {r['error']:+.0%} {'ok' if fine else 'OFF'}"
        )
    print(f"target: each within {TARGET:.0%}: {'met' if ok else 'NOT met'}")
    return ok


def replay(path: Path) -> bool:
    from regress.measure import adaptive, clock

    doc = json.loads(path.read_text())
    budget = adaptive.Budget.for_threshold(doc["threshold"], **doc["budget"])
    records = [{"t": r["t"], "left": clock.time_left(rebuild(r["state"]), budget)} for r in doc["records"]]
    return report(score(records, doc["total"]), doc["total"])


def measure(commits: int, out: Path) -> bool:
    from regress.core.config import load
    from regress.flows import runner
    from regress.measure import adaptive, engine
    from regress.measure.one_commit import Collector  # noqa: F401 - imported before timing starts

    work = Path(tempfile.mkdtemp(prefix="regress-clock-"))
    repo = work / "repo"
    repo.mkdir()
    make_repo(repo, commits)
    cfg = load(repo)
    budget = adaptive.budget_for(cfg)
    records: list[dict] = []
    started = [0.0]
    real_time_left = engine.time_left

    def recording_time_left(targets, b):
        left = real_time_left(targets, b)
        if not started[0]:
            started[0] = time.monotonic()
        records.append({"t": time.monotonic() - started[0], "left": left, "state": snapshot(targets, b)})
        return left

    engine.time_left = recording_time_left
    try:
        runner.run(cfg, runner.Options(revisions=(f"HEAD~{commits}..HEAD",)))
    finally:
        engine.time_left = real_time_left
    total = time.monotonic() - started[0]
    out.mkdir(parents=True, exist_ok=True)
    doc = {
        "commits": commits,
        "threshold": cfg.threshold,
        "budget": {"min_rounds": budget.min_rounds, "max_rounds": budget.max_rounds, "seconds": budget.seconds},
        "total": total,
        "records": records,
    }
    (out / "clock.json").write_text(json.dumps(doc))
    final = records[-1]["state"]
    print(f"{commits} commits, rounds per commit: {[s['rounds'] for s in final]}; records in {out / 'clock.json'}")
    return report(score(records, total), total)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", type=int, default=10)
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "regress-eval-clock")
    p.add_argument("--replay", type=Path, metavar="JSON", help="re-price a recorded run's states")
    args = p.parse_args()
    ok = replay(args.replay) if args.replay else measure(args.commits, args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
