"""A fleet of hosted runners, simulated from real invocations of this machine. An evaluation, not a test.

    python scripts/eval_fleet.py SOURCE_DIR [SOURCE_DIR ...] [--histories 10]

SOURCE_DIR: folders written by `scripts/eval_rounds.py push` (each commit its
own paired `regress run`, as the workflow's push job). From them, every run
that measured two commits gives, for each benchmark whose code did not change
between the two, a real pair of round sets: the rounds of the parent and of
the head, divided by the benchmark's level at that commit (estimated over
every run, `analysis/levels.fit_many`), so what is left is that invocation's luck:
its shift against the other runs and its rounds' spread.

Each simulated history is 200 pushes x 20 benchmarks. Push k's job lands on a
runner of one of four CPU types (speeds 1.0, 0.87, 1.13 and 1.3: the 10-30%
spread between hosted-runner CPU generations, docs/statistics.md), with a
per-benchmark interaction of 3% (sd) per type, and takes one real
invocation's luck drawn at random: each of its benchmarks the luck of one of
that invocation's benchmarks, so a slow mode that held a real run holds the
simulated push alike (drawn per benchmark from any invocation, a run's other
benchmarks would hide it). Every benchmark gets two planted steps, of 5, 10, 20 or
30%, up or down, at random pushes. Scored with pairing (the job measures the
parent again in its run, as `regress run HEAD --paired`) and without (HEAD
alone): `regressions` (changepoints.find_steps) against the planted steps, and
each push's verdict (`regress compare` of the push against its parent as
it reads when the push lands: the allowance for separate runs from the
history, the parent's parent as a neighbour); with --notify, also the
regression steps `regress notify` newly finds after each push.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regress.analysis import changepoints, diff, stats  # noqa: E402
from regress.core.kinds import Kind  # noqa: E402
from regress.core.records import (  # noqa: E402
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Fingerprint,
    Run,
    Sample,
    Settings,
    TaskSpec,
)
from regress.storage.store import Store  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import eval_rounds  # noqa: E402  (the validation of the stated detectable change, shared)

PUSHES = 200
BENCHMARKS = 20
TYPES = (1.0, 0.87, 1.13, 1.3)
INTERACTION = 0.03
SIZES = (0.05, 0.10, 0.20, 0.30)


def real_luck(sources: list[Path]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per paired run: (parent rounds, head rounds) / true level of each of its unchanged benchmarks.

    A benchmark's true level between two of its planted changes is the median,
    over every run and commit of that stretch, of the runs' levels: what is
    left after dividing by it is the invocation's luck, its shift included.
    Kept per run: a run's benchmarks share its machine's state (a slow mode
    holds them all at once), which the slow-mode test reads.
    """
    groups: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = {}
    for src in sources:
        meta = json.loads((src / "meta.json").read_text())
        order = [sha for sha, _ in meta["commits"]]
        changed = {sha: op for sha, op in meta["commits"]}
        store = Store(src / "project" / ".regress")
        (machine,) = store.machines()
        results = {c.commit.sha: c for c in store.history(machine, "default")}
        ids = {r.id for c in results.values() for r in c.results}
        for bid in sorted(ids, key=str):  # a fixed order: the simulation is the same for one --seed
            name = bid.sub_label.split()[0]
            stretch, k = {}, 0
            for sha in order:
                k += changed.get(sha) == name
                stretch[sha] = k
            by_run: dict[str, dict[str, np.ndarray]] = {}
            levels_of: dict[int, list[float]] = {}
            for sha in order:
                r = results[sha].by_id().get(bid) if sha in results else None
                if r is None or not r.ok:
                    continue
                for run, values in stats.by_run(r).items():
                    by_run.setdefault(run, {})[sha] = np.asarray(values)
                    levels_of.setdefault(stretch[sha], []).append(min(values))
            true = {k: float(np.median(v)) for k, v in levels_of.items()}
            for run_id, measured in by_run.items():
                if len(measured) != 2:
                    continue
                parent, head = sorted(measured, key=order.index)
                if stretch[parent] != stretch[head]:
                    continue  # a planted change for this benchmark: not luck
                groups.setdefault((str(src), run_id), []).append(
                    (measured[parent] / true[stretch[parent]], measured[head] / true[stretch[head]])
                )
    return list(groups.values())


def _result(bid: int, values: np.ndarray, run: str) -> BenchmarkResult:
    spec = TaskSpec(stmt=f"b{bid}()", label="fleet", sub_label=f"b{bid:02d}")
    return BenchmarkResult(spec, "sim", tuple(Sample(1, (float(v),), run=run) for v in values))


def history(rng: np.random.Generator, pool, *, paired: bool):
    """One simulated history: CommitResults oldest first, and the planted steps {(bench, push): ratio}."""
    truth = np.ones((BENCHMARKS, PUSHES))
    planted = {}
    for b in range(BENCHMARKS):
        for at in rng.choice(np.arange(10, PUSHES - 10), size=2, replace=False):
            size = SIZES[rng.integers(len(SIZES))] * rng.choice((-1, 1))
            ratio = 1 + size if size > 0 else 1 / (1 - size)
            truth[b, at:] *= ratio
            planted[(b, int(at))] = ratio
    interaction = np.exp(rng.normal(0, INTERACTION, (len(TYPES), BENCHMARKS)))
    held: list[dict[int, list]] = [{b: [] for b in range(BENCHMARKS)} for _ in range(PUSHES)]
    cpu_of = {}
    for k in range(PUSHES):
        t = rng.integers(len(TYPES))
        run = f"20260101T{k:06d}-fleet"
        cpu_of[run] = f"CPU type {t}"  # the fingerprint records the runner's CPU model
        luck = pool[rng.integers(len(pool))]  # one real run's luck for every benchmark of this push
        for b in range(BENCHMARKS):
            parent, head = luck[rng.integers(len(luck))]
            speed = 1e-4 * TYPES[t] * interaction[t, b]
            held[k][b].append((run, truth[b, k] * speed * head))
            if paired and k:
                held[k - 1][b].append((run, truth[b, k - 1] * speed * parent))
    out = []
    for k in range(PUSHES):
        results = []
        run_ids = []
        for b in range(BENCHMARKS):
            samples = []
            for run, values in held[k][b]:
                samples += _result(b, values, run).samples
                run_ids.append(run)
            results.append(replace(_result(b, np.array([]), ""), samples=tuple(samples)))
        sha = f"{k:040x}"
        out.append(
            CommitResult(
                CommitInfo(sha, (f"{k - 1:040x}",) if k else (), "sim", "s@x", k, k, f"push {k}"),
                "fleet",
                "default",
                Fingerprint("fleet", cores=4),
                Settings(),
                tuple(results),
                runs=tuple(Run(r, fingerprint=Fingerprint("fleet", cpu=cpu_of[r])) for r in dict.fromkeys(run_ids)),
            )
        )
    return out, planted


def score_notify(hist, planted, tally: Counter) -> None:
    """`regress notify` after every push: the regression steps the history up to it newly finds (as
    changepoints.newly_found: not found, within MOVED positions, without the push's results), scored as
    `regressions` is: a planted slowdown found at its push, or a false step where none was planted near."""
    before: list = []
    slow = {(b, k) for (b, k), ratio in planted.items() if ratio > 1}
    for k in range(1, PUSHES):
        now = [s for s in changepoints.find_steps(hist[: k + 1]) if s.direction == Kind.REGRESSION]
        for s in now:
            if any(b.id == s.id and abs(b.index - s.index) <= changepoints.MOVED for b in before):
                continue
            b = int(s.id.sub_label[1:])
            if (b, s.index) in slow:
                tally[f"notify {planted[b, s.index] - 1:.0%} found"] += 1
            elif not any((b, s.index + d) in slow for d in range(-changepoints.MOVED, changepoints.MOVED + 1)):
                tally["notify false steps"] += 1
        before = now
    for ratio in planted.values():
        if ratio > 1:
            tally[f"notify {ratio - 1:.0%} planted"] += 1


def score(hist, planted, tally: Counter) -> None:
    found = changepoints.find_steps(hist)
    hits = set()
    for s in found:
        b, k = int(s.id.sub_label[1:]), s.index
        want = planted.get((b, k))
        if want is not None and (s.ratio > 1) == (want > 1):
            hits.add((b, k))
        else:
            tally["false steps"] += 1
    for (b, k), ratio in planted.items():
        size = f"{abs(ratio - 1) if ratio > 1 else 1 - 1 / ratio:.0%}"
        tally[f"steps {size} planted"] += 1
        tally[f"steps {size} found"] += (b, k) in hits
    apart = diff.Apart(hist, {}, cores=4)
    for k in range(1, PUSHES):
        # As `regress compare PARENT HEAD` says it when the push lands: the parent's parent, measured, is a
        # neighbour (the blip rule); nothing after the head exists yet.
        verdicts = diff.compare(hist[k - 1], hist[k], apart=apart)
        if k >= 2:
            verdicts = diff.with_neighbours(
                verdicts, hist[k - 1], hist[k], hist[k - 2], None, threshold=0.05, apart=apart
            )
        for v in verdicts:
            b = int(v.id.sub_label[1:])
            want = planted.get((b, k))
            eval_rounds.tally_detectable(tally, v.detectable, want, v.verdict)
            if want is None:
                tally["verdicts unchanged pairs"] += 1
                tally["verdicts false alarms"] += v.verdict in ("regression", "improvement")
            else:
                size = f"{abs(want - 1) if want > 1 else 1 - 1 / want:.0%}"
                tally[f"verdicts {size} planted"] += 1
                tally[f"verdicts {size} found"] += v.verdict == ("regression" if want > 1 else "improvement")
    tally["benchmark-pushes"] += PUSHES * BENCHMARKS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sources", nargs="+")
    p.add_argument("--histories", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--notify", action="store_true", help="also score `regress notify` after every push (paired)")
    args = p.parse_args()
    pool = real_luck([Path(s).resolve() for s in args.sources])
    sets = [pair for run in pool for pair in run]
    print(f"{len(sets)} real (parent, head) round sets from {len(pool)} runs of {len(args.sources)} push evaluations")
    shift = [math.log(stats.level(h) / stats.level(pa)) for pa, h in sets]
    print(f"their paired A/A differences: scaled MAD {1.4826 * np.median(np.abs(shift)) * 100:.2f}%")
    for paired in (True, False):
        tally: Counter = Counter()
        rng = np.random.default_rng(args.seed)
        for _ in range(args.histories):
            hist, planted = history(rng, pool, paired=paired)
            score(hist, planted, tally)
            if paired and args.notify:
                score_notify(hist, planted, tally)
        print(f"\n{'with' if paired else 'without'} pairing, {args.histories} histories:")
        per = 10_000 * tally["false steps"] / tally["benchmark-pushes"]
        print(f"  regressions: {tally['false steps']} false steps ({per:.1f} per 10,000 benchmark-pushes)")
        for size in ("5%", "10%", "20%", "30%"):
            print(
                f"  steps {size:>3}: found {tally[f'steps {size} found']}/{tally[f'steps {size} planted']};"
                f"  push verdicts: found {tally[f'verdicts {size} found']}/{tally[f'verdicts {size} planted']}"
            )
        if paired and args.notify:
            per_n = 10_000 * tally["notify false steps"] / tally["benchmark-pushes"]
            sizes = ", ".join(
                f"{size} {tally[f'notify {size} found']}/{tally[f'notify {size} planted']}"
                for size in ("5%", "10%", "20%", "30%")
            )
            print(
                f"  notify: planted slowdowns newly found at their push: {sizes}; "
                f"{tally['notify false steps']} false steps ({per_n:.1f} per 10,000 benchmark-pushes)"
            )
        for key in sorted(k for k in tally if k.startswith("detectable ")):
            print(f"  {key}: {tally[key]}")
        n = tally["verdicts unchanged pairs"]
        print(
            f"  push verdicts: {tally['verdicts false alarms']}/{n} false alarms ({100 * tally['verdicts false alarms'] / n:.2f}%)"
        )


if __name__ == "__main__":
    main()
