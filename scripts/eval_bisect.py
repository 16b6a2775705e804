"""Evaluate `regress bisect` and `regress explain` on generated repositories.

A 24-commit repository where one commit in the middle makes one benchmark
1.5x slower (the other unchanged); once as is, once with an unbuildable
commit just before the slowdown. Prints each answer, the commits measured
(target: at most 8) and the wall time, then the wall time of `regress
explain` for one benchmark pair. Then a 7% move with docs-only commits
around it, whose ends an earlier `regress run` measured: the answer must be
the culprit or "inconclusive", never a docs-only commit, and `regressions`
must report the same steps after the bisect as before.

Usage: python scripts/eval_bisect.py [--hog]   (--hog: a CPU hog on one core throughout)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N, SLOW_AT = 24, 12

PYPROJECT = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
min_run_time = 0.05
machine = "evalbox"
min_rounds = 3
max_rounds = 5
build_command = "test ! -e BROKEN"
"""

PKG = """
def work(n):
    total = 0
    for i in range(n * {factor} // 2):
        total += i
    return total

def other(n):
    return sum(range(n))
"""

SUITE = """
import torch
import torch.utils.benchmark as benchmark
from mypkg import work, other, softmax_rows

def bench_work():
    yield benchmark.Timer(stmt="work(n)", globals={"work": work, "n": 20000}, label="work", sub_label="loop")
    yield benchmark.Timer(stmt="other(n)", globals={"other": other, "n": 20000}, label="other", sub_label="sum")

def bench_softmax():
    x = torch.randn(256, 512)
    return benchmark.Timer(stmt="softmax_rows(x)", globals={"softmax_rows": softmax_rows, "x": x}, label="softmax")
"""

HAND = """
def softmax_rows(x):
    m = x.max(-1, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)
"""
TORCH = """
import torch

def softmax_rows(x):
    return torch.softmax(x, -1)
"""

ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "GIT_AUTHOR_NAME": "Eval",
    "GIT_AUTHOR_EMAIL": "eval@example.com",
    "GIT_COMMITTER_NAME": "Eval",
    "GIT_COMMITTER_EMAIL": "eval@example.com",
}


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


def write(path: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())


def make_repo(path: Path, broken_at: int | None) -> list[str]:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    shas = []
    for k in range(N):
        files = {"src/mypkg/note.py": f"NOTE = {k}\n"}
        if k == 0:
            files.update(
                {
                    "pyproject.toml": PYPROJECT,
                    "benchmarks/bench_all.py": SUITE,
                    ".gitignore": ".regress/\n",
                    "src/mypkg/__init__.py": PKG.format(factor=2) + HAND,
                }
            )
        if k == SLOW_AT:
            files["src/mypkg/__init__.py"] = PKG.format(factor=3) + HAND  # 1.5x the loop
        if k == broken_at:
            files["BROKEN"] = "does not build\n"
        write(path, files)
        if broken_at is not None and k == broken_at + 1:
            (path / "BROKEN").unlink()
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"change {k}")
        shas.append(git(path, "rev-parse", "HEAD"))
    return shas


def regress(path: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "regress", *args], cwd=path, env=ENV, capture_output=True, text=True, check=False
    )
    return proc, time.perf_counter() - started


def bisect_case(work: Path, name: str, broken_at: int | None) -> None:
    path = work / name
    shas = make_repo(path, broken_at)
    proc, seconds = regress(path, "bisect", shas[0], shas[-1], "--bench", "^work", "--format", "json")
    if proc.returncode != 0:
        print(f"{name}: bisect failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
        return
    doc = json.loads(proc.stdout)
    index = {sha: k for k, sha in enumerate(shas)}
    answer = [index[c["sha"]] for c in doc["candidates"]]
    right = answer == [SLOW_AT] or (broken_at is not None and set(answer) <= {SLOW_AT, broken_at} and SLOW_AT in answer)
    verdict = doc["verdict"][0] if doc["verdict"] else {}
    print(
        f"{name}: {N} commits, slowdown 1.5x at #{SLOW_AT}"
        + (f", #{broken_at} unbuildable" if broken_at is not None else "")
    )
    print(
        f"  answer: commit(s) #{answer} ({'right' if right else 'WRONG'}); last good #{index[doc['last_good']['sha']]}"
    )
    print(f"  verdict against parent: {verdict.get('verdict')} ratio {verdict.get('ratio') or 0:.2f}")
    print(
        f"  commits measured: {doc['measured']} (target <= 8); probes: "
        + ", ".join(f"#{index[p['sha']]}:{p['state']}" for p in doc["probes"])
    )
    print(f"  wall time: {seconds:.1f} s")


def explain_case(work: Path) -> None:
    path = work / "explain"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    write(
        path,
        {
            "pyproject.toml": PYPROJECT,
            "benchmarks/bench_all.py": SUITE,
            ".gitignore": ".regress/\n",
            "src/mypkg/__init__.py": PKG.format(factor=2) + HAND,
        },
    )
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "hand-written softmax")
    write(path, {"src/mypkg/__init__.py": PKG.format(factor=2) + TORCH})
    git(path, "commit", "-q", "-am", "torch.softmax")
    proc, seconds = regress(path, "explain", "HEAD~1", "HEAD", "--bench", "softmax", "--format", "json")
    if proc.returncode != 0:
        print(f"explain failed: {proc.stderr.strip()[-300:]}")
        return
    (item,) = json.loads(proc.stdout)["benchmarks"]
    top = ", ".join(f"{r['name']} {r['status']}" for r in item["ops"][:4])
    print(f"explain, one benchmark pair (softmax hand-written -> torch.softmax): {seconds:.1f} s wall; top ops: {top}")


DOCS_PYPROJECT = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
min_run_time = 0.05
machine = "evalbox"
"""

DOCS_PKG = """
def work(n):
    total = 0
    for i in range(n * {num} // 100):
        total += i
    return total
"""

DOCS_SUITE = """
import torch.utils.benchmark as benchmark
from mypkg import work

def bench_work():
    yield benchmark.Timer(stmt="work(n)", globals={"work": work, "n": 20000}, label="work", sub_label="loop")
"""

# 16 commits: #8 makes `work` 7% slower; #5-7 and #9-10 edit only the README.
DOCS_N, DOCS_SLOW, DOCS_ONLY = 16, 8, {5, 6, 7, 9, 10}


def docs_case(work: Path) -> None:
    path = work / "docs-around"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    shas = []
    for k in range(DOCS_N):
        if k == 0:
            files = {
                "pyproject.toml": DOCS_PYPROJECT,
                "benchmarks/bench_all.py": DOCS_SUITE,
                ".gitignore": ".regress/\n",
            }
            files["src/mypkg/__init__.py"] = DOCS_PKG.format(num=100)
        elif k in DOCS_ONLY:
            files = {"README.md": f"docs, take {k}\n"}
        else:
            files = {"src/mypkg/note.py": f"NOTE = {k}\n"}
        if k == DOCS_SLOW:
            files["src/mypkg/__init__.py"] = DOCS_PKG.format(num=107)
        write(path, files)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", ("docs " if k in DOCS_ONLY else "change ") + str(k))
        shas.append(git(path, "rev-parse", "HEAD"))
    earlier = [shas[0], shas[3], shas[12], shas[-1]]
    regress(path, "run", *earlier)  # an earlier run measured the ends (and two more)
    before, _ = regress(path, "regressions", "--format", "json")
    proc, seconds = regress(path, "bisect", shas[0], shas[-1], "--bench", "^work", "--format", "json")
    after, _ = regress(path, "regressions", "--format", "json")
    steps = [[(s["commit"]["sha"], s["sub_label"]) for s in json.loads(p.stdout)["steps"]] for p in (before, after)]
    index = {sha: k for k, sha in enumerate(shas)}
    print(f"docs-around: {DOCS_N} commits, +7% at #{DOCS_SLOW}, docs-only #{sorted(DOCS_ONLY)}, ends measured earlier")
    if proc.returncode != 0:
        print(f"  bisect: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    else:
        doc = json.loads(proc.stdout)
        answer = [index[c["sha"]] for c in doc["candidates"]]
        named = doc["first_bad"] and index[doc["first_bad"]["sha"]]
        ok = named == DOCS_SLOW or (doc["inconclusive"] and not set(answer) & DOCS_ONLY)
        state = f"first bad #{named}" if doc["first_bad"] else f"inconclusive ({(doc['inconclusive'] or '')[:80]})"
        print(f"  answer: {state}; candidates #{answer} ({'right' if ok else 'WRONG'})")
        print(
            f"  commits measured: {doc['measured']}; probes: "
            + ", ".join(
                f"#{index[p['sha']]}:{p['state']}{'' if p['measured'] else ' (not measured)'}" for p in doc["probes"]
            )
        )
        print(f"  wall time: {seconds:.1f} s")
    print(f"  regressions before: {steps[0]}; after: {steps[1]} ({'same' if steps[0] == steps[1] else 'CHANGED'})")


def main() -> None:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--hog", action="store_true", help="a CPU hog on one core throughout")
    args = p.parse_args()
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.hog else None
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; hog: {bool(hog)}")
    try:
        with tempfile.TemporaryDirectory(prefix="regress-eval-bisect-") as tmp:
            work = Path(tmp)
            bisect_case(work, "clean", None)
            bisect_case(work, "unbuildable-beside", SLOW_AT - 1)
            docs_case(work)
            explain_case(work)
    finally:
        if hog is not None:
            hog.kill()
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
