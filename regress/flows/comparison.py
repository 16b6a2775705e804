"""Two commits' verdicts, from what is stored, optionally measuring more first.

The one flow behind `regress compare` and the pull-request check: load both
sides, judge them, and read the history around them only when a verdict is a
change that neighbours could show to be a blip. It measures nothing and imports
none of the worker machinery (`top_up` takes the rounds a comparison asks for).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from regress.analysis import diff, metrics
from regress.analysis import table as figures_table
from regress.analysis.table import Table
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.history import neighbours
from regress.core.kinds import CHANGES, Metric
from regress.core.records import CommitInfo, CommitResult
from regress.storage import memo, summary
from regress.storage.session import Session
from regress.storage.store import check_name


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
    cores: int = 0  # the machine's (the fewer of the two sides' where both say; 0: unknown)


def load(session: Session, sides: Sides) -> tuple[CommitResult | None, CommitResult | None]:
    """What is stored for both sides (None where a side has nothing).

    The summary's light copy where it was made from the file as it is now: every verdict reads the
    rounds' values, which it holds exactly (`storage/summary.py`); decoding two files of 800 KB each (200
    benchmarks) was a fifth of a compare's time.
    """
    for env in (sides.base_env, sides.head_env):
        check_name("env", env)
    store, machine = session.store, session.cfg.machine_name
    return (
        summary.light_now(store, machine, sides.base_env, sides.base)
        or store.load(machine, sides.base_env, sides.base),
        summary.light_now(store, machine, sides.head_env, sides.head)
        or store.load(machine, sides.head_env, sides.head),
    )


class History:
    """What compare reads of the history of `env`, loaded once and only when a verdict needs it; what is
    derived of it kept in the session's memo."""

    def __init__(self, session: Session, env: str) -> None:
        self.session, self.cfg, self.env, self.memo = session, session.cfg, env, session.memo
        self._listed: list | None = None
        self._table: Table | None = None

    @property
    def listed(self) -> list:
        """The commits in history order, from the summary (no result file decoded), listed once."""
        if self._listed is None:
            self._listed = summary.commits(self.session.store, self.cfg.machine_name, self.env)
        return self._listed

    def around(self, base: str, head: str) -> tuple[CommitResult | None, CommitResult | None]:
        """The measured commits just before base and just after head (None where there is none).

        As the summary's light results, which `listed` has just checked against their files: the blip rule
        reads only their verdicts, and a verdict is judged from the rounds' values and runs, which a light
        result holds exactly (`storage/summary.py`); the files, 12 ms each to decode, only where one is missing.
        """
        near = [None if r is None else r.commit.sha for r in neighbours(self.listed, base, head)]
        store, machine = self.session.store, self.cfg.machine_name
        light = summary.light_or_file(store, machine, self.env, [sha for sha in near if sha is not None])
        before, after = (None if sha is None else light.get(sha) for sha in near)
        return before, after

    def table(self) -> Table:
        """The history's figures (each file's, kept in the memo: what the allowance reads)."""
        if self._table is None:
            store, machine, env = self.session.store, self.cfg.machine_name, self.env
            files = summary.per_file(store, self.memo, machine, env, figures_table.compute)
            self._table = Table.kept(files, lambda: summary.history(store, machine, env))
        return self._table

    def code(self, shas) -> dict[str, str]:
        return self.session.code(shas)

    def same_code(self, base: str, head: str) -> str:
        """base's sha when base and head hold identical measured code, else ""."""
        ids = self.code([base, head])
        return base if base != head and ids.get(base) and ids.get(base) == ids.get(head) else ""

    def apart(self, base: CommitResult, head: CommitResult):
        """BenchmarkId -> the allowance for the shift between runs, from the history's same-code pairs."""
        cores = min([c.fingerprint.cores for c in (base, head) if c.fingerprint.cores] or [0])
        lazy: dict = {}

        def given(bid):
            if "of" not in lazy:
                same, near = self._pairs()
                lazy["of"] = diff.allowances(same, cores=cores, neighbours=near)
            return lazy["of"](bid)

        return given

    def _pairs(self) -> diff.Pairs:
        """The history's pairs: kept by the last site build for these very files (no history read), else from
        the history's figures."""
        shas = [c.commit.sha for c in self.listed]
        code = self.code(shas)
        digests = summary.digests(self.session.store, self.cfg.machine_name, self.env)
        return self.memo.get(
            diff.PAIRS,
            memo.files_digest(digests, shas, sorted(code.items())),
            lambda: diff.history_pairs(self.table(), code),
            diff.pairs_tree,
            diff.pairs_from_tree,
        )


def judge(
    session: Session,
    sides: Sides,
    base: CommitResult,
    head: CommitResult,
    *,
    threshold: float,
    wanted: re.Pattern | None = None,
    metric: Metric = Metric.TIME,
) -> list[diff.Verdict]:
    if metric is not Metric.TIME:
        verdicts = metrics.compare(base, head, metric, threshold=threshold)
    else:
        base, head = metrics.only(base, Metric.TIME), metrics.only(head, Metric.TIME)  # tracked values are judged apart
        known = History(session, sides.head_env) if sides.base_env == sides.head_env else None
        same = known.same_code(sides.base, sides.head) if known is not None else ""
        apart = known.apart(base, head) if known is not None and not same else None
        verdicts = diff.compare(base, head, threshold=threshold, apart=apart, same_code=same)
        if known is not None and any(v.verdict in CHANGES for v in verdicts):
            before, after = known.around(sides.base, sides.head)
            if before is not None or after is not None:
                verdicts = diff.with_neighbours(verdicts, base, head, before, after, threshold=threshold, apart=apart)
    return [v for v in verdicts if wanted is None or wanted.search(str(v.id))]


@dataclass(frozen=True)
class Request:
    """What `regress compare` asks: which sides, which metric, which benchmarks, at what threshold."""

    sides: Sides
    metric: Metric = Metric.TIME
    threshold: float | None = None  # None: the metric's own (the config's, else its default)
    bench: str = ""  # the --bench regex; "" is every benchmark

    @property
    def counts(self) -> bool:
        return self.metric is Metric.INSTRUCTIONS

    @property
    def wanted(self) -> re.Pattern | None:
        return re.compile(self.bench) if self.bench else None

    def threshold_in(self, cfg: Config) -> float:
        if self.threshold is not None:
            return self.threshold
        return cfg.threshold_for(self.metric)


def compare(session: Session, request: Request) -> Comparison:
    """`regress compare` from what is stored (`top_up.compare` measures first)."""
    return judged(session, request, *load(session, request.sides))


def judged(session: Session, request: Request, base: CommitResult | None, head: CommitResult | None) -> Comparison:
    """Both sides' verdicts, or one line saying how to measure the side that has no results."""
    cfg, sides = session.cfg, request.sides
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
    assert base is not None and head is not None  # the loop above raised otherwise
    threshold = request.threshold_in(cfg)
    verdicts = judge(session, sides, base, head, threshold=threshold, wanted=request.wanted, metric=request.metric)
    cores = min([c.fingerprint.cores for c in (base, head) if c.fingerprint.cores] or [0])
    return Comparison(verdicts, base.commit, head.commit, threshold, cores)


# What the pull-request check judges besides wall time: the exact metrics, each with its own threshold.
CHECKED_METRICS = (Metric.ALLOCATED, Metric.PEAK, Metric.GRAPH_BREAKS, Metric.RECOMPILES)


def beyond_time(session: Session, sides: Sides) -> list[tuple[Metric, list[diff.Verdict], float]]:
    """The exact metrics' verdicts from what is stored for both sides, those with a change only."""
    base, head = load(session, sides)
    out = []
    for metric in CHECKED_METRICS:
        threshold = session.cfg.threshold_for(metric)
        verdicts = metrics.compare(base, head, metric, threshold=threshold)
        if any(v.verdict in CHANGES for v in verdicts):
            out.append((metric, verdicts, threshold))
    return out
