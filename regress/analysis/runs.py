"""What was measured together: rounds by run, pairs of commits measured in one run,
and the shift between runs that the project's own history shows.

Rounds of one run (one invocation on one machine) share its luck: the
machine, its other tenants, the processes the rounds were forked from. Two
commits measured in one run, interleaved, differ only by their code and the
luck the rounds' spread shows; two commits measured by separate runs (one
push job each, on different hosted runners) differ by the shift between the
runs as well. That shift can't be seen in either run's rounds, but it can be
measured: the same code measured by two runs (a commit measured again beside
the next push, or two commits whose code is identical) differs by nothing
else. Pure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from regress.analysis import normal, stats
from regress.analysis.judge import judge
from regress.analysis.table import Table, as_table
from regress.analysis.verdict import Verdict
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult

# Pairs of same-code measurements by two runs needed before the history's
# shift between runs is trusted over the fixed allowance (stats.DRIFT).
MIN_PAIRS = 8
# An allowance the history gives is rounded up to this (log units: a tenth of a percent, as it is shown).
STEP = 0.001


def by_run(result: BenchmarkResult) -> dict[str, list[float]]:
    """A benchmark's round values at one commit, by the run that took them."""
    out: dict[str, list[float]] = defaultdict(list)
    for s in result.samples:
        out[s.run].append(stats.round_value(s))
    return dict(out)


def only_runs(result: BenchmarkResult, runs: set[str]) -> BenchmarkResult:
    return replace(result, samples=tuple(s for s in result.samples if s.run in runs))


@dataclass(frozen=True)
class Together:
    """How a benchmark's two sides were measured: in common runs, or apart."""

    runs: tuple[str, ...]  # runs that measured both sides with enough rounds; () when apart

    @property
    def paired(self) -> bool:
        return bool(self.runs)


def together(base: BenchmarkResult, head: BenchmarkResult) -> tuple[BenchmarkResult, BenchmarkResult, Together]:
    """Both sides restricted to the runs that measured both, when those hold enough rounds.

    Rounds of other runs would bring their shift into the comparison; when no
    run measured both sides well enough, every round stands and the verdict
    needs the allowance for the shift between runs.
    """
    b, h = by_run(base), by_run(head)
    common = sorted(r for r in set(b) & set(h) if r)
    if common:
        nb = sum(len(b[r]) for r in common)
        nh = sum(len(h[r]) for r in common)
        if min(nb, nh) >= stats.FEWEST_ROUNDS_TO_JUDGE:
            keep = set(common)
            return only_runs(base, keep), only_runs(head, keep), Together(tuple(common))
    return base, head, Together(())


@dataclass(frozen=True)
class Allowance:
    """The shift between separate runs allowed for, and where it came from."""

    sigma: float  # one standard deviation of log(level in run A / level in run B), same code
    pairs: int  # same-code pairs it was estimated from (0: the fixed allowance)

    def describe(self) -> str:
        if self.pairs:
            return f"separate runs: allowance {self.sigma * 100:.1f}% from the history ({self.pairs} same-code pairs)"
        return f"separate runs: allowance {self.sigma * 100:.1f}% (no same-code pairs in the history yet)"


def same_code_pairs(history, code: dict[str, str]) -> dict[BenchmarkId, list[float]]:
    """Per benchmark: log differences between two runs' levels of the same code.

    The same commit measured by two runs, and commits of identical code
    (`code`: sha -> code digest) measured by different runs, each give one
    difference per pair of runs (runs with too few rounds left out).
    `history`: a list of results or their `Table`.
    """
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
    measured = _unique(key * max(len(t.run_names), 1) + t.run[rows]) // max(len(t.run_names), 1)
    keys, runs_of_key = _unique(measured, counts=True)
    keep = np.isin(key, keys[runs_of_key >= 2])
    rows, k = rows[keep], key[keep]
    if not len(rows):
        return {}
    # Each (benchmark, code, run)'s fastest level; then, per (benchmark, code), the runs in the order
    # they ran (a run's name starts with its time): n runs give n - 1 log differences. In bulk: a
    # history of 10,000 commits has millions of such rows, which a loop over them took seconds for.
    rank = np.empty(len(names := t.run_names), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    r, v = rank[t.run[rows]], t.low[0, rows]
    order = np.lexsort((r, k))
    k, r, v = k[order], r[order], v[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(first)
    k, first_row = k[starts], np.minimum.reduceat(order, starts)  # per (key, run): its first row
    logs = np.log(np.minimum.reduceat(v, starts))  # numpy's log: math.log a value was a second at 10,000 commits
    pair = np.flatnonzero(k[1:] == k[:-1])  # consecutive runs of one key
    diffs = logs[pair + 1] - logs[pair]
    # In the order the rows first name each key (and its runs in order), per benchmark as a loop would.
    key_first = np.minimum.reduceat(first_row, np.flatnonzero(np.r_[True, k[1:] != k[:-1]]))
    seen = key_first[np.cumsum(np.r_[True, k[1:] != k[:-1]]) - 1][pair]
    ordered = np.lexsort((pair, seen))
    bench, diffs = k[pair][ordered] // width, diffs[ordered]
    # Split per benchmark (a stable sort keeps each one's order), benchmarks in the order first seen:
    # a dict built a difference at a time took a third of this at 200,000 differences.
    by = np.argsort(bench, kind="stable")
    grouped = bench[by]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    groups = np.split(diffs[by], starts[1:])
    firsts, names = by[starts].tolist(), grouped[starts].tolist()
    return {t.ids[names[i]]: groups[i].tolist() for i in sorted(range(len(starts)), key=firsts.__getitem__)}


def _unique(values: np.ndarray, *, counts: bool = False):
    """np.unique of integers (sorted, and how often each occurs), by a sort: the hashed unique of numpy 2.3 and
    later took 0.1-0.37 s for the 250,000 run keys of 1,000 x 200 (numpy 2.4.6), the sort 10 ms."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    found = ordered[first]
    return (found, np.diff(np.append(np.flatnonzero(first), len(ordered)))) if counts else found


def judge_together(
    base: BenchmarkResult,
    head: BenchmarkResult,
    *,
    threshold: float,
    cores: int = 0,
    apart: Callable[[BenchmarkId], Allowance] | None = None,
) -> Verdict:
    """compare's judgement of one benchmark, from what was measured together where anything was.

    Paired: only the rounds of the runs that measured both sides, with the
    fixed allowance for what one run's rounds can't show. Apart: every round,
    and the shift between runs that `apart` (the history) allows for.
    """
    b, h, how = together(base, head)
    if how.paired:
        v = judge(b, h, threshold=threshold, cores=cores)
        n = len(how.runs)
        note = f"paired in {n} run{'s' if n != 1 else ''}"
    else:
        given = apart(head.id) if apart is not None else allowance({}, head.id, cores=cores)
        v = judge(b, h, threshold=threshold, cores=cores, drift=given.sigma)
        note = given.describe()
    return replace(v, reason=f"{v.reason}{_BASIS}{note}")


# How a verdict's sides were compared ends its reason, after this; a rule that
# rewrites the reason (context.py) keeps it.
_BASIS = "; "
_BASES = ("paired in ", "separate runs: ")


def basis(reason: str) -> str:
    """`reason`'s closing note on how its sides were compared ("" when it has none)."""
    _, sep, tail = reason.rpartition(_BASIS)
    return tail if sep and tail.startswith(_BASES) else ""


def with_basis(reason: str, of: str) -> str:
    """`reason` closed by the note on how `of`'s sides were compared, when `of` has one."""
    note = basis(of)
    return f"{reason}{_BASIS}{note}" if note else reason


def allowance(pairs: dict[BenchmarkId, list[float]], bid: BenchmarkId, *, cores: int = 0) -> Allowance:
    """The shift between runs to allow for `bid`: the history's own, else the fixed one.

    Its own pairs when it has MIN_PAIRS; else the pairs of every benchmark of
    its kind (using every core, or not): the scaled MAD of the differences
    about zero. Never below the fixed allowance for separate runs
    (stats.DRIFT_APART, measured here): a history of a few calm runs must not
    make separate runs look as comparable as one run.
    """
    return allowances(pairs, cores=cores)(bid)


def allowances(pairs: dict[BenchmarkId, list[float]], *, cores: int = 0) -> Callable[[BenchmarkId], Allowance]:
    """BenchmarkId -> `allowance(pairs, bid, cores=cores)`, each kind's pooled pairs gathered and their
    allowance made once (a compare asks for 200 benchmarks', each of which walked every pair)."""
    pooled: dict[bool, Allowance] = {}

    def of(own: list[float] | np.ndarray, fixed: float) -> Allowance:
        if len(own) < MIN_PAIRS:
            return Allowance(fixed, 0)
        # |d| of a zero-centred normal: its median is 0.674 sigma. Rounded up to the STEP it is stated
        # to: an estimate from pairs is not known closer, and one that moved with every new pair made
        # every recent verdict that asked for it a new comparison at every build (report/verdict_cache.py).
        sigma = math.ceil(stats.median(np.abs(np.asarray(own, dtype=float))) / normal.Z_75 / STEP - 1e-9) * STEP
        return Allowance(max(sigma, fixed), len(own))

    def given(bid: BenchmarkId) -> Allowance:
        fixed = stats.drift_for(bid.num_threads, cores, apart=True)
        own = pairs.get(bid, [])
        if len(own) >= MIN_PAIRS:
            return of(own, fixed)
        kind = bool(cores) and bid.num_threads >= cores  # fixed, too, depends on the kind alone
        if kind not in pooled:
            alike = [ds for other, ds in pairs.items() if (bool(cores) and other.num_threads >= cores) == kind]
            # In bulk: a paired history of 1,000 commits x 200 benchmarks pools 200,000 differences.
            pooled[kind] = of(np.concatenate([np.asarray(ds, dtype=float) for ds in alike] or [np.zeros(0)]), fixed)
        return pooled[kind]

    return given


# The last history's pairs: a site build's change points and its recent verdicts ask for the same
# history's (a pass over every round of it, seconds at 1,000 commits). Held with the history's records,
# so a match is the very same records, not look-alikes.
_LAST: list = []


def _pairs_of(history, code: dict[str, str]) -> dict[BenchmarkId, list[float]]:
    found = pairs_found(history, code)
    if found is not None:
        return found
    pairs = same_code_pairs(history, code)
    _LAST[:] = [tuple(_commits(history)), dict(code), pairs]
    return pairs


def _commits(history) -> list[CommitResult]:
    return history.history if isinstance(history, Table) else history


def pairs_found(history, code: dict[str, str]) -> dict[BenchmarkId, list[float]] | None:
    """The same-code pairs an allowance of this very history already computed, else None."""
    commits = _commits(history)
    if _LAST and len(_LAST[0]) == len(commits) and _LAST[1] == code and all(a is b for a, b in zip(_LAST[0], commits)):
        return _LAST[2]
    return None


def apart_for(history, code: dict[str, str], *, cores: int = 0) -> Callable[[BenchmarkId], Allowance]:
    """BenchmarkId -> the allowance for separate runs that this history's same-code pairs give."""
    found: Callable[[BenchmarkId], Allowance] | None = None
    known: dict[BenchmarkId, Allowance] = {}  # a site build asks for each benchmark's dozens of times

    def given(bid: BenchmarkId) -> Allowance:
        nonlocal found
        if bid not in known:
            if found is None:
                found = allowances(_pairs_of(history, code), cores=cores)
            known[bid] = found(bid)
        return known[bid]

    return given
