"""What the site shows, computed from the results, one `Series` per machine and environment (plain data,
no HTML), and its verdicts (`CachedCompare`, for `diff.compare`) and change points, kept in the memo between
builds by their files' digests, the threshold and the same-code sha, with the allowances they asked for."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from regress.analysis import diff, levels
from regress.analysis.changepoints import Step, find_steps, judge_across
from regress.analysis.diff import Allowance, compare, with_neighbours
from regress.analysis.judge import Verdict, order_key
from regress.analysis.table import FAILED, TIMED, Table
from regress.core import trees
from regress.core.history import history_order
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult
from regress.storage import memo, summary
from regress.storage.memo import Memo

# The newest commits of each series whose Compare tables are coloured by verdicts (each verdict bootstraps).
VERDICT_COMMITS = 30
# A regression (improvement) at least this big (this big a speed-up) is marked stronger.
BIG_CHANGE = 1.5


@dataclass(frozen=True)
class Track:
    """One benchmark's measurements in one series, oldest first (parallel arrays)."""

    commits: np.ndarray  # index into Series.history
    level: np.ndarray  # the differ's: the fastest round's fastest block (charts)
    lo: np.ndarray  # quartiles of the round values, one value per round (chart band)
    hi: np.ndarray


@dataclass(frozen=True)
class Failed:
    commit: int
    message: str


@dataclass
class Series:
    machine: str
    env: str
    history: list[CommitResult]
    tracks: dict[BenchmarkId, Track] = field(default_factory=dict)
    failed: dict[BenchmarkId, list[Failed]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    # Instruction counts (callgrind), apart from times: (commit index, per call).
    counts: dict[BenchmarkId, list[tuple[int, int]]] = field(default_factory=dict)
    # The differ's verdicts for the newest VERDICT_COMMITS commits: commit index ->
    # {benchmark: (index of its previous measured commit, verdict against it)}.
    verdicts: dict[int, dict[BenchmarkId, tuple[int, Verdict]]] = field(default_factory=dict)
    judged_from: int = 0  # first commit index whose tables are coloured by verdicts
    # Each of those comparisons whole, by (base, head) commit index: the overview's newest against
    # the one before it is the last of them, judged once.
    compared: dict[tuple[int, int], list[Verdict]] = field(default_factory=dict)
    # The overview's comparisons of the newest commit, "previous" and "baseline": (the base's index, verdicts).
    overview: dict[str, tuple[int, list[Verdict]]] = field(default_factory=dict)
    # Its figures (analysis/table.py): given by the loader, else built from `history` by summarize.
    table: Table | None = None
    # BenchmarkId -> diff.Allowance, as the recent verdicts were judged (`judge_recent`), and what each
    # benchmark can detect at the newest commit (`site._series`).
    apart: object | None = None
    detects: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.machine} / {self.env}"

    @property
    def ids(self) -> set[BenchmarkId]:
        return set(self.tracks) | set(self.failed) | set(self.counts)


def summarize(
    series: Series, *, threshold: float, code: dict[str, str] | None = None, judge=compare, whole: bool = True
) -> Series:
    """Fill in tracks and failures from the series' `Table` (made if missing), and with `whole` its change
    points and recent verdicts."""
    t = series.table if series.table is not None else Table.of(series.history, site=True)
    series.table, series.history = t, t.history
    ids, pos, bench = t.ids, t.pos, t.bench
    for row in np.flatnonzero(t.instructions >= 0).tolist():
        series.counts.setdefault(ids[bench[row]], []).append((int(pos[row]), int(t.instructions[row])))
    failed = series.failed
    for row in np.flatnonzero(t.status == FAILED).tolist():
        failed.setdefault(ids[bench[row]], []).append(Failed(int(pos[row]), t.messages[row]))
    timed = t.by_bench(t.status == TIMED)
    # A commit whose build or suite failed has no result for what it could not run.
    known = set(timed) | set(failed)
    for ci, cr in enumerate(t.history):
        if cr.problems:
            message = "; ".join(str(f) for f in cr.problems)
            for bid in known - set(t.ids_at(ci)):
                failed.setdefault(bid, []).append(Failed(ci, message))
    for entries in failed.values():
        entries.sort(key=lambda f: f.commit)
    # The chart's level is the history's: every run's shift taken out (analysis/levels.py).
    fitted = levels.chart(t, code or {}) if _linked(t.history, code) else {}
    for bid, i in sorted(timed.items(), key=lambda kv: int(kv[1][0])):  # first measured first
        level = t.level[i]
        line = _fitted_at(fitted.get(bid), pos[i], level)
        moved = line / level  # the band moves with its level: the rounds' quartiles, shift taken out
        series.tracks[bid] = Track(pos[i].astype(np.int64), line, t.band[0, i] * moved, t.band[1, i] * moved)
    if whole:
        series.steps = find_steps(t, threshold=threshold, code=code)
        judge_recent(series, threshold=threshold, code=code, judge=judge)
    return series


def _fitted_at(fitted: tuple[np.ndarray, np.ndarray] | None, at: np.ndarray, level: np.ndarray) -> np.ndarray:
    """The fitted level (`levels.chart`'s positions and levels) at each of `at`, else the measured one."""
    if fitted is None or not len(fitted[0]):
        return level
    positions, levels = fitted
    k = np.minimum(np.searchsorted(positions, at), len(positions) - 1)
    return np.where(positions[k] == at, levels[k], level)


def _linked(history: list[CommitResult], code: dict[str, str] | None) -> bool:
    """Whether any run measured two commits, or two commits share code: else every level is its own."""
    seen: dict[str, str] = {}
    nodes: set[str] = set()
    for c in history:
        node = (code or {}).get(c.commit.sha) or c.commit.sha
        if node in nodes:
            return True
        nodes.add(node)
        for run in c.runs:
            if seen.setdefault(run.id, node) != node:
                return True
    return False


def judge_recent(
    series: Series, *, threshold: float, code: dict[str, str] | None = None, judge=compare, apart=None
) -> None:
    """The newest VERDICT_COMMITS commits' verdicts, each benchmark against its previous measured commit
    as `regress compare PREV COMMIT` judges it (`judge`: `diff.compare` or `CachedCompare`)."""
    first = max(0, len(series.history) - VERDICT_COMMITS)
    series.judged_from = first
    wanted: dict[int, dict[int, list[BenchmarkId]]] = {}  # commit -> previous commit -> benchmarks
    for bid, t in series.tracks.items():
        commits = t.commits
        for j in range(max(int(np.searchsorted(commits, first)), 1), len(commits)):
            head, base = int(commits[j]), int(commits[j - 1])
            wanted.setdefault(head, {}).setdefault(base, []).append(bid)
    history = series.history
    code = code or {}
    series.apart = apart = diff.Apart(series.table, code) if apart is None else apart
    for head in sorted(wanted):
        judged: dict[BenchmarkId, tuple[int, Verdict]] = {}
        for base, ids in sorted(wanted[head].items(), reverse=True):
            found = judge(
                history[base],
                history[head],
                threshold=threshold,
                before=history[base - 1] if base > 0 else None,
                after=history[head + 1] if head + 1 < len(history) else None,
                apart=apart,
                same_code=same_code(code, history[base], history[head]),
            )
            series.compared[base, head] = found
            by_id = {v.id: v for v in found}
            judged.update((bid, (base, by_id[bid])) for bid in ids if bid in by_id)
        series.verdicts[head] = judged


def same_code(code: dict[str, str], base: CommitResult, head: CommitResult) -> str:
    """The base's sha where both sides are the same code (judged as one), else ""."""
    b = base.commit.sha
    return b if code.get(b) and code.get(b) == code.get(head.commit.sha) else ""


def commit_order(series: list[Series]) -> list[CommitInfo]:
    """Every commit of every series once, in history order (as `Store.history` sorts)."""
    if len(series) == 1:  # in that order already
        return [cr.commit for cr in series[0].history]
    seen: dict[str, CommitInfo] = {}
    for s in series:
        for cr in s.history:
            seen.setdefault(cr.commit.sha, cr.commit)
    return history_order(list(seen.values()))


# The memo's kinds: comparisons whole, bare (before the blip rule), the candidate steps', change points.
WHOLE, BARE, ACROSS, STEPS = "verdicts", "bare verdicts", "step verdicts", "steps"
trees.record(BenchmarkId, Kind, Allowance, Step, Verdict)


def _tree(verdicts: list[Verdict], asked: dict[BenchmarkId, Allowance]) -> dict:
    return {"verdicts": verdicts, "apart": list(asked.items())}


def _read(tree: Any) -> tuple[list[Verdict], dict[BenchmarkId, Allowance]]:
    """`_tree`'s verdicts and allowances back (ValueError where they are not)."""
    verdicts, asked = tree["verdicts"], dict(tree["apart"])
    if not all(isinstance(v, Verdict) for v in verdicts) or not all(
        isinstance(b, BenchmarkId) and isinstance(a, Allowance) for b, a in asked.items()
    ):
        raise ValueError("not a kept comparison")
    return verdicts, asked


def steps_of(tree: Any) -> list[Step]:
    """A series' change points as the memo keeps them (ValueError where the tree is not)."""
    if not isinstance(tree, list) or not all(isinstance(s, Step) for s in tree):
        raise ValueError("not kept change points")
    return tree


def _noted(verdicts: list[Verdict], asked: dict[BenchmarkId, Allowance], apart) -> list[Verdict]:
    """The verdicts, each allowance note as the history now gives it (the same sigma, perhaps more pairs)."""
    notes: dict[tuple, list[tuple[str, str]]] = {}
    out = []
    for v in verdicts:
        was = asked.get(v.id)
        now: Allowance | None = apart(v.id) if was is not None else None
        if was is not None and now is not None and now != was:
            if (was, now) not in notes:
                pairs = [(was.describe(), now.describe()), (was.describe_within(), now.describe_within())]
                notes[was, now] = [(old, new) for old, new in pairs if old and old != new]
            reason = v.reason
            for old, new in notes[was, now]:
                reason = reason.replace(old, new)
            v = dataclasses.replace(v, reason=reason)
        out.append(v)
    return out


def steps_inputs(digests: dict[str, str], shas: list[str], *, threshold: float, code: dict[str, str]) -> str | None:
    """What a series' change points are kept under (kind STEPS)."""
    return memo.files_digest(digests, shas, threshold, sorted(code.items()))


def _moved(was: Allowance, now: Allowance) -> bool:
    """Whether `now` may judge otherwise than `was` (more pairs giving the same allowances change only notes)."""
    return (was.sigma, was.within) != (now.sigma, now.within)


def _recording(judge, apart, only) -> tuple[list[Verdict], dict[BenchmarkId, Allowance]]:
    """`judge(apart, only)`'s verdicts, and each allowance they asked for."""
    fresh: dict[BenchmarkId, Allowance] = {}

    def recorded(bid: BenchmarkId) -> Allowance:
        fresh[bid] = apart(bid)
        return fresh[bid]

    return judge(recorded if apart is not None else None, only), fresh


class CachedCompare:
    """`diff.compare` for one series of a site build, its verdicts kept in `memo` between builds."""

    def __init__(self, store, memo: Memo, machine: str, env: str, *, digests: dict[str, str] | None = None):
        self.store, self.memo, self.machine, self.env = store, memo, machine, env
        self.light: dict[str, CommitResult] = {}
        self.digests = summary.digests(store, machine, env) if digests is None else digests
        # Comparisons kept whole, judged whole, and kept but for the benchmarks whose allowance moved;
        # `rejudged` counts the benchmarks the differ judged (not those a kept bare comparison gave, see __call__).
        self.hits = self.misses = self.partial = self.rejudged = 0

    def _key(self, sides, threshold: float, same_code: str) -> str | None:
        shas = [None if c is None else c.commit.sha for c in sides]
        return memo.files_digest(self.digests, shas, threshold, same_code)

    def _light(self, sides) -> list[CommitResult | None]:
        """The sides' light copies, read once each from the summary (else their files)."""
        missing = [c for c in sides if c is not None and c.commit.sha not in self.light]
        if missing:
            found = summary.light_or_file(self.store, self.machine, self.env, [c.commit.sha for c in missing])
            for c in missing:
                self.light[c.commit.sha] = found.get(c.commit.sha) or c
        return [None if c is None else self.light[c.commit.sha] for c in sides]

    def _kept(self, key: str | None, apart, judge, *, kind: str = WHOLE, tally: bool = True) -> list[Verdict]:
        """The verdicts kept under `kind` and `key`, those whose allowance moved judged again, else
        `judge(apart, only)`'s, kept with the allowances asked for; `tally`: counted in hits, misses, partial."""
        tree = self.memo.find(kind, key) if key is not None else None
        # moved: the benchmarks whose allowance moved since; None (judge every benchmark) where nothing is
        # kept, it does not read back, or it asked for allowances this comparison is not given.
        kept: list[Verdict] = []
        asked: dict[BenchmarkId, Allowance] = {}
        moved: set[BenchmarkId] | None = None
        try:
            if tree is not None:
                kept, asked = _read(tree)
                if asked and apart is None:
                    kept, asked = [], {}
                else:
                    moved = {b for b, a in asked.items() if _moved(a, apart(b))}
                    if moved:
                        kept = [v for v in kept if v.id not in moved]
                        asked = {b: a for b, a in asked.items() if b not in moved}
                    kept = _noted(kept, asked, apart)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):  # garbled: made afresh, and replaced
            kept, asked, moved = [], {}, None
        if moved is not None and not moved:
            self.hits += tally
            if self.memo.verify:
                self._verify(kind, kept, {b: apart(b) for b in asked}, apart, judge)
            return kept
        if moved is None:
            self.misses += tally
        else:
            self.partial += tally
        judged, fresh = _recording(judge, apart, moved)
        verdicts = sorted(kept + judged, key=order_key)
        if moved is not None and self.memo.verify:
            self._verify(kind, verdicts, {**{b: apart(b) for b in asked}, **fresh}, apart, judge)
        if key is not None:
            self.memo.put(kind, key, _tree(verdicts, {**asked, **fresh}))
        return verdicts

    def _verify(self, kind: str, verdicts: list[Verdict], asked: dict, apart, judge) -> None:
        """StaleValue where judging afresh does not give `verdicts`; uncounted."""
        counts = self.hits, self.misses, self.partial, self.rejudged
        again, fresh = _recording(judge, apart, None)
        self.hits, self.misses, self.partial, self.rejudged = counts
        again = sorted(again, key=order_key)
        self.memo.check(kind, _tree(verdicts, dict(sorted(asked.items()))), _tree(again, dict(sorted(fresh.items()))))

    def __call__(self, base, head, *, threshold: float, before=None, after=None, apart=None, same_code: str = ""):
        """`diff.compare(base, head, ...)`. Kept twice: whole, and bare (`compare` without the
        neighbours, as `diff.with_neighbours` takes it), so a comparison whose `after` neighbour is new
        applies only the blip rule again, to its few changes."""

        def bare(apart, only):
            light = self._light((base, head))
            found = compare(light[0], light[1], threshold=threshold, apart=apart, same_code=same_code, only=only)
            self.rejudged += len(found)
            return found

        if same_code or (before is None and after is None):  # no neighbour rule applies: bare is whole
            return self._kept(self._key((base, head, before, after), threshold, same_code), apart, bare)
        bare_key = self._key((base, head), threshold, same_code)

        def judge(apart, only):
            # The benchmarks whose allowance moved are judged again alone; else the kept bare verdicts.
            made = bare(apart, only) if only is not None else self._kept(bare_key, apart, bare, kind=BARE, tally=False)
            if base is None or head is None or not any(map(diff.may_blip, made)):
                return made  # no neighbour can move any of them: none read
            light = self._light((base, head, before, after))
            return with_neighbours(made, *light, threshold=threshold, apart=apart)

        return self._kept(self._key((base, head, before, after), threshold, same_code), apart, judge)

    def across(self, table, before: int, after: int, bid: BenchmarkId, threshold: float, apart):
        """`changepoints.judge_across`'s verdict on a candidate step, kept as `__call__`'s are."""

        def judge(apart, only):  # one benchmark: judged again whole
            v = judge_across(table, before, after, bid, threshold, apart)
            self.rejudged += v is not None
            return [] if v is None else [v]

        key = self._key((table.history[before], table.history[after]), threshold, f"across {bid!r}")
        found = self._kept(key, apart, judge, kind=ACROSS)
        return found[0] if found else None
