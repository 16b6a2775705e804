"""Measure commits: worktree, build, worker processes, and what to do when they fail.

The parent never imports torch: each commit costs one worker start. A worker
that dies (segfault, abort) or hangs (per-benchmark timeout) is recorded
against the benchmark it was running and a fresh worker takes the rest.
Interrupted (Ctrl-C, SIGTERM) or killed, a range keeps every finished commit
on disk whole; a commit cut short is kept marked incomplete, and
`--skip-existing` later measures only what it lacks.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from regress import __version__
from regress.core import config
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import BenchmarksFrom, Mode
from regress.core.merge import Conflict
from regress.core.records import WORKTREE, CommitInfo, CommitResult, Settings
from regress.core.reporter import QUIET
from regress.measure.one_commit import Collector, Request, measure_commit
from regress.measure.shard import Shard
from regress.measure.worker_process import close_servers, trace
from regress.storage import gitrepo
from regress.storage.store import Store


@dataclass(frozen=True)
class Options:
    revisions: tuple[str, ...] = ("HEAD",)
    skip_existing: bool = False
    bench: str = ""
    benchmarks_from: BenchmarksFrom = BenchmarksFrom.WORKTREE
    mode: Mode = Mode.TIME
    shard: Shard | None = None  # --shard K/N: only this share of the benchmarks
    paired: bool = False  # --paired: the newest measured ancestor measured again in the same run
    paths: tuple[str, ...] = ()  # `-- PATH...`: only the commits that touch these


@dataclass
class RunSummary:
    measured: list[CommitResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Stored parts a new run replaced (an edited benchmark, another torch build), said to the user.
    replaced: list[Conflict] = field(default_factory=list)
    paired: str = ""  # the measured ancestor this run measured again beside the new commits


def settings_for(cfg: Config, options: Options) -> Settings:
    return Settings(
        mode=options.mode,
        min_run_time=cfg.min_run_time,
        warmup=cfg.warmup,
        timeout=cfg.timeout,
        benchmarks_from=options.benchmarks_from,
        bench_filter=options.bench,
        regress_version=__version__,
    )


def list_benchmarks(cfg: Config) -> Collector:
    """Discover the working tree's suites against the working tree's code."""
    require_suites(cfg)
    info = CommitInfo(WORKTREE, (), "", "", 0, 0, "")
    req = Request(info, Settings(timeout=cfg.timeout), cfg.root, cfg.benchmarks_dir, cfg.root, listing=True)
    return measure_commit(cfg, req)


def require_suites(cfg: Config) -> None:
    """One line when the configured benchmark folder is missing."""
    if not cfg.benchmarks_dir.exists():
        raise RegressError(
            f"no benchmark folder or file {cfg.benchmarks_dir}; create it with a bench_*.py suite, "
            'or set benchmarks = "..." in [tool.regress] of pyproject.toml (or pass --benchmarks PATH)'
        )


def _check(options: Options) -> None:
    if options.benchmarks_from not in ("worktree", "commit"):
        raise RegressError(f"--benchmarks-from must be 'worktree' or 'commit', not {options.benchmarks_from!r}")
    try:
        config.pattern(options.bench)
    except ValueError as exc:
        raise RegressError(f"--bench {options.bench!r} {exc}") from None


# How far back a push's measured ancestor is looked for (first parents).
PAIR_DEPTH = 1000


def _pair_for(cfg: Config, repo, store: Store, plan: list[str]) -> str | None:
    """The newest ancestor of the plan's oldest commit that this machine has measured, not in the plan.

    A push job measures HEAD beside it in one run: a same-machine, same-minute
    pair, whatever runner the job got (docs/statistics.md, "Runs").
    """
    for sha in gitrepo.first_parent_ancestors(repo, plan[0], PAIR_DEPTH):
        if sha not in plan and store.has(cfg.machine_name, cfg.env, sha):
            return sha
    return None


# A paired push measures two commits for at most 1.5x what one commit cost:
# rounds half as long (more processes for the time: the luck between processes,
# and on a machine with modes the chance to land in the fast one, is what a
# level needs most), and up to 0.75 of the budget each. The plan is sequential
# (`adaptive.hinges`): a benchmark whose verdict against the parent is decided
# takes no more rounds, so a quiet machine spends far less; the whole budget
# goes only where verdicts still hinge (0.55 before the plan was sequential,
# when every benchmark took rounds to it).
PAIRED_ROUND = 0.5
PAIRED_BUDGET = 0.75


def paired_plan(budget, settings: Settings):
    from dataclasses import replace

    from regress.measure import adaptive

    budget = replace(budget, seconds=budget.seconds * PAIRED_BUDGET)
    return budget, adaptive.with_plan(replace(settings, min_run_time=settings.min_run_time * PAIRED_ROUND), budget)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """A cancelled CI job (SIGTERM) cleans up and keeps finished work, like Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run(cfg: Config, options: Options, progress=None) -> RunSummary:
    """Measure the commits `options` names, interleaved in rounds; each round saved as it finishes."""
    from regress.measure import adaptive, engine

    progress = progress or QUIET
    _check(options)
    trace("run_start")
    repo = gitrepo.open_repo(cfg.root)
    if options.benchmarks_from == BenchmarksFrom.WORKTREE:
        require_suites(cfg)
    revs = list(options.revisions) or ["HEAD"]
    wants_worktree = WORKTREE in revs
    shas = gitrepo.resolve(repo, [r for r in revs if r != WORKTREE], options.paths) if revs != [WORKTREE] else []
    store = Store(cfg.results_dir)
    budget = adaptive.budget_for(cfg, options.mode)
    settings = adaptive.with_plan(settings_for(cfg, options), budget)
    summary = RunSummary()
    with _sigterm_as_interrupt(), store.lock():
        gitrepo.prune_stale(repo)
        plan: list[str] = []
        top_up: dict[str, CommitResult | None] = {}
        for sha in shas:
            existing = store.load(cfg.machine_name, cfg.env, sha) if options.skip_existing else None
            if existing is not None and existing.complete and options.shard is None:
                summary.skipped.append(sha)
                continue
            plan.append(sha)  # interrupted earlier, or holds other shards' share: top up what it lacks
            top_up[sha] = existing
        pair = _pair_for(cfg, repo, store, plan) if (options.paired or cfg.paired) and plan else None
        if pair is not None:
            plan.insert(0, pair)  # its earlier rounds stay stored; this run's plan counts its own
            summary.paired = pair
            budget, settings = paired_plan(budget, settings)
        if wants_worktree:
            plan.append(WORKTREE)
        try:
            with engine.checked_out(cfg, repo, plan, lambda sha: settings, top_up) as targets:
                engine.add_stored_parents(cfg, store, targets)
                try:
                    engine.measure_targets(cfg, store, targets, budget, progress, shard=options.shard)
                finally:
                    summary.measured = [t.measured for t in targets if t.measured is not None]
                    summary.replaced = [c for t in targets for c in t.replaced]
        finally:
            close_servers()
    trace("run_end")
    return summary
