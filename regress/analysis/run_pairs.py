"""Pairs of measurements that show what a run's rounds can't: the same code measured by two runs, and
neighbouring commits measured by one run; per benchmark, log differences (`runs.allowances`). Pure.
"""

from __future__ import annotations

import numpy as np

from regress.analysis import stats
from regress.analysis.table import as_table
from regress.core.records import BenchmarkId

# A neighbouring pair counts when both floors are settled this well (log: fastest to second-fastest round).
SETTLED = 0.025


def same_code_pairs(history, code: dict[str, str]) -> dict[BenchmarkId, list[float]]:
    """Per benchmark: log differences between two runs' levels of the same code (`code`: sha -> code digest),
    one per pair of consecutive runs with enough rounds. `history`: a list of results or their `Table`."""
    t = as_table(history)
    node_ids: dict[str, int] = {}
    node_of = np.asarray(
        [node_ids.setdefault(code.get(c.commit.sha) or c.commit.sha, len(node_ids)) for c in t.history], dtype=np.int64
    )
    named = np.asarray([bool(r) for r in t.run_names], dtype=bool)
    rows = np.flatnonzero((t.run_n >= stats.FEWEST_ROUNDS_TO_JUDGE) & (named[t.run] if len(t.run) else False))
    # Only (benchmark, code) keys that two runs measured give pairs: found in bulk, the rest never walked.
    width = max(len(node_ids), 1)
    key = t.run_bench[rows].astype(np.int64) * width + node_of[t.run_pos[rows]]
    measured = unique(key * max(len(t.run_names), 1) + t.run[rows]) // max(len(t.run_names), 1)
    keys, runs_of_key = unique(measured, counts=True)
    keep = np.isin(key, keys[runs_of_key >= 2])
    rows, k = rows[keep], key[keep]
    if not len(rows):
        return {}
    # Each (benchmark, code, run)'s fastest level; then, per (benchmark, code), the runs in the order
    # they ran (a run's name starts with its time): n runs give n - 1 log differences.
    rank = np.empty(len(names := t.run_names), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    r, v = rank[t.run[rows]], t.low[0, rows]
    order = np.lexsort((r, k))
    k, r, v = k[order], r[order], v[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(first)
    k, first_row = k[starts], np.minimum.reduceat(order, starts)  # per (key, run): its first row
    logs = np.log(np.minimum.reduceat(v, starts))
    pair = np.flatnonzero(k[1:] == k[:-1])  # consecutive runs of one key
    diffs = logs[pair + 1] - logs[pair]
    # In the order the rows first name each key (and its runs in order), per benchmark as a loop would.
    key_first = np.minimum.reduceat(first_row, np.flatnonzero(np.r_[True, k[1:] != k[:-1]]))
    seen = key_first[np.cumsum(np.r_[True, k[1:] != k[:-1]]) - 1][pair]
    ordered = np.lexsort((pair, seen))
    bench, diffs = k[pair][ordered] // width, diffs[ordered]
    # Split per benchmark (a stable sort keeps each one's order), benchmarks in the order first seen.
    by = np.argsort(bench, kind="stable")
    grouped = bench[by]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    groups = np.split(diffs[by], starts[1:])
    firsts, names = by[starts].tolist(), grouped[starts].tolist()
    return {t.ids[names[i]]: groups[i].tolist() for i in sorted(range(len(starts)), key=firsts.__getitem__)}


def neighbour_pairs(history) -> dict[BenchmarkId, list[float]]:
    """Per benchmark: log differences between neighbouring commits measured by one run (a range run's, a
    paired push's parent and head), each run's fastest rounds, settled floors only (SETTLED). `history`: a
    list of results or their `Table`."""
    t = as_table(history)
    named = np.asarray([bool(r) for r in t.run_names], dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        settled = np.log(t.low[1] / t.low[0]) <= SETTLED if len(t.run_n) else np.zeros(0, dtype=bool)
    rows = np.flatnonzero((t.run_n >= stats.FEWEST_ROUNDS_TO_JUDGE) & settled & (named[t.run] if len(t.run) else False))
    if not len(rows):
        return {}
    run, bench, pos = t.run[rows].astype(np.int64), t.run_bench[rows].astype(np.int64), t.run_pos[rows]
    order = np.lexsort((pos, bench, run))
    run, bench, logs = run[order], bench[order], np.log(t.low[0, rows][order])
    same = (run[1:] == run[:-1]) & (bench[1:] == bench[:-1])
    diffs, of = (logs[1:] - logs[:-1])[same], bench[1:][same]
    out: dict[BenchmarkId, list[float]] = {}
    for b in np.unique(of).tolist():
        out[t.ids[b]] = diffs[of == b].tolist()
    return out


def unique(values: np.ndarray, *, counts: bool = False):
    """np.unique of integers (sorted, and how often each occurs), by a sort (numpy 2.3's is hashed)."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    found = ordered[first]
    return (found, np.diff(np.append(np.flatnonzero(first), len(ordered)))) if counts else found


# The memo's kind for a history's same-code pairs (kept by a site build for `regress compare`).
PAIRS = "same-code pairs"


def pairs_tree(pairs: dict[BenchmarkId, list[float]]) -> dict:
    """Pairs as the memo keeps them: each benchmark and its count, then every difference in one array."""
    values = [np.asarray(d, dtype=np.float64) for d in pairs.values()]
    return {
        "ids": [[b.label, b.sub_label, b.description, b.num_threads] for b in pairs],
        "counts": [len(d) for d in values],
        "values": np.concatenate(values) if values else np.zeros(0),
    }


def pairs_from_tree(tree: dict) -> dict[BenchmarkId, list[float]]:
    values = tree["values"].tolist()
    out, at = {}, 0
    for bid, n in zip(tree["ids"], tree["counts"], strict=True):
        out[BenchmarkId(*bid)] = values[at : at + n]
        at += n
    if at != len(values):
        raise ValueError("pairs and their index disagree")
    return out
