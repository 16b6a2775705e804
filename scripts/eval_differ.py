"""How often does `regress compare` cry wolf, and how often does it catch a real slowdown?

Not part of the test suite: it takes real time (an hour or more on a 2-core
machine). It builds a throwaway git project whose benchmarks are real torch
operations, each repeated REPS times per call, with five commits:

    base      REPS = 20
    aa        the same code (only a comment differs): A/A pairs
    slow5     REPS = 21  (+5% work)
    slow10    REPS = 22  (+10% work)
    slow25    REPS = 25  (+25% work)

Every trial measures all five commits in a random order, each as separate
runs with the default settings (one worker process per round, rounds taken
back to back, commits one after another, never interleaved), into a results
folder of its own. Then `regress.diff.compare` (the code behind `regress
compare`) judges base->aa, base->slowX for every benchmark.

    python scripts/eval_differ.py measure DIR --trials 17     # writes DIR
    python scripts/eval_differ.py analyze DIR                 # prints the rates
    python scripts/eval_differ.py changepoints                # `regress regressions` on a fabricated history

`analyze` only reads DIR, so the decision rule can be studied on stored data;
`--rounds N` judges with only the first N rounds of each commit.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COMMITS = {"base": 20, "aa": 20, "slow5": 21, "slow10": 22, "slow25": 25}

PKG = '''
"""Real torch work, repeated REPS times per call: the eval raises REPS to inject a slowdown."""
import torch
import torch.nn.functional as F

REPS = {reps}  # {comment}


def mul_sum(a, b):
    for _ in range(REPS):
        a.mul(b).sum(-1)


def bmm(a, b):
    for _ in range(REPS):
        torch.bmm(a, b)


def matmul(a, b):
    for _ in range(REPS):
        a @ b


def relu(x):
    for _ in range(REPS):
        torch.relu(x)


def gelu(x):
    for _ in range(REPS):
        F.gelu(x)


def softmax(x):
    for _ in range(REPS):
        x.softmax(-1)


def conv(x, w):
    for _ in range(REPS):
        F.conv2d(x, w, padding=1)


def layer_norm(x):
    for _ in range(REPS):
        F.layer_norm(x, x.shape[-1:])


def small_adds(x):
    for _ in range(REPS):
        x + 1


def sort(x):
    for _ in range(REPS):
        x.sort()


def cumsum(x):
    for _ in range(REPS):
        x.cumsum(0)


def reduce_sum(x):
    for _ in range(REPS):
        x.sum()
'''

SUITE = '''
import torch
import torch.utils.benchmark as benchmark

import evalpkg as k


def bench_eval():
    torch.manual_seed(0)
    cases = [
        ("mul_sum 64x1024", "k.mul_sum(a, a)", dict(a=torch.randn(64, 1024)), 1),
        ("bmm 64x1024", "k.bmm(a, b)", dict(a=torch.randn(64, 1, 1024), b=torch.randn(64, 1024, 1)), 1),
        ("matmul 64", "k.matmul(a, a)", dict(a=torch.randn(64, 64)), 1),
        ("matmul 256", "k.matmul(a, a)", dict(a=torch.randn(256, 256)), 1),
        ("relu 100k", "k.relu(x)", dict(x=torch.randn(100_000)), 1),
        ("gelu 100k", "k.gelu(x)", dict(x=torch.randn(100_000)), 1),
        ("softmax 64x1024", "k.softmax(x)", dict(x=torch.randn(64, 1024)), 1),
        ("conv 8x16x16", "k.conv(x, w)", dict(x=torch.randn(1, 8, 16, 16), w=torch.randn(8, 8, 3, 3)), 1),
        ("layer_norm 64x256", "k.layer_norm(x)", dict(x=torch.randn(64, 256)), 1),
        ("small adds", "k.small_adds(x)", dict(x=torch.randn(4)), 1),
        ("sort 10k", "k.sort(x)", dict(x=torch.randn(10_000)), 1),
        ("matmul 256", "k.matmul(a, a)", dict(a=torch.randn(256, 256)), 2),
        ("gelu 100k", "k.gelu(x)", dict(x=torch.randn(100_000)), 2),
        ("sum 1M", "k.reduce_sum(x)", dict(x=torch.randn(1_000_000)), 2),
    ]
    for name, stmt, env, threads in cases:
        yield benchmark.Timer(stmt=stmt, globals={"k": k, **env}, num_threads=threads, label="eval", sub_label=name)
'''

PYPROJECT = '''
[project]
name = "evalpkg"
version = "0"

[tool.regress]
machine = "evalbox"
'''


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "eval", "GIT_AUTHOR_EMAIL": "eval@example.com",
           "GIT_COMMITTER_NAME": "eval", "GIT_COMMITTER_EMAIL": "eval@example.com", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_project(path: Path) -> dict[str, str]:
    """The throwaway project and its five commits; name -> sha."""
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT).lstrip())
    (path / "benchmarks").mkdir()
    (path / "benchmarks" / "bench_eval.py").write_text(textwrap.dedent(SUITE).lstrip())
    (path / ".gitignore").write_text(".regress/\n")
    pkg = path / "src" / "evalpkg"
    pkg.mkdir(parents=True)
    shas = {}
    for name, reps in COMMITS.items():
        (pkg / "__init__.py").write_text(PKG.lstrip().format(reps=reps, comment=name))
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", name)
        shas[name] = _git(path, "rev-parse", "HEAD")
    return shas


def measure(args) -> None:
    from regress import config, runner

    out = Path(args.dir).resolve()
    meta_path = out / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
    else:
        shas = make_project(out / "project")
        meta = {"shas": shas, "rounds": args.rounds, "trials": []}
        meta_path.write_text(json.dumps(meta, indent=1))
    rng = random.Random(args.seed + len(meta["trials"]))
    for _ in range(args.trials):
        t = len(meta["trials"])
        order = list(COMMITS)
        rng.shuffle(order)
        results = out / "results" / f"t{t:03d}"
        cfg = config.load(out / "project", results=str(results))
        started = time.time()
        for name in order:
            for _ in range(meta["rounds"]):
                runner.run(cfg, runner.Options(revisions=(meta["shas"][name],)))
        meta["trials"].append({
            "results": str(results), "order": order, "seconds": time.time() - started,
            "load": os.getloadavg()[1],  # 5-minute load average at the end: how busy the machine was
        })
        meta_path.write_text(json.dumps(meta, indent=1))
        print(f"trial {t}: {' '.join(order)} in {time.time() - started:.0f}s", flush=True)


def _first_rounds(result, n: int | None):
    """The result as if only its first n rounds had been taken."""
    from dataclasses import replace

    if n is None:
        return result
    return replace(result, results=tuple(replace(r, samples=r.samples[:n]) for r in result.results))


PAIRS = {"A/A": "aa", "+5%": "slow5", "+10%": "slow10", "+25%": "slow25"}


def judge_trials(meta: dict, rounds: int | None, threshold: float):
    """(pair, benchmark id, verdict) for every trial and benchmark."""
    from regress.diff import compare
    from regress.store import Store

    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        loaded = {name: _first_rounds(store.load("evalbox", "default", sha), rounds) for name, sha in meta["shas"].items()}
        for pair, name in PAIRS.items():
            for v in compare(loaded["base"], loaded[name], threshold=threshold):
                yield pair, v


def analyze(args) -> None:
    from collections import Counter, defaultdict

    meta = json.loads((Path(args.dir) / "meta.json").read_text())
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for pair, v in judge_trials(meta, args.rounds, args.threshold):
        group = "1 thread" if v.id.num_threads == 1 else f"{v.id.num_threads} threads"
        counts[(pair, group)][v.verdict] += 1
        counts[(pair, "all")][v.verdict] += 1
    rounds = args.rounds or meta["rounds"]
    seconds = sum(t["seconds"] for t in meta["trials"]) / max(1, len(meta["trials"])) / len(COMMITS)
    print(f"{len(meta['trials'])} trials, {rounds} rounds per commit, threshold {args.threshold:.0%}; "
          f"~{seconds * rounds / meta['rounds']:.0f}s per commit for {len(meta['trials']) and _n_bench(meta)} benchmarks")
    print(f"{'pair':6} {'benchmarks':10} {'n':>4}  {'flagged':>8}  regression improvement unchanged noisy other")
    for (pair, group), c in sorted(counts.items(), key=lambda kv: (list(PAIRS).index(kv[0][0]), kv[0][1])):
        n = sum(c.values())
        flagged = c["regression"] + c["improvement"]
        rate = flagged / n if pair == "A/A" else c["regression"] / n
        label = "false alarms" if pair == "A/A" else "detected"
        other = n - sum(c[k] for k in ("regression", "improvement", "unchanged", "noisy"))
        print(f"{pair:6} {group:10} {n:4d}  {rate:8.1%}  {c['regression']:10d} {c['improvement']:11d} {c['unchanged']:9d} {c['noisy']:5d} {other:5d}   ({label})")


def _n_bench(meta: dict) -> int:
    from regress.store import Store

    trial = meta["trials"][0]
    return len(Store(Path(trial["results"])).load("evalbox", "default", meta["shas"]["base"]).results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("measure", help="measure trials into DIR (resumable: adds trials)")
    p.add_argument("dir")
    p.add_argument("--trials", type=int, default=17)
    p.add_argument("--rounds", type=int, default=10, help="rounds per commit per trial (fixed by the first call)")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("analyze", help="false-alarm and detection rates of the stored trials")
    p.add_argument("dir")
    p.add_argument("--rounds", type=int, help="judge with only the first N rounds of each commit")
    p.add_argument("--threshold", type=float, default=0.05)
    args = parser.parse_args()
    {"measure": measure, "analyze": analyze}[args.command](args)


if __name__ == "__main__":
    main()
