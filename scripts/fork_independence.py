"""Are forked rounds as independent as fresh interpreters? An evaluation, not a test.

Rounds are forked from a server that imported torch once (`regress/pool.py`).
A forked child inherits the server's memory, so its rounds might share more
luck than fresh interpreters' rounds and understate the variance between
commits. This measures what matters for verdicts: four commits of identical
benchmark code (the first four of `eval_rounds.py range`'s project: only
`add` changes among them, and it is left out), measured in one interleaved
`regress run` with 10 rounds each, once with forks (the default) and once
with a fresh interpreter per round (REGRESS_FORK=0). For each benchmark it
prints the four commits' floors and their spread (A/A between commits), and
the wall time of each way.

    python scripts/fork_independence.py DIR
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_rounds  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--rounds", type=int, default=10)
    args = p.parse_args()
    from regress.analysis import stats
    from regress.storage.store import Store

    out = Path(args.dir).resolve()
    commits = eval_rounds.make_range(out / "project")[:4]
    shas = [sha for sha, _ in commits]
    spreads = {}
    for kind, fork in (("forks", "1"), ("fresh interpreters", "0")):
        results = out / ("results-fork" if fork == "1" else "results-fresh")
        started = time.time()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "regress",
                "run",
                *shas,
                "--results",
                str(results),
                "--min-rounds",
                str(args.rounds),
                "--max-rounds",
                str(args.rounds),
            ],
            cwd=out / "project",
            env={**os.environ, "REGRESS_FORK": fork},
            check=True,
            capture_output=True,
        )
        seconds = time.time() - started
        history = Store(results).history("evalbox", "default")
        print(f"{kind}: {len(shas)} commits x {args.rounds} rounds in {seconds:.0f} s")
        spreads[kind] = []
        for bid in sorted(history[0].by_id()):
            if bid.sub_label.startswith("add"):
                continue  # the one op these commits change
            floors = [stats.level(stats.round_values(c.by_id()[bid])) for c in history]
            spread = math.log(max(floors) / min(floors))
            spreads[kind].append(spread)
            print(
                f"  {bid.sub_label:12} floors "
                + " ".join(f"{f * 1e6:8.2f}" for f in floors)
                + f"   spread {100 * spread:.1f}%"
            )
        print(f"  median spread of identical code across the commits: {100 * statistics.median(spreads[kind]):.2f}%")


if __name__ == "__main__":
    main()
