#!/usr/bin/env python
"""Time `regress report` on a large fabricated history (a benchmark, not a test).

    python scripts/time_report.py                       # 1,000 commits x 200 benchmarks
    python scripts/time_report.py --commits 200 --benchmarks 50 --work /tmp/small

Fabricates the results folder once (scripts/fabricate_history.py; kept in
--work and reused), makes a throwaway git project pointing at it, then runs
the real CLI: a full build, and an `--incremental` rebuild with nothing new.
Prints wall and CPU seconds of each, the site's total size, its largest page
and the overview's own weight (the page plus the site's CSS and JS, without
the shared Plotly asset, which it does not load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.fabricate_history import fabricate  # noqa: E402


def _run(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout.strip()


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--benchmarks", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--times", type=int, default=10)
    p.add_argument("--work", type=Path, default=Path("/tmp/regress-scale"), help="folder for results, project and site")
    a = p.parse_args(argv)

    work = a.work.resolve()
    results = work / "results"
    stamp = results / ".fabricated.json"
    params = {"commits": a.commits, "benchmarks": a.benchmarks, "rounds": a.rounds, "times": a.times}
    if not stamp.is_file() or json.loads(stamp.read_text()) != params:
        if results.exists():
            subprocess.run(["rm", "-rf", str(results)], check=True)
        t0 = time.perf_counter()
        fabricate(results, **params)
        stamp.write_text(json.dumps(params))
        print(f"fabricated {a.commits} commits x {a.benchmarks} benchmarks in {time.perf_counter() - t0:.1f} s")
    project = work / "project"
    if not (project / ".git").is_dir():
        project.mkdir(parents=True, exist_ok=True)
        (project / "pyproject.toml").write_text(f'[tool.regress]\nresults = "{results}"\n')
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run(git + ["init", "-q", "-b", "main"], cwd=project, check=True)
        subprocess.run(git + ["add", "-A"], cwd=project, check=True)
        subprocess.run(git + ["commit", "-q", "-m", "project"], cwd=project, check=True)

    site = work / "site"
    subprocess.run(["rm", "-rf", str(site)], check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, "-m", "regress", "report", "--out", str(site)]
    print("$ cd", project, "&&", "PYTHONPATH=" + str(ROOT), " ".join(["python", *cmd[1:]]))
    wall, cpu, out = _run(cmd, project, env)
    print(out)
    print(f"full build:        {wall:5.1f} s wall, {cpu:5.1f} s CPU")
    wall, cpu, out = _run(cmd + ["--incremental"], project, env)
    print(f"incremental build: {wall:5.1f} s wall, {cpu:5.1f} s CPU (nothing new: {out.split('; ')[-1]})")

    files = [f for f in site.rglob("*") if f.is_file()]
    total = sum(f.stat().st_size for f in files)
    pages = [f for f in files if f.suffix == ".html"]
    largest = max(pages, key=lambda f: f.stat().st_size)
    assets = site / "assets"
    plotly = next(assets.glob("plotly-*.js"))
    own = [site / "index.html", *(f for f in assets.iterdir() if f != plotly)]
    print(f"site: {len(files)} files, {_mb(total)} in all ({_mb(plotly.stat().st_size)} of it the shared Plotly asset)")
    print(f"largest page: {largest.relative_to(site)} {_mb(largest.stat().st_size)}")
    print(f"overview with its own data (index.html + site CSS/JS): {_mb(sum(f.stat().st_size for f in own))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
