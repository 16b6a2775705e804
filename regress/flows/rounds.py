"""More rounds for a comparison, through the round engine.

`compare --measure` and the pull-request check take rounds of base and head
in turn (the engine interleaves them), each in a fresh forked worker, and
the store appends them to what each commit already holds, so an interrupted
comparison keeps what it measured.
"""

from __future__ import annotations

from regress.core.config import Config
from regress.core.kinds import BenchmarksFrom, Kind
from regress.core.records import CommitResult, Run
from regress.core.reporter import QUIET, Reporter
from regress.flows import runner
from regress.measure import adaptive, engine
from regress.measure.worker_process import close_servers
from regress.storage import gitrepo
from regress.storage.store import Store


def measure_rounds(
    cfg: Config,
    shas: list[str],
    *,
    rounds: int | None = None,
    bench: str = "",
    reporter: Reporter = QUIET,
    run: Run | None = None,
) -> dict[str, CommitResult | None]:
    """Top every commit in `shas` up, in turn; return what is stored after.

    With `rounds`, every benchmark is topped up to `rounds` more than the most
    any benchmark of these commits holds; without, the configured adaptive
    plan, counting the rounds already stored. With `run` (an invocation that
    measures in several steps: bisect, the pull-request check), the rounds
    are that run's, and only its own rounds count toward the plan.
    """
    repo = gitrepo.open_repo(cfg.root)
    store = Store(cfg.results_dir)
    shas = list(dict.fromkeys(shas))
    with store.lock():
        gitrepo.prune_stale(repo)
        stored = {sha: store.load(cfg.machine_name, cfg.env, sha) for sha in shas}
        if any(r is None or r.settings.benchmarks_from == BenchmarksFrom.WORKTREE for r in stored.values()):
            runner.require_suites(cfg)
        mine = run.id if run is not None else None
        counted = stored
        if rounds is None:
            budget = adaptive.budget_for(cfg)
        elif run is not None:  # `rounds` more of each, in this run
            budget = adaptive.Budget(min_rounds=rounds, max_rounds=rounds, seconds=float("inf"))
            counted = {}
        else:
            have = max((len(v) for r in stored.values() for v in engine.stored_values(r, mine)[0].values()), default=0)
            budget = adaptive.Budget(min_rounds=have + rounds, max_rounds=have + rounds, seconds=float("inf"))

        def settings_of(sha: str):
            existing = stored.get(sha)
            benchmarks_from = existing.settings.benchmarks_from if existing is not None else BenchmarksFrom.WORKTREE
            base = runner.settings_for(cfg, runner.Options(bench=bench, benchmarks_from=benchmarks_from))
            return adaptive.with_plan(base, budget)

        reporter.rounds_planned(budget.max_rounds)
        try:
            with engine.checked_out(cfg, repo, shas, settings_of, counted, mine) as targets:
                engine.measure_targets(cfg, store, targets, budget, reporter, run=run, kind="measure")
        finally:
            close_servers()
        return {sha: store.load(cfg.machine_name, cfg.env, sha) for sha in shas}


# The most rounds a side reaches when verdicts ask for more (`compare --measure`, bisect's ends).
MOST_ROUNDS_PER_SIDE = 40


def plan_more(verdicts, *, rounds: int | None = None) -> tuple[int, list]:
    """How many more rounds `compare --measure` takes, and of which benchmarks.

    Without `rounds`: the noisy benchmarks that more rounds can help, up to
    the rounds their verdicts ask for (at least RECOMMENDED_ROUNDS per side). With it: every benchmark
    measured at both commits, up to `rounds` per side.
    """
    from regress.analysis.stats import RECOMMENDED_ROUNDS

    comparable = [v for v in verdicts if v.base_rounds and v.head_rounds]
    if rounds is None:
        chosen = [v for v in comparable if v.verdict == Kind.NOISY and v.rounds_needed]
        target = max([RECOMMENDED_ROUNDS, *(v.rounds_needed or 0 for v in chosen)])
    else:
        chosen, target = comparable, rounds
    if not chosen:
        return 0, []
    have = min(min(v.base_rounds, v.head_rounds) for v in chosen)
    return max(0, min(target, MOST_ROUNDS_PER_SIDE) - have), chosen


def exact_filter(ids) -> str:
    """A --bench regex that matches exactly these benchmark identities."""
    import re

    return "^(?:" + "|".join(re.escape(str(i)) for i in ids) + ")$"
