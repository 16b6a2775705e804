"""Are forked rounds as independent as fresh interpreters? An evaluation, not a test.

Rounds are forked from a server that imported torch once (`regress/pool.py`).
A forked child inherits the server's memory layout, so its rounds might share
more "process luck" than fresh interpreters do, and understate the variance
between separate runs. This measures it on the eval_differ project (14 real
torch benchmarks): N rounds of one commit taken by forks of one server, and N
rounds taken by fresh interpreters (REGRESS_FORK=0), alternating in blocks so
both see the same minutes, plus S separate `regress run` invocations (each a
server of its own). For each benchmark it reports the spread of the round
values (scaled MAD of log values) for both kinds, and the spread of the
floors between separate invocations.

    python scripts/fork_independence.py DIR [--rounds 20] [--separate 6]
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


def _run(project: Path, results: Path, rounds: int, fork: bool) -> float:
    env = {**os.environ, "REGRESS_FORK": "1" if fork else "0"}
    started = time.time()
    subprocess.run([sys.executable, "-m", "regress", "run", "HEAD", "--results", str(results),
                    "--min-rounds", str(rounds), "--max-rounds", str(rounds)],
                   cwd=project, env=env, check=True, capture_output=True)
    return time.time() - started


def _mad(logs: list[float]) -> float:
    m = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - m) for x in logs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--separate", type=int, default=6)
    args = p.parse_args()
    from regress import stats
    from regress.store import Store

    out = Path(args.dir).resolve()
    shas = eval_rounds.make_separate(out / "project")
    project = out / "project"
    subprocess.run(["git", "checkout", "-q", shas["base"]], cwd=project, check=True)
    seconds = {"fork": 0.0, "fresh": 0.0}
    block = 5
    for k in range(args.rounds // block):  # alternate in blocks so both kinds share the minutes
        for kind in ("fork", "fresh") if k % 2 == 0 else ("fresh", "fork"):
            seconds[kind] += _run(project, out / kind, block, kind == "fork")
    for i in range(args.separate):
        _run(project, out / f"sep{i}", 5, True)
    values = {}
    for kind in ("fork", "fresh", *(f"sep{i}" for i in range(args.separate))):
        result = Store(out / kind).load("evalbox", "default", shas["base"])
        values[kind] = {r.id: stats.round_values(r) for r in result.results if r.ok}
    print(f"{args.rounds} rounds each: forks {seconds['fork']:.0f} s, fresh interpreters {seconds['fresh']:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'benchmark':34} {'fork MAD':>9} {'fresh MAD':>9} {'fork gap':>9} {'fresh gap':>9} {'floors between runs':>20}")
    ratios = []
    for bid in sorted(values["fork"]):
        f = [math.log(v) for v in values["fork"][bid]]
        r = [math.log(v) for v in values["fresh"][bid]]
        floors = [math.log(min(values[f"sep{i}"][bid])) for i in range(args.separate)]
        ratios.append((_mad(f) + 1e-9) / (_mad(r) + 1e-9))
        print(f"{str(bid)[:34]:34} {100 * _mad(f):8.2f}% {100 * _mad(r):8.2f}% "
              f"{100 * stats.floor_gap(values['fork'][bid]):8.2f}% {100 * stats.floor_gap(values['fresh'][bid]):8.2f}% "
              f"{100 * (max(floors) - min(floors)):19.2f}%")
    print(f"median fork/fresh MAD ratio: {statistics.median(ratios):.2f} (1.0: as independent; well below 1: forks share luck)")


if __name__ == "__main__":
    main()
