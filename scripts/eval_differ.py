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
runs with the default settings (min_run_time 0.2 s; ten `regress run` rounds
per commit, i.e. the proposed `--rounds 10` default, each a fresh worker;
commits one after another, never interleaved), into a results folder of its
own. With `--interleave` the rounds of the five commits are taken in turn
instead, as `regress compare --measure` takes them. Then
`regress.analysis.diff.compare` (the code behind `regress compare`) judges base->aa
and base->slowX for every benchmark.

    python scripts/eval_differ.py measure DIR --trials 15     # writes DIR (resumable)
    python scripts/eval_differ.py analyze DIR --others        # prints the rates
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

SUITE = """
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
"""

PYPROJECT = """
[project]
name = "evalpkg"
version = "0"

[tool.regress]
machine = "evalbox"
"""


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "eval",
        "GIT_AUTHOR_EMAIL": "eval@example.com",
        "GIT_COMMITTER_NAME": "eval",
        "GIT_COMMITTER_EMAIL": "eval@example.com",
        "PATH": "/usr/bin:/bin",
    }
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
    from regress.core import config
    from regress.flows import runner

    out = Path(args.dir).resolve()
    meta_path = out / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
    else:
        shas = make_project(out / "project")
        meta = {"shas": shas, "rounds": args.rounds, "interleave": args.interleave, "trials": []}
        meta_path.write_text(json.dumps(meta, indent=1))
    rng = random.Random(args.seed + len(meta["trials"]))
    for _ in range(args.trials):
        t = len(meta["trials"])
        order = list(COMMITS)
        rng.shuffle(order)
        results = out / "results" / f"t{t:03d}"
        cfg = config.load(out / "project", results=str(results))
        started = time.time()
        if meta.get("interleave"):
            # What `compare --measure` does: one round of each commit in turn.
            for _ in range(meta["rounds"]):
                for name in order:
                    runner.run(cfg, runner.Options(revisions=(meta["shas"][name],)))
        else:
            for name in order:
                for _ in range(meta["rounds"]):
                    runner.run(cfg, runner.Options(revisions=(meta["shas"][name],)))
        meta["trials"].append(
            {
                "results": str(results),
                "order": order,
                "seconds": time.time() - started,
                "load": os.getloadavg()[1],  # 5-minute load average at the end: how busy the machine was
            }
        )
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
    from regress.analysis.diff import compare
    from regress.storage.store import Store

    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        loaded = {
            name: _first_rounds(store.load("evalbox", "default", sha), rounds) for name, sha in meta["shas"].items()
        }
        for pair, name in PAIRS.items():
            for v in compare(loaded["base"], loaded[name], threshold=threshold):
                yield pair, v


def analyze(args) -> None:
    from collections import Counter, defaultdict

    meta = json.loads((Path(args.dir) / "meta.json").read_text())
    meta["trials"] = [
        t for t in meta["trials"][args.first :] if args.max_load is None or t.get("load", 0) <= args.max_load
    ]
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for pair, v in judge_trials(meta, args.rounds, args.threshold):
        group = "1 thread" if v.id.num_threads == 1 else f"{v.id.num_threads} threads"
        counts[(pair, group)][v.verdict] += 1
        counts[(pair, "all")][v.verdict] += 1
    rounds = args.rounds or meta["rounds"]
    seconds = sum(t["seconds"] for t in meta["trials"]) / max(1, len(meta["trials"])) / len(COMMITS)
    loads = [t.get("load") for t in meta["trials"] if t.get("load") is not None]
    how = "interleaved (as compare --measure)" if meta.get("interleave") else "separate runs, one commit after another"
    print(
        f"{len(meta['trials'])} trials, {rounds} rounds per commit, {how}, threshold {args.threshold:.0%}; "
        f"~{seconds * rounds / meta['rounds']:.0f}s per commit for {len(meta['trials']) and _n_bench(meta)} benchmarks"
        + (f"; 5-min load average {min(loads):.1f} to {max(loads):.1f}" if loads else "")
    )
    print(f"{'pair':6} {'benchmarks':10} {'n':>4}  {'flagged':>8}  regression improvement unchanged noisy other")
    for (pair, group), c in sorted(counts.items(), key=lambda kv: (list(PAIRS).index(kv[0][0]), kv[0][1])):
        n = sum(c.values())
        flagged = c["regression"] + c["improvement"]
        rate = flagged / n if pair == "A/A" else c["regression"] / n
        label = "false alarms" if pair == "A/A" else "detected"
        other = n - sum(c[k] for k in ("regression", "improvement", "unchanged", "noisy"))
        print(
            f"{pair:6} {group:10} {n:4d}  {rate:8.1%}  {c['regression']:10d} {c['improvement']:11d} {c['unchanged']:9d} {c['noisy']:5d} {other:5d}   ({label})"
        )
    if args.others:
        other_methods(meta, args.rounds, args.threshold)
        estimators(meta, args.rounds)


def other_methods(meta: dict, rounds: int | None, threshold: float) -> None:
    """The same data judged the ways peers judge it, for comparison (1-thread benchmarks)."""
    from collections import Counter, defaultdict

    import numpy as np
    from scipy import stats as sps

    from regress.storage.store import Store

    def median_mwu(b, h):
        bm, hm = [s.median for s in b.samples], [s.median for s in h.samples]
        ratio = float(np.median(hm) / np.median(bm))
        p = sps.mannwhitneyu(hm, bm, alternative="two-sided").pvalue
        return ratio if p < 0.05 and abs(np.log(ratio)) >= np.log1p(threshold) else 1.0

    def one_number(b, h):  # one run each, previous number against this one
        return h.samples[0].median / b.samples[0].median

    def pooled_median(b, h):  # every block of every round, no test
        return h.median / b.median

    methods = {
        "median of rounds + Mann-Whitney": median_mwu,
        "one number per commit": one_number,
        "pooled median, no test": pooled_median,
    }
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        loaded = {
            n: _first_rounds(store.load("evalbox", "default", sha), rounds).by_id() for n, sha in meta["shas"].items()
        }
        for bid, base in loaded["base"].items():
            if bid.num_threads != 1:
                continue
            for pair, name in PAIRS.items():
                for m, f in methods.items():
                    ratio = f(base, loaded[name][bid])
                    flagged = abs(np.log(ratio)) >= np.log1p(threshold)
                    counts[(m, pair)]["n"] += 1
                    counts[(m, pair)]["hit"] += bool(flagged and (pair == "A/A" or ratio > 1))
    print("\nthe same rounds judged other ways (1-thread benchmarks; A/A: false alarms, else detected):")
    for m in methods:
        cells = [f"{pair} {counts[(m, pair)]['hit'] / counts[(m, pair)]['n']:6.1%}" for pair in PAIRS]
        print(f"  {m:32s} " + "   ".join(cells))


def estimators(meta: dict, rounds: int | None) -> None:
    """How far apart separate runs of the same code land, by the statistic that summarises a commit."""
    import numpy as np

    from regress.storage.store import Store

    def fastest(s):
        return min(s.raw_times) / s.number_per_run

    ways = {
        "median of the rounds' medians": lambda r: np.median([s.median for s in r.samples]),
        "every block pooled, median (torch's merged Measurement)": lambda r: np.median(r.times),
        "median of the rounds' fastest blocks": lambda r: np.median([fastest(s) for s in r.samples]),
        "fastest round's fastest block (regress)": lambda r: min(fastest(s) for s in r.samples),
    }
    logs: dict[tuple[str, str], list[float]] = {}
    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        loaded = {
            n: _first_rounds(store.load("evalbox", "default", sha), rounds).by_id() for n, sha in meta["shas"].items()
        }
        for bid, base in loaded["base"].items():
            if bid.num_threads != 1:
                continue
            for way, f in ways.items():
                for pair, name in PAIRS.items():
                    logs.setdefault((way, pair), []).append(float(np.log(f(loaded[name][bid]) / f(base))))
    print("\nlog(head/base) of 1-thread benchmarks by statistic: spread is the scaled MAD over benchmarks and trials")
    print(f"  {'statistic':56s} {'A/A spread':>10} {'A/A worst':>9} {'+5% 5th pct':>11} {'+10% 5th pct':>12}")
    for way in ways:
        aa = np.array(logs[(way, "A/A")])
        mad = 1.4826 * np.median(np.abs(aa - np.median(aa)))
        p5 = np.exp(np.quantile(logs[(way, "+5%")], 0.05))
        p10 = np.exp(np.quantile(logs[(way, "+10%")], 0.05))
        print(f"  {way:56s} {mad:10.1%} {np.exp(np.max(np.abs(aa))):8.2f}x {p5:10.3f}x {p10:11.3f}x")


def _n_bench(meta: dict) -> int:
    from regress.storage.store import Store

    trial = meta["trials"][0]
    return len(Store(Path(trial["results"])).load("evalbox", "default", meta["shas"]["base"]).results)


# -- change points on a fabricated history ------------------------------------


def fabricate_history(seed: int, *, commits: int = 200, benchmarks: int = 20, rounds: int = 10):
    """A history with known steps; returns (history, truth).

    Noise follows what the measured A/A pairs showed for a commit's level
    (its fastest round): about 1% between runs on a quiet benchmark, more on
    some; 3% of commits are outliers (+10% to +100%: a run on a busy
    machine). Per benchmark 0-3 clean steps of 7-30% either way, at least 12
    commits apart; every fourth benchmark also slides +3% a commit for five
    commits (+16% in all); every fifth has a 2% step that is real but below
    the threshold (not counted either way).
    truth: benchmark id -> list of (first index, ratio, span, counted).
    """
    import math

    import numpy as np

    from regress.core.records import BenchmarkResult, CommitInfo, CommitResult, Fingerprint, Sample, Settings, TaskSpec

    rng = np.random.default_rng(seed)
    specs, logs, sigmas, truth = [], [], [], {}
    for k in range(benchmarks):
        spec = TaskSpec(stmt=f"f{k}()", label="fabricated", sub_label=f"bench {k}")
        sigma = (0.005, 0.01, 0.02)[k % 3]
        log = np.full(commits, math.log(1e-5 * (1 + k)))
        events = []
        positions: list[int] = []
        for _ in range(int(rng.integers(0, 4))):
            for _try in range(100):
                p = int(rng.integers(10, commits - 5))
                if all(abs(p - q) > 12 for q in positions):
                    positions.append(p)
                    break
        for p in sorted(positions):
            size = float(rng.choice([0.07, 0.10, 0.15, 0.30, -0.10, -0.20]))
            log[p:] += math.log1p(size)
            events.append((p, 1 + size, 1, True))
        if k % 4 == 0:
            for _try in range(100):
                p = int(rng.integers(15, commits - 20))
                if all(abs(p - q) > 15 for q in positions):
                    for j in range(5):
                        log[p + j :] += math.log1p(0.03)
                    events.append((p, 1.03**5, 5, True))
                    positions.append(p)
                    break
        if k % 5 == 0:
            for _try in range(100):
                p = int(rng.integers(15, commits - 20))
                if all(abs(p - q) > 15 for q in positions):
                    log[p:] += math.log1p(0.02)
                    events.append((p, 1.02, 1, False))
                    break
        specs.append(spec)
        logs.append(log)
        sigmas.append(sigma)
        truth[spec.id] = sorted(events)
    history = []
    for i in range(commits):
        results = []
        for spec, log, sigma in zip(specs, logs, sigmas):
            level = log[i] + rng.normal(0, sigma)
            if rng.random() < 0.03:
                level += math.log(rng.uniform(1.1, 2.0))
            samples = tuple(
                Sample(1, (float(math.exp(level + abs(rng.normal(0, sigma)) * (1 + 5 * (rng.random() < 0.3)))),))
                for _ in range(rounds)
            )
            results.append(BenchmarkResult(spec, "fabricated.py:1", samples))
        info = CommitInfo(
            f"{seed:08x}{i:032x}", (), "eval", "eval@example.com", 1_000_000 + i, 1_000_000 + i, f"commit {i}"
        )
        history.append(CommitResult(info, "evalbox", "default", Fingerprint("evalbox"), Settings(), tuple(results)))
    return history, truth


def history_from_measurements(meta: dict, seed: int, *, commits: int = 200):
    """A 200-commit history whose every commit is a real measured commit of the A/A eval.

    Commits 0-59 are drawn from base/aa runs (REPS 20), 60-119 from slow10,
    120-159 from slow25, 160-199 from base/aa again: real noise between
    separate runs, steps of +10%, +13.6% and -20% at known places.
    """
    import random as _random
    from dataclasses import replace

    from regress.core.records import CommitInfo
    from regress.storage.store import Store

    rng = _random.Random(seed)
    runs: dict[str, list] = {name: [] for name in COMMITS}
    for trial in meta["trials"]:
        store = Store(Path(trial["results"]))
        for name, sha in meta["shas"].items():
            runs[name].append(store.load("evalbox", "default", sha))
    plan = [("base", "aa")] * 60 + [("slow10",)] * 60 + [("slow25",)] * 40 + [("base", "aa")] * 40
    history = []
    for i, names in enumerate(plan[:commits]):
        measured = rng.choice(runs[rng.choice(names)])
        info = CommitInfo(
            f"{seed:08x}{i:032x}", (), "eval", "eval@example.com", 1_000_000 + i, 1_000_000 + i, f"commit {i}"
        )
        history.append(replace(measured, commit=info))
    steps = [(60, 22 / 20, 1, True), (120, 25 / 22, 1, True), (160, 20 / 25, 1, True)]
    truth = {r.id: list(steps) for r in history[0].results if r.ok}
    return history, truth


def changepoints(args) -> None:
    from collections import Counter

    from regress.analysis.changepoints import find_steps

    found, true, false = Counter(), Counter(), Counter()
    below = 0
    missed = []
    seconds = 0.0
    meta = json.loads((Path(args.measured) / "meta.json").read_text()) if args.measured else None
    group = {}
    for seed in range(args.histories):
        history, truth = history_from_measurements(meta, seed) if meta else fabricate_history(seed)
        for bid in truth:
            group[bid] = "1 thread" if bid.num_threads == 1 else f"{bid.num_threads} threads"
        started = time.perf_counter()
        steps = find_steps(history, threshold=args.threshold)
        seconds += time.perf_counter() - started
        matched = set()
        for s in steps:
            hits = [
                e
                for e in truth[s.id]
                if e[0] - args.tolerance <= s.index <= e[0] + e[2] - 1 + args.tolerance and (e[1] > 1) == (s.ratio > 1)
            ]
            if not hits:
                false[group[s.id]] += 1
                print(f"  false step: history {seed}, {s.id}, commit {s.index}, {s.ratio:.3f}")
            elif not hits[0][3]:
                below += 1
            # A slide reported as one step may cover a neighbouring true step too.
            for e in truth[s.id]:
                if (
                    e[0] - args.tolerance <= s.index + s.span - 1
                    and s.index <= e[0] + e[2] - 1 + args.tolerance
                    and (e[1] > 1) == (s.ratio > 1)
                ):
                    matched.add((s.id, e[0]))
        for bid, events in truth.items():
            for e in events:
                if not e[3]:
                    continue
                true[group[bid]] += 1
                if (bid, e[0]) in matched:
                    found[group[bid]] += 1
                else:
                    missed.append((seed, str(bid), e[0], round(e[1], 3), e[2]))
    n = args.histories
    kind = (
        f"histories of 200 real measured commits (from {args.measured})"
        if meta
        else "fabricated histories of 200 commits"
    )
    print(
        f"{n} {kind} x {len(truth)} benchmarks, threshold {args.threshold:.0%}, match within +-{args.tolerance} commits:"
    )
    for g in sorted(set(group.values())):
        commits = n * 200 * sum(1 for v in group.values() if v == g)
        print(
            f"  {g:10s} true steps found {found[g]}/{true[g]} ({found[g] / max(true[g], 1):.1%}); "
            f"false steps {false[g]} ({false[g] / commits:.3%} of benchmark-commits)"
        )
    if not meta:
        print(f"  2% steps (real, below the threshold) reported: {below}")
    print(f"  find_steps: {seconds / n:.2f}s per history")
    for m in missed:
        print(f"  missed: history {m[0]}, {m[1]}, commit {m[2]}, ratio {m[3]}, span {m[4]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("measure", help="measure trials into DIR (resumable: adds trials)")
    p.add_argument("dir")
    p.add_argument("--trials", type=int, default=17)
    p.add_argument("--rounds", type=int, default=10, help="rounds per commit per trial (fixed by the first call)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--interleave",
        action="store_true",
        help="rounds of all commits in turn, as `compare --measure` takes them (fixed by the first call)",
    )
    p = sub.add_parser("analyze", help="false-alarm and detection rates of the stored trials")
    p.add_argument("dir")
    p.add_argument("--rounds", type=int, help="judge with only the first N rounds of each commit")
    p.add_argument("--threshold", type=float, default=0.05)
    p.add_argument("--others", action="store_true", help="also judge the rounds the ways other tools do")
    p.add_argument(
        "--first", type=int, default=0, help="leave out the trials before this one (e.g. those used to choose settings)"
    )
    p.add_argument("--max-load", type=float, help="only trials whose 5-minute load average stayed at or below this")
    p = sub.add_parser("changepoints", help="`regress regressions` on fabricated histories with known steps")
    p.add_argument("--histories", type=int, default=10)
    p.add_argument("--threshold", type=float, default=0.05)
    p.add_argument("--tolerance", type=int, default=2, help="commits a found step may be off by")
    p.add_argument(
        "--measured", metavar="DIR", help="build the histories from the real commits measured into DIR by `measure`"
    )
    args = parser.parse_args()
    {"measure": measure, "analyze": analyze, "changepoints": changepoints}[args.command](args)


if __name__ == "__main__":
    main()
