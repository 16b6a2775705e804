#!/usr/bin/env python
"""What a push job's `regress results pull` transfers from a results branch of many pushes.

    flock -x /tmp/regress-eval.lock python scripts/eval_partial_pull.py --history /tmp/w18-big --work /tmp/w18-pull

`--history` is a folder `scripts/time_report.py` made (`project/`, a git
repository of N+1 commits, and `results/`, a result file for each). An origin
is made of them: the project's commits on main, and a `regress-results` branch
of one push per result file, oldest first (`scripts/branch_history.py`),
served with partial clones allowed, as GitHub serves them. Then, each in a
fresh clone of the code alone and timed in its own process:

- `regress results pull`: what the pull did before, the whole branch;
- `regress results pull --near HEAD`: the measure job's pull;
- `regress results pull --partial`: the publish job's, after one more push
  (the newest commit measured again), with the summary the whole pull left
  restored as the job's cache restores it;
- `git clone --filter=blob:none` of every branch: what the measure job's
  checkout (`fetch-depth: 0`, `filter: blob:none`) brings of the results
  branch besides (its commits and trees), against the same clone of main alone.

Bytes are those of every pack git received, by git's own trace (GIT_TRACE_PACKFILE).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.branch_history import fetched_bytes, write_branch

ROOT = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_origin(history: Path, work: Path) -> tuple[Path, int]:
    bare = work / "origin.git"
    if bare.exists():
        return bare, int(git(bare, "rev-list", "--count", "regress-results")) - 1
    project = history / "project"
    git(work, "clone", "-q", "--bare", "--no-local", str(project), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    shas = git(project, "rev-list", "--reverse", "HEAD").split()
    found = {p.stem: p for p in (history / "results").glob("*/*/*.pkl")}
    rels = [(found[s].relative_to(history / "results").as_posix(), found[s]) for s in shas if s in found]
    return bare, write_branch(bare, ((rel, path.read_bytes()) for rel, path in rels)) - 1


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[int, float, float, float, str]:
    """Bytes received, wall, CPU seconds and peak RSS (MB) of one command, reaped with os.wait4."""
    trace = cwd.parent / f"{cwd.name}.packs"
    trace.unlink(missing_ok=True)
    start = time.perf_counter()
    with open(cwd.parent / f"{cwd.name}.out", "w+") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**env, "GIT_TRACE_PACKFILE": str(trace)}, stdout=out, stderr=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        said = out.read().strip()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {said}")
    size = trace.stat().st_size if trace.exists() else 0
    return size, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, said.splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", type=Path, default=Path("/tmp/w18-big"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/w18-pull"))
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    bare, pushes = make_origin(args.history, args.work)
    url = f"file://{bare}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    regress = [sys.executable, "-m", "regress"]

    def clone_of(name: str) -> Path:
        clone = args.work / name
        shutil.rmtree(clone, ignore_errors=True)
        git(args.work, "clone", "-q", "--single-branch", "--branch", "main", url, str(clone))
        return clone

    def pull(name: str, clone: Path, *extra: str) -> None:
        cmd = [*regress, "results", "pull", "--results", str(clone / ".regress"), *extra]
        rows.append((name, *timed(cmd, clone, env)))

    whole = clone_of("branch")
    pull("results pull (whole branch)", whole)
    near = clone_of("HEAD")
    pull("results pull --near HEAD", near, "--near", "HEAD")
    # One more push: the newest commit measured again (an extra benchmark), as a paired push rewrites it.
    head = git(near, "rev-parse", "HEAD")
    code = (
        "import sys; from pathlib import Path; from regress.storage.store import Store; import dataclasses; s = Store(Path(sys.argv[1]));"
        "m = s.machines()[0]; r = s.load(m, 'default', sys.argv[2]); b = r.results[0];"
        "t = dataclasses.replace(b.spec, sub_label=b.spec.sub_label + '-again-' + sys.argv[3]);"
        "s.absorb(dataclasses.replace(r, results=(dataclasses.replace(b, spec=t),)))"
    )
    again = str(time.time_ns())  # a benchmark no earlier run of this script pushed
    subprocess.run([sys.executable, "-c", code, str(near / ".regress"), head, again], env=env, check=True)
    subprocess.run([*regress, "results", "push", "--results", str(near / ".regress")], cwd=near, env=env, check=True)
    publish = clone_of("publish")
    (publish / ".regress").mkdir()
    shutil.copy2(whole / ".regress" / ".summary.sqlite", publish / ".regress" / ".summary.sqlite")
    pull("results pull --partial (publish)", publish, "--partial")
    for clone in (whole, near, publish):
        shutil.rmtree(clone / ".regress", ignore_errors=True)
    checkout = {}
    for name, extra in (("all", []), ("main", ["--single-branch", "--branch", "main"])):
        dest = args.work / f"checkout-{name}"
        shutil.rmtree(dest, ignore_errors=True)
        checkout[name], _ = fetched_bytes(
            ["git", "clone", "-q", "--filter=blob:none", *extra, url, str(dest)], args.work
        )
    full = rows[0][1]
    print(f"results branch: {pushes} pushes, {bare}")
    print(f"{'command':32} {'bytes received':>16} {'of full':>8} {'wall':>8} {'CPU':>8} {'peak':>8}")
    for name, size, wall, cpu, peak, said in rows:
        print(f"{name:32} {size:>16,} {size / full:>8.2%} {wall:>7.2f}s {cpu:>7.2f}s {peak:>6.0f}MB   {said}")
    branch_trees = checkout["all"] - checkout["main"]
    print(
        f"{'checkout: the branch commits+trees':32} {branch_trees:>16,} {branch_trees / full:>8.2%}"
        f"   (filtered clone of every branch {checkout['all']:,} B, of main alone {checkout['main']:,} B)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
