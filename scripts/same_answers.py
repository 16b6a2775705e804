#!/usr/bin/env python
"""Same answers with an empty memo and a full one (an evaluation, not a test).

    python scripts/same_answers.py WORK        # a folder `scripts/time_report.py --work WORK` made

On the history `time_report.py` fabricated in WORK (results and project),
runs, each in its own process:

  1. with the memo emptied: `regress report --out A`, then `regress regressions --format json`;
  2. with the memo as (1) left it (every value kept): `regress report --out B` and
     `regress regressions --format json` again, with REGRESS_VERIFY_CACHE=1 off, so
     every kept value is read, not recomputed;

and compares what users read: the two `regressions` JSON documents (but for
nothing), the overview's verdict sections and change list, and every chart's
and label page's data files, byte for byte. Prints the first difference, or
that they are the same, and exits 1 on a difference. Each run's wall time is
printed too (the second is the one a memo makes fast).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regress.storage import memo  # noqa: E402


def _empty_memo(results: Path) -> None:
    path = results / memo.FILE
    if path.is_file():
        with sqlite3.connect(path) as db:
            for table in memo.TABLES:
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                    db.execute(f"DELETE FROM {table}")
        db.close()


def _run(cmd: list[str], cwd: Path, env: dict) -> tuple[str, float]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout, time.perf_counter() - t0


def _overview(site: Path) -> str:
    """The overview's verdicts and change list: its page less the build time."""
    text = (site / "index.html").read_text(encoding="utf-8")
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "", text)


def _data_files(site: Path) -> list[str]:
    return sorted(f.relative_to(site).as_posix() for f in (site / "data").rglob("*.js"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work", type=Path)
    a = p.parse_args(argv)
    work = a.work.resolve()
    results, project = work / "results", work / "project"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop(memo.VERIFY, None)
    regress = [sys.executable, "-m", "regress"]
    answers = {}
    for name, empty in (("empty", True), ("full", False)):
        if empty:
            _empty_memo(results)
        site = work / f"same-{name}"
        subprocess.run(["rm", "-rf", str(site)], check=True)
        _, built = _run([*regress, "report", "--out", str(site)], project, env)
        found, took = _run([*regress, "regressions", "--format", "json"], project, env)
        print(f"memo {name:5}: report {built:6.2f} s, regressions {took:5.2f} s")
        answers[name] = (site, json.loads(found))
    (a_site, a_json), (b_site, b_json) = answers["empty"], answers["full"]
    if a_json != b_json:
        print("DIFFERENT: regressions --format json")
        return 1
    if _overview(a_site) != _overview(b_site):
        print("DIFFERENT: the overview (index.html)")
        return 1
    files = _data_files(a_site)
    if files != _data_files(b_site):
        print("DIFFERENT: the sites' data files are other files")
        return 1
    for rel in files:
        if not filecmp.cmp(a_site / rel, b_site / rel, shallow=False):
            print(f"DIFFERENT: {rel}")
            return 1
    pages = sorted(f.relative_to(a_site).as_posix() for f in a_site.rglob("*.html"))
    differ = [
        rel for rel in pages if rel != "index.html" and not filecmp.cmp(a_site / rel, b_site / rel, shallow=False)
    ]
    if differ:
        print(f"DIFFERENT: {len(differ)} pages, the first {differ[0]}")
        return 1
    steps = len(a_json.get("steps", []))
    print(f"same: regressions ({steps} steps), the overview, {len(files)} data files and {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
