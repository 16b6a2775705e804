"""Two commits' verdicts, from what is stored, optionally measuring more first.

The one flow behind `regress compare` (with or without --measure) and the
pull-request check: load both sides, judge them, and read the history around
them only when a verdict is a change that neighbours could show to be a blip.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from regress.analysis import diff, metrics, runs, stats
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.history import neighbours
from regress.core.kinds import CHANGES, Metric
from regress.core.records import WORKTREE, CommitInfo, CommitResult
from regress.measure import engine, rounds
from regress.storage import code_identity, summary
from regress.storage.store import Store, check_name


@dataclass(frozen=True)
class Sides:
    """What is compared: a commit (or WORKTREE) and an environment for each side."""

    base: str
    head: str
    base_env: str
    head_env: str
    base_rev: str = ""
    head_rev: str = ""


@dataclass(frozen=True)
class Comparison:
    verdicts: list[diff.Verdict]
    base: CommitInfo
    head: CommitInfo
    threshold: float


def _load(cfg: Config, sides: Sides) -> tuple[CommitResult | None, CommitResult | None]:
    store = Store(cfg.results_dir)
    return (
        store.load(cfg.machine_name, sides.base_env, sides.base),
        store.load(cfg.machine_name, sides.head_env, sides.head),
    )


class History:
    """What compare reads of the history, loaded once and only when a verdict needs it."""

    def __init__(self, cfg: Config, env: str) -> None:
        self.cfg, self.env = cfg, env
        self._results: list[CommitResult] | None = None
        self._code: dict[str, str] | None = None

    @property
    def results(self) -> list[CommitResult]:
        """The history, light (each round's value, run and process: what the allowance reads)."""
        if self._results is None:
            self._results = summary.history(Store(self.cfg.results_dir), self.cfg.machine_name, self.env)
        return self._results

    def code(self, shas) -> dict[str, str]:
        if self._code is None:
            self._code = {}
        missing = [s for s in shas if s not in self._code and s != WORKTREE]
        if missing:
            self._code.update(code_identity.for_config(self.cfg, missing))
        return self._code

    def same_code(self, base: str, head: str) -> str:
        """base's sha when base and head hold identical measured code, else ""."""
        ids = self.code([base, head])
        return base if base != head and ids.get(base) and ids.get(base) == ids.get(head) else ""

    def apart(self, base: CommitResult, head: CommitResult):
        """BenchmarkId -> the allowance for the shift between runs, from the history's same-code pairs."""
        cores = min([c.fingerprint.cores for c in (base, head) if c.fingerprint.cores] or [0])
        lazy: dict = {}

        def given(bid):
            if "apart" not in lazy:
                results = self.results
                lazy["apart"] = runs.apart_for(results, self.code([r.commit.sha for r in results]), cores=cores)
            return lazy["apart"](bid)

        return given


def judge(
    cfg: Config,
    sides: Sides,
    base: CommitResult,
    head: CommitResult,
    *,
    threshold: float,
    counts: bool = False,
    wanted: re.Pattern | None = None,
    metric: Metric = Metric.TIME,
) -> list[diff.Verdict]:
    if metric not in (Metric.TIME, Metric.INSTRUCTIONS):
        verdicts = metrics.compare(base, head, metric, threshold=threshold)
    elif counts:
        verdicts = diff.compare_counts(
            metrics.only(base, Metric.INSTRUCTIONS), metrics.only(head, Metric.INSTRUCTIONS), threshold=threshold
        )
    else:
        base, head = metrics.only(base, Metric.TIME), metrics.only(head, Metric.TIME)  # tracked values are judged apart
        known = History(cfg, sides.head_env) if sides.base_env == sides.head_env else None
        same = known.same_code(sides.base, sides.head) if known is not None else ""
        apart = known.apart(base, head) if known is not None and not same else None
        verdicts = diff.compare(base, head, threshold=threshold, apart=apart, same_code=same)
        if known is not None and any(v.verdict in CHANGES for v in verdicts):
            store = Store(cfg.results_dir)
            history = summary.commits(store, cfg.machine_name, sides.head_env)  # the order, from the summary
            before, after = (
                None if r is None else store.load(cfg.machine_name, sides.head_env, r.commit.sha)
                for r in neighbours(history, sides.base, sides.head)
            )
            if before is not None or after is not None:
                verdicts = diff.compare(base, head, threshold=threshold, before=before, after=after, apart=apart)
    return [v for v in verdicts if wanted is None or wanted.search(str(v.id))]


def compare(
    cfg: Config,
    sides: Sides,
    *,
    threshold: float | None = None,
    counts: bool = False,
    bench: str = "",
    wanted: re.Pattern | None = None,
    metric: Metric = Metric.TIME,
    measure: bool = False,
    more_rounds: int | None = None,
    announce: Callable[[int, int, CommitInfo], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Comparison:
    """`regress compare`: with `measure`, first the rounds the noisy verdicts ask for
    (or `more_rounds` of every benchmark), base and head in turn."""
    if threshold is None:
        threshold = cfg.threshold_for(Metric.INSTRUCTIONS if counts else metric)
    for env in (sides.base_env, sides.head_env):
        check_name("env", env)
    if measure and (sides.base_env != sides.head_env or counts):
        raise RegressError(
            "--measure takes wall-time rounds in one environment; measure each side with "
            "`regress run REV --env NAME [--python PATH] [--mode instructions]` instead"
        )
    if more_rounds is not None and not measure:
        raise RegressError("--rounds only applies with --measure (it sets how many rounds to take)")
    base, head = _load(cfg, sides)
    if measure:
        if base is None or head is None:
            take, only = more_rounds or stats.RECOMMENDED_ROUNDS, bench
        else:
            take, chosen = rounds.plan_more(
                judge(cfg, sides, base, head, threshold=threshold, wanted=wanted), rounds=more_rounds
            )
            only = rounds.exact_filter(v.id for v in chosen)
        if take:
            rounds.measure_rounds(
                cfg, list(dict.fromkeys((sides.base, sides.head))), rounds=take, bench=only, announce=announce
            )
            base, head = _load(cfg, sides)
        else:
            say("regress: nothing to measure: no verdict is noisy (use --rounds N to take more anyway)")
    for result, sha, rev, env in (
        (base, sides.base, sides.base_rev, sides.base_env),
        (head, sides.head, sides.head_rev, sides.head_env),
    ):
        if result is None:
            env_flag = f" --env {env}" if env != "default" else ""
            raise RegressError(
                f"no results for {rev or sha[:10]} ({sha[:10]}) on machine '{cfg.machine_name}', env '{env}' "
                f"in {cfg.results_dir}; measure it with `regress run {rev or sha}{env_flag}`, or add --measure"
            )
    verdicts = judge(cfg, sides, base, head, threshold=threshold, counts=counts, wanted=wanted, metric=metric)
    return Comparison(verdicts, base.commit, head.commit, threshold)


def measured_in_turn(
    cfg: Config,
    sides: Sides,
    *,
    rounds_each: int | None = None,
    threshold: float | None = None,
    announce: Callable[[int, int, CommitInfo], None] | None = None,
) -> Comparison:
    """The pull-request check's comparison: both sides topped up by the round
    engine (the adaptive plan, or `rounds_each` more), then judged as compare does."""
    threshold = cfg.threshold if threshold is None else threshold
    # One run of its own that measures both sides: the verdict is then paired, whatever is stored.
    run = engine.new_run("check")
    rounds.measure_rounds(cfg, [sides.base, sides.head], rounds=rounds_each, announce=announce, run=run)
    base, head = _load(cfg, sides)
    return Comparison(judge(cfg, sides, base, head, threshold=threshold), base.commit, head.commit, threshold)


# What the pull-request check judges besides wall time: the exact metrics, each with its own threshold.
CHECKED_METRICS = (Metric.ALLOCATED, Metric.PEAK, Metric.GRAPH_BREAKS, Metric.RECOMPILES)


def beyond_time(cfg: Config, sides: Sides) -> list[tuple[Metric, list[diff.Verdict], float]]:
    """The exact metrics' verdicts from what is stored for both sides, those with a change only."""
    base, head = _load(cfg, sides)
    out = []
    for metric in CHECKED_METRICS:
        threshold = cfg.threshold_for(metric)
        verdicts = metrics.compare(base, head, metric, threshold=threshold)
        if any(v.verdict in CHANGES for v in verdicts):
            out.append((metric, verdicts, threshold))
    return out
