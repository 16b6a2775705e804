"""What a paired push costs against one commit measured alone: an evaluation, not a test.

    python scripts/eval_paired_cost.py DIR [--before PATH] [--repeats 2]

The project of `eval_rounds.py range` (8 one-thread benchmarks). For each
repeat: `regress run HEAD` of the newest commit alone, as the push job ran
it before pairing (with `--before PATH`, a checkout of that regress), then
with today's regress `regress run HEAD --paired` (its parent measured first,
so it has an ancestor to pair with). Prints the wall times and the ratio
(target: paired at most 1.5x the single run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import eval_rounds  # noqa: E402


def _run(project: Path, regress_root: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(regress_root)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "regress", *args], cwd=project, env=env, capture_output=True, text=True
    )
    if proc.returncode not in (0, 1):
        sys.exit(proc.stderr[-2000:])
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--before", default=str(ROOT), help="the regress checkout that measures the single run")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    out = Path(args.dir).resolve()
    shutil.rmtree(out, ignore_errors=True)
    project = out / "project"
    commits = eval_rounds.make_range(project)
    head, parent = commits[-1][0], commits[-2][0]
    singles, pairs = [], []
    for _ in range(args.repeats):
        shutil.rmtree(project / ".regress", ignore_errors=True)
        singles.append(_run(project, Path(args.before), "run", head))
        shutil.rmtree(project / ".regress", ignore_errors=True)
        _run(project, ROOT, "run", parent)
        pairs.append(_run(project, ROOT, "run", head, "--paired"))
    single, pair = min(singles), min(pairs)
    print(f"single commit ({args.before}): {', '.join(f'{s:.1f}' for s in singles)} s")
    print(f"paired push (today's regress): {', '.join(f'{s:.1f}' for s in pairs)} s")
    print(f"ratio (fastest of each): {pair / single:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
