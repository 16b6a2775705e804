"""Does the default `regress run` give true verdicts? Two evaluations, not tests.

Both use the real CLI with its default round plan (no flags), on throwaway
git projects of real torch code, on this machine. Run each alone.

    python scripts/eval_rounds.py range DIR [--neighbour NAME]
        A project of 10 commits x 8 one-thread benchmarks with planted changes
        (2x, 0.33x, 1.3x, 1.1x; the rest A/A commits). One `regress run` of the
        whole range, then `regress compare` of every adjacent pair and
        `regress regressions`, scored against the truth. --neighbour runs one
        of scripts/neighbours.py's throughout (hog, bursty, modal, install;
        --hog is --neighbour hog).
        --pytest also writes the same 8 benchmarks as pytest-benchmark tests
        (parametrized, a conftest fixture with params), measured in the same
        run; each suite is scored apart.

    python scripts/eval_rounds.py score-range DIR
        Scores a measured range again (after a change to the differ).

    python scripts/eval_rounds.py push DIR [--neighbours | --neighbour NAME]
        The push path: the same 10-commit project, each commit measured by its
        own invocation exactly as the workflow's push job runs it (HEAD checked
        out, `regress run HEAD --paired --skip-existing`), oldest first; then
        scored like `range`. --neighbours gives the pushes different
        neighbours in turn: none, a CPU hog on one core, a bursty hog;
        --neighbour NAME gives every push that one (scripts/neighbours.py).

    python scripts/eval_rounds.py separate DIR --trials 7
        A/A and detection between separate runs: per trial, `regress run` of
        each of five commits (base, aa, aa2: the same work, a comment apart; slow5, slow10: +5%
        and +10% work) one after another, in a random order, each its own
        invocation, as CI measures one push at a time. Then compare judges
        base/aa, base/aa2, aa/aa2 (A/A) and base/slow5, base/slow10.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_differ  # noqa: E402  (its project: real torch ops repeated REPS times)
import neighbours  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "eval",
    "GIT_AUTHOR_EMAIL": "eval@example.com",
    "GIT_COMMITTER_NAME": "eval",
    "GIT_COMMITTER_EMAIL": "eval@example.com",
    "PATH": "/usr/bin:/bin",
}

# -- the planted range ---------------------------------------------------------

# Four ops, each a loop of small torch ops: the loop count plants the change.
OPS = '''
"""Four small-op loops; the loop counts are what the commits change."""
import torch

N_ADD = {add}
N_MUL = {mul}
N_SIN = {sin}
N_CLAMP = {clamp}
# {note}


def op_add(x):
    for _ in range(N_ADD):
        x = x.add(1.0)
    return x


def op_mul(x):
    for _ in range(N_MUL):
        x = x.mul(1.0001)
    return x


def op_sin(x):
    for _ in range(N_SIN):
        x = torch.sin(x)
    return x


def op_clamp(x):
    for _ in range(N_CLAMP):
        x = x.clamp(-2.0, 2.0)
    return x
'''

RANGE_SUITE = """
import torch
import torch.utils.benchmark as benchmark

import ops


def bench_ops():
    for n in (64, 16384):
        x = torch.linspace(-1, 1, n)
        for name in ("add", "mul", "sin", "clamp"):
            yield benchmark.Timer(stmt=f"ops.op_{name}(x)", globals={"ops": ops, "x": x},
                                  label="ops", sub_label=f"{name} {n}")
"""

# The same benchmarks as pytest-benchmark tests, run unchanged (--pytest).
PYTEST_CONFTEST = """
import pytest
import torch


@pytest.fixture(params=[64, 16384], ids=str)
def x(request):
    return torch.linspace(-1, 1, request.param)
"""

PYTEST_SUITE = """
import pytest

import ops


@pytest.mark.benchmark(group="ops (pytest)")
@pytest.mark.parametrize("name", ["add", "mul", "sin", "clamp"])
def test_op(benchmark, name, x):
    out = benchmark(getattr(ops, f"op_{name}"), x)
    assert out.shape == x.shape
"""

BASE = {"add": 10, "mul": 30, "sin": 10, "clamp": 10}
# (subject, changed op, new count): 2x, 0.33x, 1.3x, 1.1x and A/A commits.
HISTORY = [
    ("c0 base", None, None),
    ("c1 comment only", None, None),
    ("c2 add twice as many", "add", 20),
    ("c3 comment only", None, None),
    ("c4 mul three times fewer", "mul", 10),
    ("c5 sin 1.3x", "sin", 13),
    ("c6 comment only", None, None),
    ("c7 clamp 1.1x", "clamp", 11),
    ("c8 comment only", None, None),
    ("c9 comment only", None, None),
]
PLANTED = {"add": 2.0, "mul": 1 / 3, "sin": 1.3, "clamp": 1.1}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_range(path: Path, pytest: bool = False) -> list[tuple[str, str | None]]:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "pyproject.toml").write_text(
        '[project]\nname = "ops"\nversion = "0"\n\n[tool.regress]\nmachine = "evalbox"\n'
    )
    (path / "benchmarks").mkdir()
    (path / "benchmarks" / "bench_ops.py").write_text(textwrap.dedent(RANGE_SUITE).lstrip())
    if pytest:
        (path / "benchmarks" / "conftest.py").write_text(PYTEST_CONFTEST.lstrip())
        (path / "benchmarks" / "test_ops.py").write_text(PYTEST_SUITE.lstrip())
    (path / ".gitignore").write_text(".regress/\n")
    counts = dict(BASE)
    out = []
    for subject, op, n in HISTORY:
        if op is not None:
            counts[op] = n
        (path / "ops.py").write_text(OPS.lstrip().format(note=subject, **counts))
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", subject)
        out.append((_git(path, "rev-parse", "HEAD"), op))
    return out


def _regress(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regress", *args], cwd=project, capture_output=True, text=True)


def run_range(args) -> None:
    out = Path(args.dir).resolve()
    project = out / "project"
    commits = make_range(project, pytest=args.pytest)
    name = "hog" if args.hog else args.neighbour
    neighbour = neighbours.start(name)
    try:
        started = time.time()
        proc = _regress(project, "run", f"{commits[0][0]}^!", f"{commits[0][0]}..{commits[-1][0]}")
        seconds = time.time() - started
    finally:
        neighbour.stop()
    if proc.returncode not in (0, 1):
        sys.exit(f"regress run failed: {proc.stderr[-2000:]}")
    meta = {"seconds": seconds, "hog": name, "load": os.getloadavg(), "commits": commits, "pytest": args.pytest}
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    score_range(out)


def _op(v: dict) -> tuple[str, str]:
    """(the op a verdict or step is about, its suite's score prefix: "" Timers, "pytest " the tests).

    A Timer's sub_label is "add 64"; a test's parameter id "64-add" (the conftest's size first)."""
    if v.get("label") == "ops (pytest)":
        return next(p for p in v["sub_label"].split("-") if not p.isdigit()), "pytest "
    return v["sub_label"].split()[0], ""


def stated(v: dict) -> float | None:
    """A verdict's stated detectable change (a fraction): its JSON field, else its reason's clause."""
    if v.get("detectable") is not None:
        return float(v["detectable"])
    found = re.search(r"detects (\d+(?:\.\d+)?)% at", v.get("reason", ""))
    return float(found.group(1)) / 100 if found else None


# Bins of the stated detectable change the validation groups benchmarks by.
BINS = ((0.0, 0.05), (0.05, 0.10), (0.10, 0.20), (0.20, float("inf")))


def bin_of(d: float | None) -> str:
    if d is None:
        return "none stated"
    lo, hi = next(b for b in BINS if b[0] <= d < b[1])
    return f"{lo:.0%}-{hi:.0%}" if hi != float("inf") else f">={lo:.0%}"


def tally_detectable(score: Counter, d: float | None, planted: float | None, verdict: str) -> None:
    """The validation of the stated detectable change: planted changes at or above it found; A/A pairs
    called a change; per bin of the stated figure."""
    where = bin_of(d)
    if planted is None:
        score[f"detectable {where}: A/A pairs"] += 1
        score[f"detectable {where}: A/A false alarms"] += verdict in ("regression", "improvement")
    elif d is not None and abs(math.log(planted)) >= math.log1p(d):
        score[f"detectable {where}: planted at or above it"] += 1
        score[f"detectable {where}: found"] += verdict == ("regression" if planted > 1 else "improvement")


def score_range(out: Path) -> None:
    """Every adjacent `regress compare` and `regress regressions` of a measured range, against the truth."""
    meta = json.loads((out / "meta.json").read_text())
    project, commits, seconds = out / "project", [tuple(c) for c in meta["commits"]], meta["seconds"]
    score: Counter = Counter()
    lines = []
    for (prev, _), (sha, op) in zip(commits, commits[1:]):
        got = json.loads(_regress(project, "compare", prev, sha, "--format", "json").stdout)
        for v in got["verdicts"]:
            name, suite = _op(v)
            truth = None
            if name == op:
                truth = "regression" if PLANTED[op] > 1 else "improvement"
            verdict = v["verdict"]
            if verdict not in ("new", "missing", "failed"):
                tally_detectable(score, stated(v), PLANTED[op] if truth else None, verdict)
            size = f"{PLANTED[op]:.2g}x" if truth else "none"
            if truth:
                score[f"{suite}compare {size} found"] += verdict == truth
                score[f"{suite}compare {size} total"] += 1
            elif verdict in ("regression", "improvement"):
                score[f"{suite}compare false alarms"] += 1
                lines.append(f"  false alarm: {sha[:8]} {v['label']} {v['sub_label']} {verdict} {v['reason']}")
            else:
                score[f"{suite}compare true negatives"] += verdict == "unchanged"
                score[f"{suite}compare noisy (no change)"] += verdict == "noisy"
            score[f"{suite}compare pairs"] += 1
    steps = json.loads(_regress(project, "regressions", "--format", "json").stdout)["steps"]
    planted = {(sha, op) for sha, op in commits if op}
    found = set()
    suites = sorted({_op(s)[1] for s in steps} | {""} | ({"pytest "} if meta.get("pytest") else set()))
    for s in steps:
        name, suite = _op(s)
        key = (s["commit"]["sha"], name)
        if key in planted:
            found.add((key, suite, s["sub_label"]))
        else:
            score[f"{suite}regressions false steps"] += 1
            lines.append(f"  false step: {s['commit']['sha'][:8]} {s.get('label')} {s['sub_label']} {s['ratio']:.3f}")
    for sha, op in commits:
        if op:
            for suite in suites:
                n = sum(1 for (k, su, _label) in found if k == (sha, op) and su == suite)
                score[f"{suite}regressions {PLANTED[op]:.2g}x found"] += n
                score[f"{suite}regressions {PLANTED[op]:.2g}x total"] += 2
    report = {
        "seconds": seconds,
        "per_commit": seconds / len(commits),
        "hog": meta["hog"],
        "load": meta["load"],
        "score": dict(score),
        "notes": lines,
    }
    (out / "score.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


# --neighbours: the pushes' neighbours in turn.
ROTATION = ["none", "hog", "bursty"]


def run_push(args) -> None:
    out = Path(args.dir).resolve()
    project = out / "project"
    commits = make_range(project)
    started = time.time()
    pushes = []
    for k, (sha, _op) in enumerate(commits):
        kind = ROTATION[k % 3] if args.neighbours else args.neighbour
        _git(project, "checkout", "-q", "--detach", sha)
        neighbour = neighbours.start(kind)
        t0 = time.time()
        try:
            proc = _regress(project, "run", "HEAD", "--paired", "--skip-existing")
        finally:
            neighbour.stop()
        if proc.returncode not in (0, 1):
            sys.exit(f"regress run failed at {sha[:10]}: {proc.stderr[-2000:]}")
        pushes.append({"sha": sha, "neighbour": kind, "seconds": time.time() - t0})
        print(f"push {k}: {sha[:10]} ({kind}) {time.time() - t0:.0f}s", flush=True)
    _git(project, "checkout", "-q", "main")
    seconds = time.time() - started
    meta = {
        "seconds": seconds,
        "hog": "rotation" if args.neighbours else args.neighbour,
        "load": os.getloadavg(),
        "commits": commits,
        "pushes": pushes,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    score_range(out)


# -- separate runs: A/A and detection ------------------------------------------

SEPARATE = {"base": 20, "aa": 20, "aa2": 20, "slow5": 21, "slow10": 22}
SEPARATE_PAIRS = {
    "A/A": [("base", "aa"), ("base", "aa2"), ("aa", "aa2")],
    "+5%": [("base", "slow5")],
    "+10%": [("base", "slow10")],
}


def make_separate(path: Path) -> dict[str, str]:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "pyproject.toml").write_text(textwrap.dedent(eval_differ.PYPROJECT).lstrip())
    (path / "benchmarks").mkdir()
    (path / "benchmarks" / "bench_eval.py").write_text(textwrap.dedent(eval_differ.SUITE).lstrip())
    (path / ".gitignore").write_text(".regress/\n")
    pkg = path / "src" / "evalpkg"
    pkg.mkdir(parents=True)
    shas = {}
    for name, reps in SEPARATE.items():
        (pkg / "__init__.py").write_text(eval_differ.PKG.lstrip().format(reps=reps, comment=name))
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", name)
        shas[name] = _git(path, "rev-parse", "HEAD")
    return shas


def run_separate(args) -> None:
    out = Path(args.dir).resolve()
    meta_path = out / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
    else:
        meta = {"shas": make_separate(out / "project"), "trials": []}
    rng = random.Random(len(meta["trials"]))
    for _ in range(args.trials):
        t = len(meta["trials"])
        order = list(SEPARATE)
        rng.shuffle(order)
        results = out / "results" / f"t{t:03d}"
        started = time.time()
        for name in order:
            proc = _regress(out / "project", "run", meta["shas"][name], "--results", str(results))
            if proc.returncode not in (0, 1):
                sys.exit(proc.stderr[-2000:])
        meta["trials"].append(
            {"results": str(results), "order": order, "seconds": time.time() - started, "load": os.getloadavg()[1]}
        )
        meta_path.write_text(json.dumps(meta, indent=1))
        print(f"trial {t}: {' '.join(order)} in {time.time() - started:.0f}s", flush=True)
    analyze_separate(meta)


def analyze_separate(meta: dict) -> None:
    from regress.analysis.diff import compare
    from regress.storage.store import Store

    tally: dict[tuple[str, int], Counter] = {}
    detect: Counter = Counter()
    rounds: list[int] = []
    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        loaded = {name: store.load("evalbox", "default", sha) for name, sha in meta["shas"].items()}
        for r in loaded["base"].results:
            rounds.append(len(r.samples))
        for pair, couples in SEPARATE_PAIRS.items():
            for a, b in couples:
                for v in compare(loaded[a], loaded[b]):
                    tally.setdefault((pair, v.id.num_threads), Counter())[v.verdict] += 1
                    if v.id.num_threads == 1:
                        planted = None if pair == "A/A" else SEPARATE[b] / SEPARATE[a]
                        tally_detectable(detect, v.detectable, planted, v.verdict)
    print(
        f"{len(meta['trials'])} trials, {sum(t['seconds'] for t in meta['trials']) / len(meta['trials']):.0f} s each; "
        f"rounds per benchmark at base: min {min(rounds)}, median {sorted(rounds)[len(rounds) // 2]}, max {max(rounds)}"
    )
    for (pair, threads), c in sorted(tally.items()):
        n = sum(c.values())
        hit = c["regression"] if pair != "A/A" else c["regression"] + c["improvement"]
        what = "false alarms" if pair == "A/A" else "found"
        print(f"{pair:5} {threads} thread(s): {hit}/{n} {what} ({100 * hit / n:.1f}%)  {dict(c)}")
    print("stated detectable change (1 thread), by bin:")
    for key in sorted(detect):
        print(f"  {key}: {detect[key]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("range")
    r.add_argument("dir")
    r.add_argument("--hog", action="store_true")
    r.add_argument("--pytest", action="store_true", help="the planted suite also as pytest-benchmark tests")
    r.add_argument("--neighbour", default="none", choices=sorted(neighbours.STARTERS))
    s = sub.add_parser("separate")
    s.add_argument("dir")
    s.add_argument("--trials", type=int, default=7)
    sc = sub.add_parser("score-range")
    sc.add_argument("dir")
    a = sub.add_parser("analyze-separate")
    a.add_argument("dir")
    pu = sub.add_parser("push")
    pu.add_argument("dir")
    pu.add_argument("--neighbours", action="store_true")
    pu.add_argument("--neighbour", default="none", choices=sorted(neighbours.STARTERS))
    args = p.parse_args()
    if args.what == "range":
        run_range(args)
    elif args.what == "push":
        run_push(args)
    elif args.what == "score-range":
        score_range(Path(args.dir).resolve())
    elif args.what == "separate":
        run_separate(args)
    else:
        analyze_separate(json.loads((Path(args.dir) / "meta.json").read_text()))


if __name__ == "__main__":
    main()
