"""Steps in a benchmark's history: where its level moved and stayed moved, and the regression steps a commit's
results bring to light (`newly_found`, `by_culprit`). Pure; docs/statistics.md ("Change points over history").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from regress.analysis import diff, stats
from regress.analysis.levels import trusted
from regress.analysis.segments import Kept, breakpoints_of, calibrated
from regress.analysis.table import Table, as_table
from regress.core.errors import RegressError
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult

CHECKPOINT = "search checkpoint"  # the memo's kind for the search's checkpoints (`segments.breakpoints_of`)
BLIP = 3  # a new level held this many commits or fewer and then undone is a blip, not a step
TAIL = 3  # commits on a new level at the end of the history before it counts (nothing after can show it a blip)
SLIDE_GAP = 4  # same-direction steps closer than this (in commits) are one gradual slide
SLIDE_SHARE = 0.5  # a slide's first cut is its start when it moves the level this share of its largest cut


@dataclass(frozen=True)
class Step:
    id: BenchmarkId
    sha: str  # first commit at the new level
    index: int  # its position in the history list
    before: float  # level (seconds per run) before
    after: float  # level after
    ratio: float  # after / before
    direction: Kind  # REGRESSION or IMPROVEMENT
    p_value: float = 1.0  # Mann-Whitney between the levels before and after
    span: int = 1  # commits the move took: 1 for a clean step, more for a slide
    end_sha: str = ""  # last commit of the move (== sha for a clean step)
    # The whole move (the level after its last commit / before its first) beside the step's own
    # change in `ratio`: a slide's, or a step's whose segments moved more than it; else None.
    total: float | None = None


def _groups(logs: np.ndarray, cuts: list[int]) -> list[tuple[int, int]]:
    """Cut indices (first, last) of each move: same-direction cuts with short segments between are one slide."""
    bounds = [0, *cuts, len(logs)]
    medians = [stats.median(logs[a:b]) for a, b in zip(bounds, bounds[1:])]
    groups = []
    k = 0
    while k < len(cuts):
        up = medians[k + 1] > medians[k]
        j = k
        while (
            j + 1 < len(cuts) and (medians[j + 2] > medians[j + 1]) == up and bounds[j + 2] - bounds[j + 1] <= SLIDE_GAP
        ):
            j += 1
        groups.append((k, j))
        k = j + 1
    return groups


@dataclass(frozen=True)
class Candidate:
    """A move the history's own tests found (`candidates`): a step unless compare across it disagrees."""

    id: BenchmarkId
    start: int  # history position of its first commit at the new level
    end: int  # of its last (== start for a clean step)
    prior: int  # compare's base: the last position before `start` that measured the benchmark, or `_typical`'s
    head: int  # compare's head: `end`, or `_typical`'s
    ratio: float  # the whole move: the level after its last cut / before its first
    own_before: float  # log levels just either side of its first cut (`own_change`)
    own_after: float
    p_value: float  # Mann-Whitney between the levels before and after


def find_steps(
    history,
    *,
    threshold: float = 0.05,
    code: dict[str, str] | None = None,
    apart=None,
    judge_one=None,
    found: list[Candidate] | None = None,
    kept: Kept | None = None,
) -> list[Step]:
    """Every step over `history` (results or their `Table`, oldest first), in history order: the `candidates`
    (or `found`) that compare across agrees with (`judge_one`, as `judge_across`). `code`: sha -> code digest;
    `apart`: BenchmarkId -> `diff.Allowance`; `kept`: the search's checkpoints."""
    table = as_table(history)
    if found is None:
        found = candidates(table, threshold=threshold, code=code, kept=kept)
    history = table.history
    cores = stats.cores_of(history)
    if apart is None and found:
        apart = diff.apart_for(table, code or {}, cores=cores)
    steps: list[Step] = []
    for c in found:
        # Compare across the move must agree; where it can't tell, the history's own test stands.
        agrees = None
        if table.row(c.prior, c.id) is not None and table.row(c.head, c.id) is not None:
            v = (judge_one or judge_across)(table, c.prior, c.head, c.id, threshold, apart)
            agrees = None if v is None else v.verdict == ("regression" if c.ratio > 1 else "improvement")
        if agrees is False or (
            agrees is None and not (c.p_value < stats.ALPHA and abs(math.log(c.ratio)) >= math.log1p(threshold))
        ):
            continue
        steps.append(
            Step(
                id=c.id,
                sha=history[c.start].commit.sha,
                index=c.start,
                before=math.exp(c.own_before),
                after=math.exp(c.own_after),
                ratio=math.exp(c.own_after - c.own_before),
                direction=Kind.REGRESSION if c.ratio > 1 else Kind.IMPROVEMENT,
                p_value=c.p_value,
                span=c.end - c.start + 1,
                end_sha=history[c.end].commit.sha,
                total=_total(c.ratio, c.own_after - c.own_before, c.end > c.start, threshold),
            )
        )
    return sorted(steps, key=lambda s: (s.index, s.id))


def candidates(
    history,
    *,
    threshold: float = 0.05,
    code: dict[str, str] | None = None,
    kept: Kept | None = None,
    levels: dict | None = None,
) -> list[Candidate]:
    """Every move the history's own evidence supports: the segmentation's cuts grouped into moves, past the
    threshold, no blip, not the newest two commits. `levels`: `levels.trusted` of this history, if had."""
    table = as_table(history)
    cores = stats.cores_of(table.history)
    found_series = levels if levels is not None else trusted(table, threshold=threshold, code=code)
    # Levels, tests and the search (every benchmark's at once) all see outliers clipped to the edge of the noise.
    raws = [np.log(np.asarray(found, dtype=float)) for _, found in found_series.values()]
    clipped = [calibrated(raw) for raw in raws]
    all_cuts = breakpoints_of(clipped, kept=kept)
    out: list[Candidate] = []
    for (bid, (positions, _)), raw, (logs, _), cuts in zip(found_series.items(), raws, clipped, all_cuts):
        # A move compare across it could call a change: the same bar as compare's.
        smallest = max(
            math.log1p(stats.MIN_ESTIMATE_SHARE * threshold), stats.Z * stats.drift_for(bid.num_threads, cores)
        )
        bounds = [0, *cuts, len(logs)]
        # The levels before the first cut and after the last (segments inside a slide belong to neither).
        moves = [
            (a, b, logs[bounds[a] : bounds[a + 1]], logs[bounds[b + 1] : bounds[b + 2]]) for a, b in _groups(logs, cuts)
        ]
        for k, (a, b, before, after) in enumerate(moves):
            if _blip(moves, k, threshold):
                continue
            if bounds[b + 2] == len(logs) and len(after) < TAIL:
                # The newest commits are an outlier pair until a third agrees: a move ends before them.
                if a == b:
                    continue
                b -= 1
                after = logs[bounds[b + 1] : bounds[b + 2]]
            lb, la = stats.median(before), stats.median(after)
            if abs(la - lb) < smallest:
                continue
            p = stats.mann_whitney_p(after, before)
            # A slide begins where the level first moves by half the threshold and by a share of its largest cut.
            sizes = [abs(float(np.subtract(*own_change(logs, bounds, j)))) for j in range(a, b + 1)]
            least = max(math.log1p(threshold / 2), SLIDE_SHARE * max(sizes))
            while a < b and sizes[0] < least:
                a += 1
                sizes.pop(0)
            start, end = positions[cuts[a]], positions[cuts[b]]
            own_before, own_after = own_change(logs, bounds, a)
            # Compare across the move: the commits either side of it, but one that is an outlier of its own
            # level (beyond both levels, by the threshold) gives way to a typical commit of that level.
            first, last = cuts[a], cuts[b]
            near = _typical(raw, max(bounds[a], first - NEAR), first, first - 1, own_after, threshold)
            prior = positions[near]
            if near == first - 1:  # the last commit before its first that measured the benchmark
                prior = next((j for j in range(start - 1, prior - 1, -1) if _ok(table, j, bid)), prior)
            head = positions[_typical(raw, last, min(bounds[b + 2], last + NEAR), last, own_before, threshold)]
            out.append(Candidate(bid, start, end, prior, head, math.exp(la - lb), own_before, own_after, p))
    return out


def _typical(raw: np.ndarray, lo: int, hi: int, next_to: int, other: float, threshold: float) -> int:
    """`next_to`, unless its level is farther than the threshold from the median of [lo, hi), on the far side
    from `other` (the level across the move): then the commit of [lo, hi) nearest that median."""
    middle = stats.median(raw[lo:hi])
    off = float(raw[next_to]) - middle
    if abs(off) <= math.log1p(threshold) or (off > 0) == (other > middle):
        return next_to
    return min(range(lo, hi), key=lambda i: (abs(float(raw[i]) - middle), abs(i - next_to)))


def _ok(table: Table, position: int, bid: BenchmarkId) -> bool:
    row = table.row(position, bid)
    return row is not None and bool(table.ok[row])


def _total(ratio: float, own: float, slide: bool, threshold: float) -> float | None:
    """The whole move beside the step's own change: a slide's, or the segments' where they differ by a quarter threshold."""
    return ratio if slide or abs(math.log(ratio) - own) > math.log1p(threshold / 4) else None


NEAR = 3  # a step's own change is read from this many commits either side of it, at most


def own_change(logs: np.ndarray, bounds: list[int], a: int) -> tuple[float, float]:
    """The medians of the NEAR log levels either side of cut `a` within its two segments (the step's own change)."""
    cut = bounds[a + 1]
    before = logs[max(bounds[a], cut - NEAR) : cut]
    after = logs[cut : min(bounds[a + 2], cut + NEAR)]
    return stats.median(before), stats.median(after)


def judge_across(table: Table, before: int, after: int, bid: BenchmarkId, threshold: float, apart):
    """compare's verdict on `bid` between two history positions; None where a side failed or has too few rounds."""
    base, head = table.load(before), table.load(after)
    b, a = base.by_id().get(bid), head.by_id().get(bid)
    if b is None or a is None or not b.ok or min(len(b.samples), len(a.samples)) < stats.FEWEST_ROUNDS_TO_JUDGE:
        return None
    return diff.judge_one(base, head, bid, threshold=threshold, apart=apart)


def _blip(moves: list, k: int, threshold: float) -> bool:
    """Move k and a neighbour are an excursion: a level held BLIP commits or fewer, then undone."""

    def returns(i: int) -> bool:
        _, _, before, after = moves[i]
        _, _, _, after_next = moves[i + 1]
        return len(after) <= BLIP and abs(stats.median(after_next) - stats.median(before)) < math.log1p(threshold)

    return (k + 1 < len(moves) and returns(k)) or (k > 0 and returns(k - 1))


MOVED = 2  # a step found again this many history positions away from where it was is the same step


@dataclass(frozen=True)
class Culprit:
    """A commit that made benchmarks slower, as the history shows it."""

    commit: CommitInfo  # the first measured commit at the new level
    previous: CommitInfo | None  # the measured commit before it
    steps: tuple[Step, ...]

    @property
    def worst(self) -> float:
        return max(s.ratio for s in self.steps)


def newly_found(history: list[CommitResult], sha: str, *, threshold: float) -> list[Step]:
    """Regression steps found with `sha`'s results and not without them (`history` oldest first)."""
    shas = [c.commit.sha for c in history]
    if sha not in shas:
        raise RegressError(
            f"{sha[:10]} has no results in this history; notify after its results are saved "
            "(`regress run`, or `regress results pull` in CI)"
        )
    at = shas.index(sha)

    def regressions(part: list[CommitResult]) -> list[Step]:
        return [s for s in find_steps(part, threshold=threshold) if s.direction == Kind.REGRESSION]

    before = regressions(history[:at])
    return [
        s
        for s in regressions(history[: at + 1])
        if not any(b.id == s.id and abs(b.index - s.index) <= MOVED for b in before)
    ]


def by_culprit(steps: list[Step], history: list[CommitResult]) -> list[Culprit]:
    """The steps grouped by their first commit, oldest commit first, worst step first in each."""
    groups: dict[str, list[Step]] = {}
    for s in sorted(steps, key=lambda s: (s.index, -s.ratio, s.id)):
        groups.setdefault(s.sha, []).append(s)
    out = []
    for _sha, group in groups.items():
        i = group[0].index
        out.append(Culprit(history[i].commit, history[i - 1].commit if i > 0 else None, tuple(group)))
    return out
