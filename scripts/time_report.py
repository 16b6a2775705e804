#!/usr/bin/env python
"""Time the commands that read a long history (a benchmark, not a test).

    python scripts/time_report.py                       # 1,000 commits x 200 benchmarks
    python scripts/time_report.py --commits 200 --benchmarks 50 --work /tmp/small
    python scripts/time_report.py --paired              # as the workflow's pushes: each measures its parent again

Makes a throwaway git project of `--commits` + 1 commits (git fast-import),
fabricates the results of the first `--commits` of them in the shape the
default plan stores (scripts/fabricate_history.py: 5-15 rounds a benchmark of
20-40 blocks, memory and compile figures, several runs per commit; kept in
--work and reused), then runs the real CLI, each command in a fresh process:

  full, summary rebuilt `regress report` into an empty folder, the results summary deleted first
  full report           `regress report` again, every page rewritten (the summary as the last build left it)
  full, verdicts afresh `regress report` with the recent verdicts the last build kept forgotten
  incremental report    `regress report --incremental` after one new commit's results
  regressions           `regress regressions`
  compare               `regress compare A B` across a step (a change: the neighbour rule reads the history)

and prints each one's wall and CPU seconds and peak memory (its own
`getrusage`, from `os.wait4`), then the site's size, its largest page and
the overview's own weight. Run it under the exclusive lock, alone:
`flock -x /tmp/regress-eval.lock python scripts/time_report.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regress.report.data import BARE, WHOLE  # noqa: E402
from scripts.fabricate_history import fabricate  # noqa: E402

MACHINE = "ci-runner"


def _timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak MB, stdout) of one command in its own process.

    The child is reaped with os.wait4, which returns its own rusage: CPU and
    peak memory (ru_maxrss) of that command alone.
    """
    t0 = time.perf_counter()
    with open(os.devnull, "rb") as devnull, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=devnull, stdout=subprocess.PIPE, stderr=err)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        message = err.read().decode(errors="replace")
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{message}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.decode().strip()


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def _project(project: Path, results: Path, n: int) -> list[str]:
    """A git repository of n commits (one file changed each), pointing at `results`; its shas, oldest first."""
    made = project / ".commits"
    if not (project / ".git").is_dir() or not made.is_file() or made.read_text() != str(n):
        subprocess.run(["rm", "-rf", str(project)], check=True)
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
        config = f'[tool.regress]\nresults = "{results}"\nmachine = "{MACHINE}"\n'
        lines = []
        for i in range(n):
            body = config if i == 0 else f"{i}\n"
            name = "pyproject.toml" if i == 0 else "counter.txt"
            msg = f"commit {i}\n"
            lines.append(f"commit refs/heads/main\ncommitter t <t@example.com> {1_700_000_000 + 3600 * i} +0000\n")
            lines.append(f"data {len(msg)}\n{msg}")
            lines.append(f"M 100644 inline {name}\ndata {len(body.encode())}\n{body}\n")
        subprocess.run(["git", "fast-import", "--quiet"], cwd=project, input="".join(lines).encode(), check=True)
        subprocess.run(["git", "checkout", "-q", "main"], cwd=project, check=True)
        (project / ".commits").write_text(str(n))
        (project / ".git" / "info" / "exclude").write_text(".commits\n")
    # Every commit is other code (a changed module, as most pushes are): `counter.txt` is what the
    # benchmarks import. Without it all commits would be one code (`storage/code_identity.py` leaves
    # *.txt out) and be judged as one point, with no steps. In the working tree only: shas unchanged.
    text = (project / "pyproject.toml").read_text()
    if "code_paths" not in text:
        (project / "pyproject.toml").write_text(text + 'code_paths = ["counter.txt"]\n')
    out = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=project, check=True, capture_output=True)
    return out.stdout.decode().split()


def _forget_verdicts(path: Path) -> None:
    """The recent verdicts the last build kept in the memo (storage/memo.py), whole and bare: gone,
    so this build judges every one. Only those: the rest (the candidate steps' verdicts among them, which
    a build whose change points are kept does not judge again) stays kept, as a real history's would."""
    import sqlite3

    with sqlite3.connect(path) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memo'").fetchone():
            db.execute("DELETE FROM memo WHERE kind IN (?, ?)", (WHOLE, BARE))
    db.close()


def _made_new(path: Path) -> None:
    """The new commit's file, never seen before: the fabricated results are the same at every run of
    this script, so without this the figures and change points an earlier run kept for these very
    files would be found again, which a real push never finds. Its measurement's start time is now."""
    import dataclasses

    from regress.storage import codec
    from regress.storage.atomic import write_atomic

    result = codec.decode(path.read_bytes(), str(path))
    write_atomic(path, codec.encode(dataclasses.replace(result, started_at=time.time())))


def main(argv: list[str] | None = None) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # each step shows as it starts, through a pipe too
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--benchmarks", type=int, default=200)
    p.add_argument("--rounds", default="5-15", help="rounds a benchmark (the default plan's range)")
    p.add_argument("--times", default="20-40", help="blocks a round")
    p.add_argument(
        "--regress",
        type=Path,
        default=ROOT,
        help="checkout of regress to time (e.g. an older commit's, for before/after)",
    )
    p.add_argument(
        "--keep-summary",
        action="store_true",
        help="leave out the first row (the summary rebuilt from every file: minutes at 10,000 commits)",
    )
    p.add_argument(
        "--paired",
        action="store_true",
        help="each commit's push run measures its parent again, on machines a few percent apart (the workflow's)",
    )
    p.add_argument("--work", type=Path, default=Path("/tmp/regress-scale"), help="folder for results, project and site")
    a = p.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # each row as it is timed, also into a pipe

    work = a.work.resolve()
    results = work / "results"
    project = work / "project"
    shas = _project(project, results, a.commits + 1)
    stamp = results / ".fabricated.json"
    params = {"commits": a.commits, "benchmarks": a.benchmarks, "rounds": a.rounds, "times": a.times}
    if a.paired:
        params["paired"] = True  # (a stamp without it: an unpaired history, as every run before)
    shape = dict(params, shas=shas)
    if not stamp.is_file() or json.loads(stamp.read_text()) != dict(params, head=shas[-1]):
        subprocess.run(["rm", "-rf", str(results)], check=True)
        print(f"fabricating {a.commits} commits x {a.benchmarks} benchmarks in {results} ...")
        t0 = time.perf_counter()
        fabricate(results, machines=(MACHINE,), **shape)
        stamp.write_text(json.dumps(dict(params, head=shas[-1])))
        print(f"fabricated {a.commits} commits x {a.benchmarks} benchmarks in {time.perf_counter() - t0:.1f} s")
    new = results / MACHINE / "default" / f"{shas[-1]}.pkl"
    new.unlink(missing_ok=True)  # the "one new commit" of the incremental build
    if a.paired:  # and its parent as it was before that push measured it again (a rerun's left it merged in)
        (results / MACHINE / "default" / f"{shas[-2]}.pkl").unlink(missing_ok=True)
        fabricate(results, machines=(MACHINE,), which=[a.commits - 1], **shape)
    folder = results / MACHINE / "default"
    stored = sum(f.stat().st_size for f in folder.glob("*.pkl"))
    print(
        f"results: {_mb(stored)} in {a.commits} files ({stored / a.commits / a.benchmarks / 1e3:.2f} KB a benchmark a commit)"
    )

    site = work / "site"
    subprocess.run(["rm", "-rf", str(site)], check=True)
    code = str(a.regress.resolve())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([code, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    # As an installed regress runs: from its bytecode (pip compiles it; an editable install writes it on
    # first import). Without it every row also compiled ~200 modules, about 0.15 s.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(code) / "regress")], env=env, check=True)
    regress = [sys.executable, "-m", "regress"]
    report = [*regress, "report", "--out", str(site)]
    print("$ cd", project, "&&", "PYTHONPATH=" + code, "python -m regress ...")
    rows = []

    def row(name: str, cmd: list[str]) -> str:
        print(f"{name:<22} ", end="", flush=True)  # what is being timed, at once
        wall, cpu, peak, out = _timed(cmd, project, env)
        rows.append((name, wall, cpu, peak))
        print(f"{wall:6.2f} s wall {cpu:6.2f} s CPU {peak:7.0f} MB peak   ({out.splitlines()[-1][:90] if out else ''})")
        return out

    if not a.keep_summary:
        (results / ".summary.sqlite").unlink(
            missing_ok=True
        )  # storage/summary.py's (a regress without it ignores this)
        row("full, summary rebuilt", report)
    else:
        row("full, figures brought up to date", report)  # what the summary lacks (an older rule's figures) is made
    row("full report", report)
    _forget_verdicts(results / ".summary.sqlite")
    row("full, verdicts afresh", report)
    fabricate(results, machines=(MACHINE,), which=[a.commits], **shape)
    _made_new(new)
    row("incremental report", [*report, "--incremental"])
    found = json.loads(row("regressions", [*regress, "regressions", "--format", "json"]))
    step = next((s for s in found["steps"] if s["index"] > 0), None)
    if step is None:
        print("compare: no step found to compare across")
    else:
        head = shas.index(step["commit"]["sha"])
        row("compare A B", [*regress, "compare", shas[head - 1], shas[head]])

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
