"""Every benchmark of two commits paired and judged: in the runs that measured both sides, or apart with the
allowance for the shift between runs that the history's same-code pairs show; then what the reference workload
(the machine moving) and the neighbouring commits (`with_neighbours`: a blip) say applied. Pure; docs/statistics.md
("Runs").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

import numpy as np

from regress.analysis import modes, stats
from regress.analysis.judge import Figures, Side, Verdict, any_regression, iqr, judge, one_sided, order_key, pair_all  # noqa: F401 - re-exported
from regress.analysis.table import as_table, kept_id
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult, Sample
from regress.core.units import percent as pct

Rounds = tuple[Sample, ...]
MIN_PAIRS = 8  # pairs a benchmark (else its kind) needs before the history's allowance is trusted over the fixed one
STEP = 0.001  # an allowance the history gives is rounded up to this (log units), as it is shown


def _in_common(b: Rounds, h: Rounds) -> tuple[Rounds, Rounds, tuple[str, ...]]:
    """Both sides' rounds restricted to the runs that measured both, and those runs, when they hold enough rounds;
    else every round stands, and () (the verdict needs the allowance for the shift between runs)."""
    common = sorted({s.run for s in b} & {s.run for s in h} - {""})
    bc, hc = tuple(s for s in b if s.run in common), tuple(s for s in h if s.run in common)
    if common and min(len(bc), len(hc)) >= stats.FEWEST_ROUNDS_TO_JUDGE:
        return bc, hc, tuple(common)
    return b, h, ()


@dataclass(frozen=True)
class Allowance:
    """What rounds can't show, allowed for, and where it came from: the shift between separate runs, and
    between commits of one run."""

    sigma: float  # one standard deviation of log(level in run A / level in run B), same code
    pairs: int  # same-code pairs it was estimated from (0: the fixed allowance)
    within: float = stats.DRIFT  # between two commits of one run, beyond their rounds
    within_pairs: int = 0  # neighbouring pairs it was estimated from (0: the fixed allowance)

    def describe(self) -> str:
        if self.pairs:
            return f"separate runs: allowance {self.sigma * 100:.1f}% from the history ({self.pairs} same-code pairs)"
        return f"separate runs: allowance {self.sigma * 100:.1f}% (no same-code pairs in the history yet)"

    def describe_within(self) -> str:
        """The paired note's tail, where the history says more than the fixed allowance ("" otherwise)."""
        if not self.within_pairs or self.within <= stats.DRIFT:
            return ""
        return (
            f", allowance {self.within * 100:.1f}% from the history ({self.within_pairs} neighbouring pairs of one run)"
        )


def judge_together(
    base: BenchmarkResult,
    head: BenchmarkResult,
    *,
    threshold: float,
    cores: int = 0,
    apart: Callable[[BenchmarkId], Allowance] | None = None,
    machine: Callable[[tuple[str, ...]], np.ndarray] | None = None,
) -> Verdict:
    """compare's judgement of one benchmark: paired, in the runs that measured both sides (the allowance within
    a run), else apart (`apart`'s allowance between runs). `machine(runs)`: `modes.machine` of those runs."""
    bs, hs, paired = _in_common(base.samples, head.samples)
    b, h = (replace(base, samples=bs), replace(head, samples=hs)) if paired else (base, head)
    given = apart(head.id) if apart is not None else allowances({}, cores=cores)(head.id)
    if paired:
        drift = max(given.within, stats.drift_for(head.spec.num_threads, cores))
        pool = (lambda: machine(paired)) if machine else None
        v = judge(b, h, threshold=threshold, cores=cores, drift=drift, pool=pool)
        n = len(paired)
        note = f"paired in {n} run{'s' if n != 1 else ''}{given.describe_within()}"
    else:
        # Each side had its own run's machine: the slow-mode test reads the slower side's run.
        pools = modes.Apart(lambda: machine(_runs(b)), lambda: machine(_runs(h))) if machine else None
        v = judge(b, h, threshold=threshold, cores=cores, drift=given.sigma, pool=pools)
        note = given.describe()
    return replace(v, reason=f"{v.reason}{_BASIS}{note}")


def _runs(result: BenchmarkResult) -> tuple[str, ...]:
    return tuple(sorted({s.run for s in result.samples}))


_BASIS = "; "  # how a verdict's sides were compared ends its reason, after this (`with_basis` keeps it)
_BASES = ("paired in ", "separate runs: ")


def basis(reason: str) -> str:
    """`reason`'s closing note on how its sides were compared ("" when it has none)."""
    _, sep, tail = reason.rpartition(_BASIS)
    return tail if sep and tail.startswith(_BASES) else ""


def with_basis(reason: str, of: str) -> str:
    """`reason` closed by the note on how `of`'s sides were compared, when `of` has one."""
    note = basis(of)
    return f"{reason}{_BASIS}{note}" if note else reason


def _sigma(own, fixed: float) -> tuple[float, int]:
    """The scaled MAD about zero of `own`, never below `fixed`; (fixed, 0) below MIN_PAIRS."""
    if len(own) < MIN_PAIRS:
        return fixed, 0
    # |d| of a zero-centred normal: its median is 0.674 sigma.
    raw = stats.median(np.abs(np.asarray(own, dtype=float))) / stats.Z_75
    return max(math.ceil(raw / STEP - 1e-9) * STEP, fixed), len(own)


def allowances(
    pairs: dict[BenchmarkId, list[float]],
    *,
    cores: int = 0,
    neighbours: dict[BenchmarkId, list[float]] | None = None,
) -> Callable[[BenchmarkId], Allowance]:
    """BenchmarkId -> its `Allowance`: `_sigma` of its own `pairs` when it has MIN_PAIRS, else of its kind's (using
    every core, or not); `within` the same from the `neighbours` (`neighbour_pairs`)."""
    neighbours = neighbours or {}
    pooled: dict[tuple[bool, bool], tuple[float, int]] = {}

    def kind_of(bid: BenchmarkId) -> bool:
        return bool(cores) and bid.num_threads >= cores

    def of(source: dict[BenchmarkId, list[float]], bid: BenchmarkId, fixed: float, within: bool) -> tuple[float, int]:
        own = source.get(bid, [])
        if len(own) >= MIN_PAIRS:
            return _sigma(own, fixed)
        key = (kind_of(bid), within)  # fixed, too, depends on the kind alone
        if key not in pooled:
            alike = [ds for other, ds in source.items() if kind_of(other) == key[0]]
            both = np.concatenate([np.asarray(ds, dtype=float) for ds in alike] or [np.zeros(0)])
            pooled[key] = _sigma(both, fixed)
        return pooled[key]

    def given(bid: BenchmarkId) -> Allowance:
        sigma, n = of(pairs, bid, stats.drift_for(bid.num_threads, cores, apart=True), False)
        within, m = of(neighbours, bid, stats.drift_for(bid.num_threads, cores), True)
        return Allowance(sigma, n, within, m)

    return given


Pairs = tuple[dict[BenchmarkId, list[float]], dict[BenchmarkId, list[float]]]  # same-code, neighbour pairs


class Apart:
    """BenchmarkId -> the allowance for separate runs that this history's (results or their `Table`) same-code
    pairs give, on `cores` (default: its machines' fewest); `pairs`: those pairs once an allowance was asked for."""

    def __init__(self, history, code: dict[str, str], *, cores: int | None = None) -> None:
        self.history, self.code = history, code
        self.cores = stats.cores_of(getattr(history, "history", history)) if cores is None else cores
        self.pairs: Pairs | None = None
        self.found: Callable[[BenchmarkId], Allowance] | None = None
        self.known: dict[BenchmarkId, Allowance] = {}

    def __call__(self, bid: BenchmarkId) -> Allowance:
        if bid not in self.known:
            if self.found is None:
                self.pairs = history_pairs(self.history, self.code)
                self.found = allowances(self.pairs[0], cores=self.cores, neighbours=self.pairs[1])
            self.known[bid] = self.found(bid)
        return self.known[bid]


SETTLED = 0.025  # a neighbouring pair counts when both floors are settled this well (log: fastest to second)


def same_code_pairs(history, code: dict[str, str]) -> dict[BenchmarkId, list[float]]:
    """Per benchmark: log differences between consecutive runs' levels of the same code (`code`: sha -> digest)."""
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
    measured = stats.unique(key * max(len(t.run_names), 1) + t.run[rows]) // max(len(t.run_names), 1)
    keys, runs_of_key = stats.unique(measured, counts=True)
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
    k, logs = k[starts], np.log(np.minimum.reduceat(v, starts))
    pair = np.flatnonzero(k[1:] == k[:-1])  # consecutive runs of one key
    diffs, bench = logs[pair + 1] - logs[pair], k[pair] // width  # keys ascending: benchmarks grouped
    cuts = np.flatnonzero(np.diff(bench)) + 1
    return {t.ids[int(b[0])]: d.tolist() for b, d in zip(np.split(bench, cuts), np.split(diffs, cuts))}


def neighbour_pairs(history) -> dict[BenchmarkId, list[float]]:
    """Per benchmark: log differences between neighbouring commits one run measured, settled floors only."""
    t = as_table(history)
    named = np.asarray([bool(r) for r in t.run_names], dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        settled = np.log(t.low[1] / t.low[0]) <= SETTLED if len(t.run_n) else np.zeros(0, dtype=bool)
    rows = np.flatnonzero((t.run_n >= stats.FEWEST_ROUNDS_TO_JUDGE) & settled & (named[t.run] if len(t.run) else False))
    if not len(rows):
        return {}
    run, bench, pos = t.run[rows].astype(np.int64), t.run_bench[rows].astype(np.int64), t.run_pos[rows]
    order = np.lexsort((pos, run, bench))  # benchmarks grouped, each by run then position
    run, bench, logs = run[order], bench[order], np.log(t.low[0, rows][order])
    same = (run[1:] == run[:-1]) & (bench[1:] == bench[:-1])
    diffs, of = (logs[1:] - logs[:-1])[same], bench[1:][same]
    cuts = np.flatnonzero(np.diff(of)) + 1
    return {t.ids[int(b[0])]: d.tolist() for b, d in zip(np.split(of, cuts), np.split(diffs, cuts)) if len(b)}


def history_pairs(history, code: dict[str, str]) -> Pairs:
    """The history's same-code pairs and neighbour pairs: what its allowances read."""
    return same_code_pairs(history, code), neighbour_pairs(history)


PAIRS = "history pairs"  # the memo's kind for a history's pairs (kept by a site build for `regress compare`)


def pairs_tree(pairs: Pairs) -> list:
    """Pairs as the memo keeps them: per kind, (benchmark, its differences as one array) in order."""
    return [[(b, np.asarray(d, dtype=np.float64)) for b, d in one.items()] for one in pairs]


def pairs_from_tree(tree: list) -> Pairs:
    same, neighbours = ({kept_id(b): d.tolist() for b, d in one} for one in tree)
    return same, neighbours


def _side(r: BenchmarkResult) -> Side:
    values = stats.round_values(r)
    return Side(stats.level(values), iqr(values), len(values))


TIMES = Figures("samples", lambda r: r.ok, _side)


def _same(sha: str, v: Verdict) -> str:
    measured = f"measured {v.ratio - 1:+.1%}, " if v.ratio is not None else ""
    return (
        f"same code as {sha[:10]} (the measured code's git trees are identical), so no change is possible; "
        f"{measured}which is the shift between the two measurements"
    )


def compare(
    base: CommitResult | None,
    head: CommitResult | None,
    *,
    threshold: float = 0.05,
    before: CommitResult | None = None,
    after: CommitResult | None = None,
    apart=None,
    same_code: str = "",
    only: Collection[BenchmarkId] | None = None,
) -> list[Verdict]:
    """Every benchmark of either commit (or of `only`), by label then threads, worst first. `before` / `after`:
    the commits next to base and head (the blip rule: `with_neighbours`); `apart`: BenchmarkId -> `Allowance`;
    `same_code`: base's sha where both hold identical code."""
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    b = {k: r for k, r in (base.by_id() if base is not None else {}).items() if only is None or k in only}
    h = {k: r for k, r in (head.by_id() if head is not None else {}).items() if only is None or k in only}
    cores = stats.cores_of((base, head))
    # runs -> `modes.machine` of both commits' rounds of those runs, made once per set of runs.
    pool = functools.cache(lambda runs: modes.machine(base, head, runs=set(runs) if runs else None))

    def judged(br: BenchmarkResult, hr: BenchmarkResult) -> Verdict:
        v = judge_together(br, hr, threshold=threshold, cores=cores, apart=apart, machine=pool)
        return replace(v, verdict=Kind.UNCHANGED, reason=_same(same_code, v), rounds_needed=None) if same_code else v

    verdicts = pair_all(b, h, base, head, TIMES, judged)
    machine = None if same_code else machine_shift(base, head, threshold=threshold)
    if machine is not None:
        verdicts = [machine_not_commit(v, machine, threshold) for v in verdicts]
    if same_code or base is None or head is None:
        return sorted(verdicts, key=order_key)
    return with_neighbours(verdicts, base, head, before, after, threshold=threshold, apart=apart)


def with_neighbours(
    verdicts: list[Verdict],
    base: CommitResult,
    head: CommitResult,
    before: CommitResult | None,
    after: CommitResult | None,
    *,
    threshold: float,
    apart=None,
) -> list[Verdict]:
    """`compare(base, head, before=before, after=after, apart=apart)` from `compare(base, head, apart=apart)`'s
    verdicts, the blip rule added: a move one odd commit makes while its neighbours agree is that commit's luck."""
    if before is None and after is None:
        return sorted(verdicts, key=order_key)
    cores = stats.cores_of((base, head))
    index = {id(r): r.by_id() for r in (base, head, before, after) if r is not None}  # each indexed once

    def judged(x: CommitResult, y: CommitResult, bid: BenchmarkId) -> Verdict | None:
        rx, ry = index[id(x)].get(bid), index[id(y)].get(bid)
        if rx is None or ry is None or not rx.ok or not ry.ok:
            return None
        return judge_together(rx, ry, threshold=threshold, cores=cores, apart=apart)

    def blip(v: Verdict) -> Verdict:
        if not may_blip(v):
            return v
        for odd, x, y in ((head, base, after), (base, before, head)):  # the odd one's neighbour against the other side
            if x is None or y is None:
                continue
            level = judged(x, y, v.id)
            # The odd one against its neighbour:
            undone = judged(head, y, v.id) if odd is head else judged(x, base, v.id)
            # The move did not last and was not carried further: the odd commit's own luck.
            if _level(level, v) and undone is not None and undone.verdict != v.verdict:
                return replace(
                    v,
                    verdict=Kind.NOISY,
                    reason=with_basis(
                        f"{pct(v.ratio)}, but a blip: {odd.commit.short} alone differs, while {x.commit.short} and "
                        f"{y.commit.short} on either side of it agree (a commit's measurement can sit a few percent "
                        "off its neighbours however many rounds it gets); the history calls it no change",
                        v.reason,
                    ),
                    rounds_needed=None,
                )
        return v

    return sorted(map(blip, verdicts), key=order_key)


def judge_one(
    base: CommitResult, head: CommitResult, bid: BenchmarkId, *, threshold: float = 0.05, apart=None
) -> Verdict:
    """`compare`'s verdict for one benchmark (missing where neither commit has it)."""
    found = compare(base, head, threshold=threshold, apart=apart, only={bid})
    return found[0] if found else one_sided(bid, Kind.MISSING, f"no {TIMES.what} at either commit")


def may_blip(v: Verdict) -> bool:
    """Whether the neighbours can change `v` (the blip rule moves only a change): the others need no neighbour read."""
    return v.verdict in (Kind.REGRESSION, Kind.IMPROVEMENT)


LEVEL_SHARE = 0.5  # a neighbour is level with a move's other side when it rules out this share of the move


def _level(w: Verdict | None, move: Verdict) -> bool:
    """`w` (the neighbour against the other side) says they are level: unchanged, or, where a side's floor
    is unsettled (`noisy`), an estimate within LEVEL_SHARE of `move`'s size."""
    if w is None:
        return False
    if w.verdict == Kind.UNCHANGED:
        return True
    if w.verdict != Kind.NOISY or w.ratio is None or move.ratio is None:
        return False
    return abs(math.log(w.ratio)) <= LEVEL_SHARE * abs(math.log(move.ratio))


MACHINE_SHARE = 0.5  # the reference workload must move this share of the threshold for the machine to be blamed


def machine_shift(base: CommitResult | None, head: CommitResult | None, *, threshold: float) -> stats.Shift | None:
    """How the machine moved while head was measured, by the reference workload of the same rounds; None within
    MACHINE_SHARE of the threshold, or with too few reference rounds."""
    if base is None or head is None:
        return None
    # Measured together: the machine of the runs both sides share is the one that matters.
    b, h, _ = _in_common(base.reference, head.reference)
    if min(len(b), len(h)) < stats.FEWEST_ROUNDS_TO_JUDGE:
        return None
    s = stats.shift([stats.round_value(x) for x in b], [stats.round_value(x) for x in h])
    if s.significant and abs(math.log(s.ratio)) >= math.log1p(MACHINE_SHARE * threshold):
        return s
    return None


def machine_not_commit(v: Verdict, machine: stats.Shift, threshold: float) -> Verdict:
    """A move no bigger than the machine's own (by the threshold) is the machine's, not the commit's."""
    if v.verdict not in (Kind.REGRESSION, Kind.IMPROVEMENT) or v.ratio is None:
        return v
    slower = machine.ratio > 1
    if (v.verdict == Kind.REGRESSION) != slower:
        return v
    beyond = abs(math.log(v.ratio)) - abs(math.log(machine.ratio))
    if beyond >= math.log1p(threshold):
        return v
    word = "slower" if slower else "faster"
    return replace(
        v,
        verdict=Kind.NOISY,
        reason=with_basis(
            f"{pct(v.ratio)}, but the machine itself was {pct(machine.ratio)} {word} while head was measured "
            f"(the reference workload timed in the same rounds, 95% interval {pct(machine.low)} to {pct(machine.high)}): "
            "the machine moved, not the code; measure both in one run with `regress compare BASE HEAD --measure`",
            v.reason,
        ),
        rounds_needed=None,
    )
