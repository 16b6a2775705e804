"""What the site shows, computed from the results: plain data, no HTML, no I/O.

One `Series` per machine and environment (never joined with another). For
every commit of a series and every benchmark it measured, the report needs
two kinds of numbers, computed once here (`Series.tracks`) and shared by
every page:

- for the trend charts, the statistic the differ and the change points use:
  the **level** (`stats.level` of `stats.round_values`: the fastest round's
  fastest block) and the quartiles of the round values (`stats.spread`, one
  value per round) for the band, so change-point markers (whose before and
  after are levels) sit on the line;
- for the Compare tables, torch's: the median over every round's runs, its
  quartiles and torch's significant-figure estimate (they match `regress show`).

A Compare table cell's colour is the differ's verdict (`diff.compare`)
against the benchmark's previous measured commit, never a ratio of medians.
A verdict costs a bootstrap, and a site can hold a thousand commits of two
hundred benchmarks, so only the newest `VERDICT_COMMITS` commits of each
series are judged (`Series.verdicts`); older tables are shown uncoloured, and
the label page says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from regress.analysis import levels as history_levels
from regress.analysis import runs, stats
from regress.analysis.changepoints import Step, find_steps
from regress.analysis.diff import Verdict, compare
from regress.core.history import history_order
from regress.core.kinds import FailureKind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult
from regress.report.tables import (
    summarize_times,
)

# The newest commits of each series whose Compare tables are coloured by verdicts.
# Each verdict bootstraps its rounds (a few ms); judging every commit of a site of
# 1,000 commits x 200 benchmarks would take minutes, these 30 take seconds.
VERDICT_COMMITS = 30
# A regression (improvement) at least this big (this big a speed-up) is marked stronger.
BIG_CHANGE = 1.5


@dataclass(frozen=True)
class Track:
    """One benchmark's measurements in one series, oldest first (parallel arrays)."""

    commits: np.ndarray  # index into Series.history
    median: np.ndarray  # torch's: every block of every round pooled (Compare tables)
    q1: np.ndarray
    q3: np.ndarray
    figures: np.ndarray  # torch's significant_figures
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

    @property
    def name(self) -> str:
        return f"{self.machine} / {self.env}"

    @property
    def ids(self) -> set[BenchmarkId]:
        return set(self.tracks) | set(self.failed) | set(self.counts)


def summarize(
    series: Series, *, threshold: float, code: dict[str, str] | None = None, judge=compare, steps=find_steps
) -> Series:
    """Fill in tracks, failures, change points and recent verdicts from the series' history.

    The times of every successful result are gathered into one flat array
    and summarized with numpy, rows of equal length at a time: at 1,000
    commits x 200 benchmarks a per-result Python loop costs seconds.
    """
    rows: dict[BenchmarkId, list[int]] = {}
    commit_of: list[int] = []
    flat: list[float] = []
    per_run: list[int] = []  # number_per_run of each sample
    sample_len: list[int] = []
    result_len: list[int] = []
    levels: list[float] = []
    round_flat: list[float] = []  # every result's round values, one after another
    round_len: list[int] = []
    failed = series.failed
    summarized: dict[int, tuple[float, ...]] = {}  # result number -> torch's figures, stored with it
    for ci, cr in enumerate(series.history):
        for r in cr.results:
            bid = r.id
            if r.counted:
                series.counts.setdefault(bid, []).append((ci, r.instructions))
            if r.ok and any(s.raw_times for s in r.samples):
                rows.setdefault(bid, []).append(len(commit_of))
                commit_of.append(ci)
                values = (
                    stats.round_values(r)
                    if all(s.raw_times for s in r.samples)
                    else tuple(stats.round_value(s) for s in r.samples if s.raw_times)
                )
                levels.append(stats.level(values))
                round_flat.extend(values)
                round_len.append(len(values))
                total = 0
                known = getattr(r, "torch_stats", ())  # a light result from the summary (storage/summary.py)
                if known:
                    summarized[len(result_len)] = known
                for sample in () if known else r.samples:
                    flat.extend(sample.raw_times)
                    per_run.append(sample.number_per_run)
                    sample_len.append(len(sample.raw_times))
                    total += len(sample.raw_times)
                result_len.append(total)
            elif r.failure is not None and r.failure.kind != FailureKind.SKIPPED:
                failed.setdefault(bid, []).append(Failed(ci, str(r.failure)))
            # else: skipped here (no GPU, say) or instruction counts only: not a failure
    # A commit whose build or suite failed has no result for what it could not run.
    known = set(rows) | set(failed)
    for ci, cr in enumerate(series.history):
        if cr.problems:
            message = "; ".join(str(f) for f in cr.problems)
            for bid in known - {r.id for r in cr.results}:
                failed.setdefault(bid, []).append(Failed(ci, message))
    for entries in failed.values():
        entries.sort(key=lambda f: f.commit)

    times = np.asarray(flat, dtype=np.float64) / np.repeat(np.asarray(per_run, dtype=np.float64), sample_len)
    lengths = np.asarray(result_len, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    stats_ = np.empty((4, len(lengths)))
    for n in np.unique(lengths).tolist():
        which = np.flatnonzero(lengths == n)
        if n == 0:  # light results: their figures were computed when they were stored
            continue
        block = times[starts[which][:, None] + np.arange(n)]
        for k, column in enumerate(summarize_times(block)):
            stats_[k, which] = column
    for k, known in summarized.items():
        stats_[:, k] = known
    band = _round_quartiles(np.asarray(round_flat, dtype=np.float64), np.asarray(round_len, dtype=np.int64))
    level = np.asarray(levels, dtype=np.float64)
    commits = np.asarray(commit_of, dtype=np.int64)
    # The chart's level is the history's: every run's shift taken out (analysis/levels.py).
    fitted = history_levels.adjusted(series.history, code) if _linked(series.history, code) else {}
    for bid, idx in rows.items():
        i = np.asarray(idx, dtype=np.int64)
        mine = fitted.get(bid)
        line = level[i] if mine is None else np.asarray([mine.get(int(c), v) for c, v in zip(commits[i], level[i])])
        moved = line / level[i]  # the band moves with its level: the rounds' quartiles, shift taken out
        series.tracks[bid] = Track(
            commits[i],
            stats_[1, i],
            stats_[0, i],
            stats_[2, i],
            stats_[3, i].astype(np.int64),
            line,
            band[0, i] * moved,
            band[1, i] * moved,
        )
    series.steps = steps(series.history, threshold=threshold, code=code)  # or kept ones (report/steps_cache.py)
    judge_recent(series, threshold=threshold, code=code, judge=judge)
    return series


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


def _round_quartiles(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(q1, q3) of each result's round values, as `stats.spread` (one round: both that round).

    `values` holds every result's rounds one after another, `lengths` how many
    each has; done in bulk, rows of equal length at a time.
    """
    out = np.empty((2, len(lengths)))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    for n in np.unique(lengths).tolist():
        which = np.flatnonzero(lengths == n)
        block = values[starts[which][:, None] + np.arange(n)]
        if n < 2:
            out[:, which] = block[:, 0]
        else:
            out[:, which] = np.percentile(block, [25, 75], axis=1)
    return out


def judge_recent(
    series: Series, *, threshold: float, newest: int | None = None, code: dict[str, str] | None = None, judge=compare
) -> None:
    """The differ's verdicts for the newest `newest` (VERDICT_COMMITS) commits of the series.

    Each benchmark measured at a commit is judged against its previous
    measured commit (the one before it in its track), with the whole of both
    commits' results handed to `diff.compare`: what `regress compare PREV
    COMMIT` says, so a rule that looks across benchmarks (a machine-wide
    slowdown, say) sees them all. Usually that is one comparison per commit,
    with the commit before; a benchmark that failed or was left out there is
    judged against the last commit that measured it, in one more comparison.
    `judge`: `diff.compare`, or what stands in for it (`verdict_cache.CachedCompare`).
    """
    count = VERDICT_COMMITS if newest is None else newest
    first = max(0, len(series.history) - count)
    series.judged_from = first
    wanted: dict[int, dict[int, list[BenchmarkId]]] = {}  # commit -> previous commit -> benchmarks
    for bid, t in series.tracks.items():
        commits = t.commits
        k = int(np.searchsorted(commits, first))
        for j in range(max(k, 1), len(commits)):
            head, base = int(commits[j]), int(commits[j - 1])
            wanted.setdefault(head, {}).setdefault(base, []).append(bid)
    history = series.history
    code = code or {}
    cores = min([c.fingerprint.cores for c in history if c.fingerprint.cores] or [0])
    apart = runs.apart_for(history, code, cores=cores)  # as `regress compare` judges separate runs
    for head in sorted(wanted):
        judged: dict[BenchmarkId, tuple[int, Verdict]] = {}
        for base, ids in sorted(wanted[head].items(), reverse=True):
            before = history[base - 1] if base > 0 else None
            after = history[head + 1] if head + 1 < len(history) else None
            b, h = history[base].commit.sha, history[head].commit.sha
            same = b if code.get(b) and code.get(b) == code.get(h) else ""
            by_id = {
                v.id: v
                for v in judge(
                    history[base],
                    history[head],
                    threshold=threshold,
                    before=before,
                    after=after,
                    apart=apart,
                    same_code=same,
                )
            }
            for bid in ids:
                if bid in by_id:
                    judged[bid] = (base, by_id[bid])
        series.verdicts[head] = judged


def commit_order(series: list[Series]) -> list[CommitInfo]:
    """Every commit of every series once, in history order (as `Store.history` sorts)."""
    seen: dict[str, CommitInfo] = {}
    for s in series:
        for cr in s.history:
            seen.setdefault(cr.commit.sha, cr.commit)
    return history_order(list(seen.values()))
