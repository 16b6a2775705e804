"""Steps in a benchmark's history: where its level moved and stayed moved (outliers clipped to the edge of the
history's noise, change points placed by an exact penalised partition), and the regression steps a commit's results
bring to light (`newly_found`, `by_culprit`). Pure; docs/statistics.md ("Change points over history").
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from regress.analysis import diff, stats
from regress.analysis.levels import CALIBRATION, PENALTY, history_scale, trusted
from regress.analysis.table import Table, as_table
from regress.core.errors import RegressError
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult

CHECKPOINT = "search checkpoint"  # the memo's kind for the search's checkpoints (`breakpoints_of`)
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
    kept: Kept | None = None,
    levels: dict | None = None,
) -> list[Step]:
    """Every step over `history` (results or their `Table`, oldest first), in history order: the `candidates`
    that compare across agrees with (`judge_one`, as `judge_across`). `code`: sha -> code digest;
    `apart`: BenchmarkId -> `diff.Allowance`; `kept`, `levels`: as `candidates` takes them."""
    table = as_table(history)
    found = candidates(table, threshold=threshold, code=code, kept=kept, levels=levels)
    history = table.history
    if apart is None and found:
        apart = diff.Apart(table, code or {})
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
        own = c.own_after - c.own_before
        # The whole move beside the step's own change: a slide's, or one a quarter threshold off it.
        whole = c.end > c.start or abs(math.log(c.ratio) - own) > math.log1p(threshold / 4)
        steps.append(
            Step(
                id=c.id,
                sha=history[c.start].commit.sha,
                index=c.start,
                before=math.exp(c.own_before),
                after=math.exp(c.own_after),
                ratio=math.exp(own),
                direction=Kind.REGRESSION if c.ratio > 1 else Kind.IMPROVEMENT,
                p_value=c.p_value,
                span=c.end - c.start + 1,
                end_sha=history[c.end].commit.sha,
                total=c.ratio if whole else None,
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
    clipped = [(robust(raw, scale), scale) for raw, scale in zip(raws, map(history_scale, raws))]
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
                ok = (
                    j for j in range(start - 1, prior - 1, -1) if (r := table.row(j, bid)) is not None and table.ok[r]
                )
                prior = next(ok, prior)
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
    firsts = [(g[0].index, tuple(g)) for g in groups.values()]
    return [Culprit(history[i].commit, history[i - 1].commit if i > 0 else None, g) for i, g in firsts]


# -- the segmentation: outliers clipped to the edge of the noise, change points placed.

# Running-median window and clipping distance (noise units) that tame outliers.
WINDOW = 5
CLIP = 3.0
SIDE = 3  # the levels either side of a level that it may belong to instead (`robust`)
REACH = max(WINDOW // 2, SIDE)  # how far ahead a level's clipping reads
MIN_SEGMENT = 2  # commits on a new level before it counts: one outlier is never a step
# A search is carried on from a checkpoint at most RESUME_BACK points short of the newest final one, else from
# an anchor: one at a multiple of ANCHOR points, at least ANCHOR short of it (a push moves the last levels).
RESUME_BACK = 8
ANCHOR = 128
ANCHORS_TRIED = 3


def robust(logs: np.ndarray, scale: float) -> np.ndarray:
    """Each level clipped to within CLIP noise units of its neighbours' running median, unless it is as near
    the levels just before or just after it (`either_side`; a difference's CLIP units, so times sqrt 2)."""
    if len(logs) < 3:
        return logs
    local, (before, after) = running_median(logs), either_side(logs)
    edge = CLIP * scale
    belongs = np.minimum(np.abs(logs - before), np.abs(logs - after)) <= edge * math.sqrt(2)
    return np.where(belongs, logs, np.clip(logs, local - edge, local + edge))


def running_median(logs: np.ndarray) -> np.ndarray:
    """scipy.ndimage.median_filter(size=WINDOW, mode="mirror") to the bit."""
    half = WINDOW // 2
    padded = np.pad(np.asarray(logs, dtype=float), half, mode="reflect")
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, WINDOW), axis=1)


def either_side(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per level, the medians of the SIDE levels just before and just after it (at the ends, fewer or the other's)."""
    n = len(logs)
    padded = np.pad(np.asarray(logs, dtype=float), SIDE, constant_values=np.nan)
    windows = np.sort(np.lib.stride_tricks.sliding_window_view(padded, SIDE), axis=1)  # NaNs last
    count = SIDE - np.count_nonzero(np.isnan(windows), axis=1)
    low = np.take_along_axis(windows, np.maximum((count - 1) // 2, 0)[:, None], axis=1)[:, 0]
    high = np.take_along_axis(windows, np.minimum(count // 2, SIDE - 1)[:, None], axis=1)[:, 0]
    middle = (low + high) / 2  # np.median's: the middle value, or the mean of the middle two
    before, after = middle[:n], middle[SIDE + 1 :]
    return np.where(np.isnan(before), after, before), np.where(np.isnan(after), before, after)


class Kept(Protocol):
    """Where the search keeps its checkpoints, by content key; where `verify`, a resumed search is `check`ed."""

    verify: bool

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...

    def check(self, kept: object, fresh: object) -> None: ...


def breakpoints_of(series: list[tuple[np.ndarray, float]], *, kept: Kept | None = None) -> list[list[int]]:
    """Per (clipped log levels, noise scale): the cuts of the optimal partition (`search`) of the levels in noise
    units, centred on the calibration span's median. `kept`: checkpoints (RESUME_BACK, ANCHOR): the same cuts."""
    z = [np.asarray(c, dtype=float) / scale for c, scale in series]
    centred = [v - np.median(v[:CALIBRATION]) if len(v) else v for v in z]
    # Final points: all but the last REACH, whose clipping reads levels still to come.
    final = [len(v) - REACH if len(v) > CALIBRATION + WINDOW else 0 for v in centred]
    anchor = [(t - ANCHOR) // ANCHOR * ANCHOR if t >= 2 * ANCHOR else 0 for t in final]
    resume: list[Checkpoint | None] = [None] * len(centred)
    if kept is not None:
        for b, (v, t, a) in enumerate(zip(centred, final, anchor)):
            if not t:
                continue
            anchors = [a - k * ANCHOR for k in range(ANCHORS_TRIED) if a - k * ANCHOR > 0][::-1]
            near = range(max(t - RESUME_BACK, 1, anchors[-1] + 1 if anchors else 1), t + 1)
            keys = digests(v, [*anchors, *near], PENALTY, MIN_SEGMENT)
            for at in sorted(keys, reverse=True):
                value = kept.get(keys[at])
                if value is not None:
                    with contextlib.suppress(ValueError):
                        resume[b] = from_plain(value)
                        break
    keep_at = [(a, t) if a else (t,) for a, t in zip(anchor, final)]
    found, made = search(centred, PENALTY, MIN_SEGMENT, resume=resume, keep_at=keep_at)
    if kept is not None and kept.verify and any(c is not None for c in resume):
        kept.check(found, search(centred, PENALTY, MIN_SEGMENT)[0])
    if kept is not None:
        for c in (c for cs in made for c in cs):
            kept.put(c.digest, {"t": c.t, "digest": c.digest, "slots": dict(c.slots), "back": c.back})
    return [cuts if len(v) >= 2 * MIN_SEGMENT else [] for cuts, v in zip(found, z)]


# -- the search: exact penalised least-squares partitions of many series at once, with functional pruning. The
# least-squares Potts model (the sum of squares within segments plus a penalty per change point, every segment
# at least `min_size` long); starts that can no longer win are pruned (Maidstone et al. 2017), the optimum is the
# unpruned programme's (tests/unit/test_partition.py). All series advance together, point by point.

# Starts kept per series are packed to the left every this many points, and the arrays narrowed.
PACK = 32


@dataclass(frozen=True)
class Checkpoint:
    """The programme's state after the first `t` points of a series, to carry on from when the series grew."""

    t: int
    digest: str  # of those t points, the penalty and min_size: resumed only where they are the same
    slots: dict[str, np.ndarray]  # per field of the state, its value in each start still in play
    back: np.ndarray  # back[u], u <= t: the start of the last segment of the best partition of u points


def digests(x: np.ndarray, ts: Iterable[int], penalty: float, min_size: int) -> dict[int, str]:
    """`digest` of x at each t of `ts` (ascending), hashing x once."""
    x = np.ascontiguousarray(x, dtype=float)
    tail = f" {penalty!r} {min_size}".encode()
    h = hashlib.blake2b()
    at, out = 0, {}
    for t in ts:
        h.update(x[at:t].tobytes())
        at = t
        g = h.copy()
        g.update(tail)
        out[t] = g.hexdigest()
    return out


def from_plain(value: dict) -> Checkpoint:
    """A checkpoint from the plain values and arrays `breakpoints_of` keeps it as; ValueError where it is not one."""
    try:
        t = int(value["t"])
        slots = {f: np.asarray(value["slots"][f]).astype(np.asarray(fill).dtype) for f, fill in zip(FIELDS, _FILLS)}
        back = np.asarray(value["back"], dtype=np.int64)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a checkpoint: {exc}") from None
    sizes = {a.shape for a in slots.values()}
    if t < 1 or back.shape != (t + 1,) or len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError("not a checkpoint: its arrays disagree")
    return Checkpoint(t, str(value["digest"]), slots, back)


# The state per start still in play, in a Checkpoint's `slots`.
FIELDS = ("start", "cost0", "a", "sq", "m", "low", "high", "shut_low", "shut_high", "alive", "drop_at")
_FILLS = (0, np.inf, 0.0, 0.0, 0.0, -np.inf, np.inf, np.inf, -np.inf, False, np.inf)


def search(
    series: list[np.ndarray],
    penalty: float,
    min_size: int = 2,
    *,
    resume: list[Checkpoint | None] | None = None,
    keep_at: Sequence[tuple[int, ...]] | None = None,
) -> tuple[list[list[int]], list[list[Checkpoint]]]:
    """Per series: the start of every segment after the first, of its optimal partition, carried on from a
    `resume` checkpoint of the same first points; checkpointed at each `keep_at` point count past it."""
    count = len(series)
    if count == 0:
        return [], []
    lengths = np.asarray([len(x) for x in series], dtype=np.int64)
    longest = int(lengths.max())
    resume = list(resume or [None] * count)
    for b, (x, c) in enumerate(zip(series, resume)):
        if c is not None and not (c.t <= len(x) and c.digest == digests(x, [c.t], penalty, min_size)[c.t]):
            resume[b] = None
    t0 = np.asarray([c.t if c is not None else 0 for c in resume], dtype=np.int64)
    wanted = np.zeros((count, longest + 1), dtype=bool)  # [series, point count]: a checkpoint after it
    for b, ks in enumerate(keep_at or [()] * count):
        wanted[b, [k for k in ks if t0[b] < k <= lengths[b]]] = True
    any_wanted = bool(wanted.any())
    steps = int((lengths - t0).max())
    xs = np.zeros((steps, count))
    for b, x in enumerate(series):
        xs[: len(x) - t0[b], b] = x[t0[b] :]
    back = np.zeros((count, longest + 1), dtype=np.int64)
    rows = np.arange(count)
    # Each slot a segment start still in play: where it starts, the best cost up to it, the sum, sum
    # of squares and count of the points since; the levels of the segment after it for which no
    # later start beats it (low..high); those where the start that ended its segment stays better;
    # whether it is in play, and the point after which a beaten start goes.
    width = max([16, *(int(c.slots["start"].size) + 1 for c in resume if c is not None)])
    state = {f: np.full((count, width), fill) for f, fill in zip(FIELDS, _FILLS)}
    state["start"] = state["start"].astype(np.int64)
    state["alive"] = state["alive"].astype(bool)
    state["alive"][:, 0], state["cost0"][:, 0] = True, -penalty  # the first segment costs no penalty
    for b, c in enumerate(resume):
        if c is not None:
            size = c.slots["start"].size
            for field in FIELDS:
                state[field][b, :size] = c.slots[field]
            state["alive"][b, size:] = False
            back[b, : c.t + 1] = c.back
    start, cost0, a, sq, m, low, high, shut_low, shut_high, alive, drop_at = (state[f] for f in FIELDS)
    kept: list[list[Checkpoint]] = [[] for _ in range(count)]
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in range(steps):
            t = t0 + s + 1  # each series' own point count
            tc = t[:, None]
            x = xs[s][:, None]
            a += x
            sq += x * x
            m += 1
            aa = a * a
            total = np.where(alive & (m >= min_size), cost0 + (sq - aa / m), np.inf)
            k = np.argmin(total, axis=1)
            active = lengths >= t
            f = np.where(active, total[rows, k] + penalty, np.inf)
            back[rows[active], t[active]] = start[rows[active], k[active]]
            mk, ak = m[rows, k], a[rows, k]  # the segment f ends
            # A start beaten at point p goes after point p + min_size - 1: until then the start that
            # beat it could not end a segment yet.
            alive &= drop_at > tc
            # Start t (cost f, whatever the level) beats an older start wherever
            # m mu^2 - 2 a mu + (sq + cost0 - f) > 0: that start keeps the levels between the roots.
            disc = aa - m * (sq + cost0 - f[:, None])
            root = np.sqrt(np.maximum(disc, 0.0))
            low = np.maximum(low, (a - root) / m)
            high = np.minimum(high, (a + root) / m)
            gone = (disc < 0) | (low > high) | ((shut_low <= low) & (high <= shut_high))
            drop_at = np.where(alive & active[:, None] & gone, np.minimum(drop_at, tc + min_size - 1), drop_at)
            add = active & np.isfinite(f)
            arrays = [start, cost0, a, sq, m, low, high, shut_low, shut_high, alive, drop_at]
            if (s + 1) % PACK == 0 or not (~alive)[add].any(axis=1).all():
                arrays, width = _pack(arrays, alive, _FILLS)
                start, cost0, a, sq, m, low, high, shut_low, shut_high, alive, drop_at = arrays
            slot = np.argmax(~alive, axis=1)
            r, c = rows[add], slot[add]
            mk, ak = mk[add], ak[add]
            start[r, c], cost0[r, c], alive[r, c], drop_at[r, c] = t[add], f[add], True, np.inf
            a[r, c], sq[r, c], m[r, c], low[r, c], high[r, c] = 0.0, 0.0, 0.0, -np.inf, np.inf
            # The start that gave f is better than t wherever the new segment's level stays
            # within sqrt(penalty / its length) of that segment's mean: t never wins there.
            half = np.sqrt(penalty / mk)
            shut_low[r, c], shut_high[r, c] = ak / mk - half, ak / mk + half
            due = wanted[rows, np.minimum(t, longest)] & (t <= lengths) if any_wanted else rows < 0
            for b in np.flatnonzero(due).tolist():
                used, at = alive[b], int(t[b])
                slots = {name: arr[b, used].copy() for name, arr in zip(FIELDS, arrays)}  # in FIELDS order
                digest = digests(series[b], [at], penalty, min_size)[at]
                kept[b].append(Checkpoint(at, digest, slots, back[b, : at + 1].copy()))
    out = []
    for b in range(count):
        cuts: list[int] = []
        at = int(lengths[b])
        while at > 0:
            at = int(back[b, at])
            if at > 0:
                cuts.append(at)
        out.append(cuts[::-1])
    return out, kept


def _pack(arrays: list[np.ndarray], used: np.ndarray, fills: tuple) -> tuple[list[np.ndarray], int]:
    """The slots in use moved to the left of each row, and the width fitted to the fullest row with room for one more."""
    order = np.argsort(~used, axis=1, kind="stable")
    need = int(used.sum(axis=1).max()) + 1
    width = max(16, -(-need * 5 // 4 // 8) * 8)  # a quarter more than the fullest row needs, in eights
    out = []
    for arr, fill in zip(arrays, fills):
        packed = np.take_along_axis(arr, order, axis=1)[:, :width]
        if packed.shape[1] < width:
            packed = np.concatenate(
                [packed, np.full((len(arr), width - packed.shape[1]), fill, dtype=arr.dtype)], axis=1
            )
        else:
            packed[~np.take_along_axis(used, order, axis=1)[:, :width]] = fill
        out.append(packed)
    return out, width
