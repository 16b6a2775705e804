"""The round engine: several rounds per commit, ranges interleaved, every round saved.

`regress run`, `compare --measure` and the pull-request check all measure
through `measure_targets`. Round k of every commit of the range is taken
before round k+1 of any (the order alternates between rounds, oldest first
then newest first), so a busy minute on a shared runner touches every commit
alike instead of being one commit's whole measurement. Each round of each
commit is one forked worker process (`pool`), saved as soon as it finishes
(long rounds also at checkpoints), so Ctrl-C, SIGTERM or SIGKILL keep every
finished round and `--skip-existing` tops up what a commit still lacks.
How many rounds each benchmark gets is `adaptive`'s rule.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from regress.analysis import modes, stats
from regress.core.config import Config
from regress.core.kinds import BenchmarksFrom, FailureKind
from regress.core.merge import Conflict
from regress.core.records import (
    WORKTREE,
    BenchmarkId,
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Run,
    Settings,
)
from regress.core.reporter import QUIET, Reporter
from regress.measure import adaptive, build, clock, one_commit
from regress.storage import gitrepo
from regress.storage.store import Store


@dataclass
class Target:
    """One commit of a range, checked out and built, and what is known of its rounds."""

    info: CommitInfo
    settings: Settings
    code_dir: Path
    suite_dir: Path
    shown_root: Path
    build_failure: Failure | None = None
    values: dict[BenchmarkId, list[float]] = field(default_factory=dict)  # round values that count toward the plan
    final: set[BenchmarkId] = field(default_factory=set)  # failed or skipped: no more rounds
    spent: float = 0.0  # seconds of measuring in this run
    rounds: int = 0  # rounds taken in this run
    stopped: bool = False  # nothing (more) can be measured: build failed, suites don't import
    measured: CommitResult | None = None  # everything this run measured for it
    # Round values of the neighbouring commits (this run's neighbours in the
    # range, a stored parent): shared dicts, so they grow as those are measured.
    neighbours: list[dict[BenchmarkId, list[float]]] = field(default_factory=list)
    replaced: list[Conflict] = field(default_factory=list)  # stored parts this run's saves replaced
    # The last round's (saver, collector) when it was saved as unfinished: the plan
    # may stop wanting rounds later (the budget spent, a neighbour settled); `finish` marks it done.
    unfinished: tuple | None = None
    _machine: tuple | None = None  # (rounds it was made from, `machine()`)

    def _wants(self, key: BenchmarkId, values: list[float], budget: adaptive.Budget) -> bool:
        around = [n[key] for n in self.neighbours if key in n]
        return adaptive.wants_round(values, budget, self.spent, around, key.num_threads, self.machine)

    def machine(self):
        """Every benchmark's rounds of this commit and its neighbours against their floors (`modes.machine`):
        how often this machine puts a round far above its floor. Made again only when a round was added."""
        sources = [self.values, *self.neighbours]
        count = sum(len(v) for d in sources for v in d.values())
        if self._machine is None or self._machine[0] != count:
            self._machine = (count, modes.relative([v for d in sources for v in d.values()]))
        return self._machine[1]

    def wants(self, budget: adaptive.Budget) -> bool:
        if self.stopped:
            return False
        if self.rounds == 0:
            return True  # its first round: discovery may find benchmarks not yet measured
        return any(self._wants(k, v, budget) for k, v in self.values.items() if k not in self.final)

    def skip(self, budget: adaptive.Budget) -> set[BenchmarkId]:
        """Benchmarks the next round leaves out: finished, failed or skipped."""
        done = {k for k, v in self.values.items() if not self._wants(k, v, budget)}
        return done | self.final

    def absorb(self, got: one_commit.Collector) -> None:
        for key, res in got.results.items():
            counted = counting(res, self.settings.mode)
            if not counted:  # a round that counted nothing: another would not either
                self.final.add(key)
            else:
                self.values.setdefault(key, []).extend(counted)
        if not got.results and (got.failures or self.build_failure):
            self.stopped = True  # the build failed or the suites didn't import: more rounds won't help


def time_left(targets: list[Target], budget: adaptive.Budget) -> float | None:
    """Seconds of measuring left: the plan's rounds, extra ones included, at the pace so far (`clock`)."""
    return clock.time_left(targets, budget)


def take_round(
    cfg: Config,
    store: Store,
    t: Target,
    budget: adaptive.Budget,
    progress: Reporter,
    shard=None,
    measure=one_commit.measure_commit,
    run: Run | None = None,
) -> one_commit.Collector:
    """One round of the benchmarks `t` still wants, in one fresh worker; saved as it goes.

    `measure` is what runs the workers (a test passes a fake).
    """
    started = time.time()
    got = one_commit.Collector(run=run.id if run is not None else "")
    base = CommitResult(
        commit=t.info,
        machine=cfg.machine_name,
        env=cfg.env,
        fingerprint=Fingerprint(machine=cfg.machine_name),
        settings=t.settings,
        started_at=started,
        runs=(run,) if run is not None else (),
    )
    saver = one_commit.Saver(store, base, earlier=t.measured, replaced=t.replaced)
    complete = False
    try:
        if t.build_failure is not None:
            got.failures.append(t.build_failure)
        elif not t.suite_dir.exists():
            got.failures.append(
                Failure(FailureKind.SUITE, f"no benchmark folder {cfg.benchmarks}/ in this commit", t.info.short)
            )
        else:
            req = one_commit.Request(
                t.info, t.settings, t.code_dir, t.suite_dir, t.shown_root, frozenset(t.skip(budget)), shard
            )
            measure(cfg, req, progress, collector=got, on_result=lambda: saver.checkpoint(got))
        complete = True
    finally:
        if complete:
            # Whether the commit is done decides the file's `complete` flag.
            t.rounds += 1
            t.absorb(got)
            complete = not t.wants(budget)
        if complete or saver.unsaved(got) or got.reference:
            saver.save(got, complete=complete)
        t.unfinished = None if complete else (saver, got)
        t.measured = saver.merged(got)
    return got


def measure_targets(
    cfg: Config,
    store: Store,
    targets: list[Target],
    budget: adaptive.Budget,
    progress: Reporter = QUIET,
    *,
    shard=None,
    measure=one_commit.measure_commit,
    clock: Callable[[], float] = time.monotonic,
    kind: str = "run",
    run: Run | None = None,
) -> Run:
    """Take rounds of every target, interleaved, until each has what `budget` asks; the run they made.

    `run`: an invocation that measures in several steps (bisect) passes its own.
    """
    run = run or new_run(kind)
    for before, after in zip(targets, targets[1:]):
        before.neighbours.append(after.values)
        after.neighbours.append(before.values)
    k = 0
    while True:
        k += 1
        order = targets if k % 2 else targets[::-1]
        todo = [t for t in order if t.wants(budget)]
        if not todo:
            for t in targets:
                finish(t, budget)
            return run
        for i, t in enumerate(todo, 1):
            progress.round_started(k, i, len(todo), t.info, time_left(targets, budget))
            started = clock()
            try:
                take_round(cfg, store, t, budget, progress, shard, measure, run)
            finally:
                t.spent += clock() - started
            if not t.wants(budget):
                finish(t, budget)
                progress.commit_finished(t.measured)


def new_run(kind: str = "run") -> Run:
    """A name for this invocation, unique across machines and jobs: when, and a random part."""
    now = time.time()
    return Run(
        id=time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "-" + os.urandom(4).hex(), kind=kind, started_at=now
    )


def finish(t: Target, budget: adaptive.Budget) -> None:
    """Mark a commit's file complete once the plan wants no more of it.

    A round decides `complete` before its own time is counted and before its
    neighbours' next rounds, so a commit that stops on its budget or on a
    neighbour's settling was left saved as unfinished (and `show` said
    "interrupted"): its last round is saved again, complete, adding nothing.
    """
    if t.unfinished is not None and not t.wants(budget):
        saver, got = t.unfinished
        saver.save(got, complete=True)
        t.unfinished = None


def suite_of(cfg: Config, code_dir: Path, settings: Settings) -> tuple[Path, Path]:
    """(suite folder, root its file names are shown relative to) for a commit."""
    if settings.benchmarks_from == BenchmarksFrom.COMMIT:
        return code_dir / cfg.benchmarks, code_dir
    return cfg.benchmarks_dir, cfg.root


def stored_values(
    result: CommitResult | None, run: str | None = None, mode: str = "time"
) -> tuple[dict[BenchmarkId, list[float]], set[BenchmarkId]]:
    """Round values and final benchmarks of what is stored, to top up from (`run`: its rounds only; `counting`)."""
    values: dict[BenchmarkId, list[float]] = {}
    final: set[BenchmarkId] = set()
    for r in result.results if result is not None else ():
        counted = counting(r, mode, run)
        if counted is None:
            final.add(one_commit.key(r.spec))
        elif counted:
            values[one_commit.key(r.spec)] = counted
    return values, final


def counting(res: BenchmarkResult, mode: str = "time", run: str | None = None) -> list[float] | None:
    """The one rule for which of a result's rounds count toward a `mode` plan (`run`: only that run's).

    None: no more rounds (failed, skipped; counted, in instructions mode; a tracked value not positive,
    as the plan reads positive values only). What only another mode measured counts no rounds yet."""
    if res.failure is not None:
        return None
    if mode == "instructions":
        return None if res.counts else []
    if res.samples:
        return [stats.round_value(s) for s in res.samples if run is None or s.run == run]
    if res.tracked:
        return [t.value for t in res.tracked] if all(t.value > 0 for t in res.tracked) else None
    return []


@contextlib.contextmanager
def checked_out(
    cfg: Config,
    repo,
    shas: list[str],
    settings_of: Callable[[str], Settings],
    top_up: dict[str, CommitResult | None],
    run: str | None = None,
):
    """Targets for `shas`, each in its own worktree (built once), removed afterwards.

    `top_up`: what is stored of each, whose rounds count toward the plan (`run`: only that run's)."""
    with contextlib.ExitStack() as stack:
        targets = []
        for sha in shas:
            info = gitrepo.worktree_info(repo) if sha == WORKTREE else gitrepo.commit_info(repo, sha)
            settings = settings_of(sha)
            try:
                code_dir = cfg.root if sha == WORKTREE else stack.enter_context(gitrepo.worktree(repo, sha))
            except gitrepo.CheckoutFailed as exc:
                # Recorded for this commit, like a failed build; the range goes on.
                failed = Failure(FailureKind.CHECKOUT, str(exc))
                targets.append(Target(info, settings, cfg.root, cfg.root, cfg.root, failed))
                continue
            suite_dir, shown_root = suite_of(cfg, code_dir, settings)
            values, final = stored_values(top_up.get(sha), run, settings.mode)
            targets.append(
                Target(info, settings, code_dir, suite_dir, shown_root, build.build(cfg, code_dir), values, final)
            )
        yield targets


def add_stored_parents(cfg: Config, store: Store, targets: list[Target]) -> None:
    """A target whose parent is not in the range gets the parent's stored rounds as a neighbour.

    `regress run HEAD` in CI measures one commit; its parent was measured by
    the previous push (restored from the results branch), and that is what
    its verdict will be against.
    """
    shas = {t.info.sha for t in targets}
    for t in targets:
        parent = t.info.parents[0] if t.info.parents else None
        if parent and parent not in shas:
            stored = store.load(cfg.machine_name, cfg.env, parent)
            if stored is not None:
                t.neighbours.append(stored_values(stored, mode=t.settings.mode)[0])
