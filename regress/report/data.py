"""What the site shows, computed from the results, one `Series` per machine and environment: plain data,
no HTML, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from regress.analysis import diff, levels
from regress.analysis.changepoints import Step, find_steps
from regress.analysis.diff import Verdict, compare
from regress.analysis.table import FAILED, TIMED, Table
from regress.core.history import history_order
from regress.core.records import BenchmarkId, CommitInfo, CommitResult

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
    # benchmark can detect at the newest commit (`site._detects`).
    apart: object | None = None
    detects: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.machine} / {self.env}"

    @property
    def ids(self) -> set[BenchmarkId]:
        return set(self.tracks) | set(self.failed) | set(self.counts)


def summarize(
    series: Series,
    *,
    threshold: float,
    code: dict[str, str] | None = None,
    judge=compare,
    whole: bool = True,
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
    hit = positions[k] == at
    return np.where(hit, levels[k], level)


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
    series: Series,
    *,
    threshold: float,
    code: dict[str, str] | None = None,
    judge=compare,
    apart=None,
) -> None:
    """The newest VERDICT_COMMITS commits' verdicts, each benchmark against its previous measured commit
    as `regress compare PREV COMMIT` judges it (`judge`: `diff.compare` or `verdicts.CachedCompare`)."""
    first = max(0, len(series.history) - VERDICT_COMMITS)
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
    if apart is None:  # as `regress compare` judges separate runs
        cores = min([c.fingerprint.cores for c in history if c.fingerprint.cores] or [0])
        apart = diff.apart_for(series.table if series.table is not None else history, code, cores=cores)
    series.apart = apart
    for head in sorted(wanted):
        judged: dict[BenchmarkId, tuple[int, Verdict]] = {}
        for base, ids in sorted(wanted[head].items(), reverse=True):
            before = history[base - 1] if base > 0 else None
            after = history[head + 1] if head + 1 < len(history) else None
            b, h = history[base].commit.sha, history[head].commit.sha
            same = b if code.get(b) and code.get(b) == code.get(h) else ""
            found = judge(
                history[base],
                history[head],
                threshold=threshold,
                before=before,
                after=after,
                apart=apart,
                same_code=same,
            )
            series.compared[base, head] = found
            by_id = {v.id: v for v in found}
            for bid in ids:
                if bid in by_id:
                    judged[bid] = (base, by_id[bid])
        series.verdicts[head] = judged


def commit_order(series: list[Series]) -> list[CommitInfo]:
    """Every commit of every series once, in history order (as `Store.history` sorts)."""
    if len(series) == 1:  # in that order already
        return [cr.commit for cr in series[0].history]
    seen: dict[str, CommitInfo] = {}
    for s in series:
        for cr in s.history:
            seen.setdefault(cr.commit.sha, cr.commit)
    return history_order(list(seen.values()))
