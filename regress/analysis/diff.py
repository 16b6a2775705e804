"""Every benchmark of two commits paired and judged (`judge`), then what the neighbouring commits and the
reference workload say applied (`context`). Pure: CommitResults in, Verdicts out.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from regress.analysis import context, modes, runs, stats
from regress.analysis.judge import iqr
from regress.analysis.verdict import Figures, Side, Verdict, any_regression, order_key, pair  # noqa: F401 - re-exported
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult


def _side(r: BenchmarkResult) -> Side:
    values = stats.round_values(r)
    return Side(stats.level(values), iqr(values), len(values))


# Wall times: a result's samples, each round's fastest block (see `stats`).
TIMES = Figures("samples", lambda r: r.ok, _side)


def _pair(
    bid: BenchmarkId,
    b: BenchmarkResult | None,
    h: BenchmarkResult | None,
    base: CommitResult | None,
    head: CommitResult | None,
    threshold: float,
    cores: int,
    apart=None,
    same_code: str = "",
    machine=None,
) -> Verdict:
    unpaired = pair(bid, b, h, base, head, TIMES)
    if unpaired is not None:
        return unpaired
    assert b is not None and h is not None  # `pair` leaves only benchmarks both sides have
    v = runs.judge_together(b, h, threshold=threshold, cores=cores, apart=apart, machine=machine)
    if same_code and v.verdict != Kind.UNCHANGED:
        return replace(v, verdict=Kind.UNCHANGED, reason=_same(same_code, v), rounds_needed=None)
    return replace(v, reason=_same(same_code, v)) if same_code else v


def machine_of(base: CommitResult | None, head: CommitResult | None):
    """runs -> both commits' every benchmark's rounds of those runs against their floors (`modes.machine`),
    made once per set of runs and shared by every benchmark of the comparison."""
    made: dict[tuple[str, ...], object] = {}

    def of(run_ids: tuple[str, ...]):
        if run_ids not in made:
            made[run_ids] = modes.machine(base, head, runs=set(run_ids) if run_ids else None)
        return made[run_ids]

    return of


def _same(sha: str, v: Verdict) -> str:
    measured = f"measured {v.ratio - 1:+.1%}, " if v.ratio is not None else ""
    return (
        f"same code as {sha[:10]} (the measured code's git trees are identical), so no change is possible; "
        f"{measured}which is the shift between the two measurements"
    )


def compare(
    base: CommitResult | None,
    head: CommitResult | None,
    *,
    threshold: float = 0.05,
    before: CommitResult | None = None,
    after: CommitResult | None = None,
    apart=None,
    same_code: str = "",
    only: Collection[BenchmarkId] | None = None,
) -> list[Verdict]:
    """Every benchmark of either commit (or those of `only`: theirs unchanged), grouped by label then threads,
    worst first. `before` / `after`: the measured commits next to base and head, for `context.blip`; `apart`:
    BenchmarkId -> runs.Allowance; `same_code`: base's sha when both commits hold identical measured code."""
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    b = base.by_id() if base is not None else {}
    h = head.by_id() if head is not None else {}
    cores = stats.cores_of((base, head))
    machine = machine_of(base, head)
    verdicts = [
        _pair(bid, b.get(bid), h.get(bid), base, head, threshold, cores, apart, same_code, machine)
        for bid in {**b, **h}
        if only is None or bid in only
    ]
    if same_code:
        return sorted(verdicts, key=order_key)
    machine = context.machine_shift(base, head, threshold=threshold)
    if machine is not None:
        verdicts = [context.machine_not_commit(v, machine, threshold) for v in verdicts]
    if base is not None and head is not None and (before is not None or after is not None):
        found = _found(base, head, before, after)
        verdicts = [context.blip(v, base, head, before, after, threshold, cores, apart, found) for v in verdicts]
    return sorted(verdicts, key=order_key)


def _found(*results: CommitResult | None):
    """(result, id) -> its benchmark of that id, each of `results` indexed once (`context.blip`'s `found`)."""
    index = {id(r): (r, r.by_id()) for r in results if r is not None}  # the result kept: its id stays its own
    return lambda r, bid: (index[id(r)][1] if id(r) in index else r.by_id()).get(bid)


def with_neighbours(
    verdicts: list[Verdict],
    base: CommitResult,
    head: CommitResult,
    before: CommitResult | None,
    after: CommitResult | None,
    *,
    threshold: float,
    apart=None,
) -> list[Verdict]:
    """What `compare(base, head, before=before, after=after, apart=apart)` gives, from `compare(base, head,
    apart=apart)`'s verdicts: only the blip rule is added, so no benchmark is judged twice."""
    if before is None and after is None:
        return verdicts
    cores = stats.cores_of((base, head))
    found = _found(base, head, before, after)
    return sorted(
        (context.blip(v, base, head, before, after, threshold, cores, apart, found) for v in verdicts), key=order_key
    )


def judge_one(
    base: CommitResult, head: CommitResult, bid: BenchmarkId, *, threshold: float = 0.05, apart=None
) -> Verdict:
    """`compare`'s verdict for one benchmark, with the same rules (the machine's included)."""
    cores = stats.cores_of((base, head))
    b, h = base.by_id().get(bid), head.by_id().get(bid)
    v = _pair(bid, b, h, base, head, threshold, cores, apart, machine=machine_of(base, head))
    machine = context.machine_shift(base, head, threshold=threshold)
    return v if machine is None else context.machine_not_commit(v, machine, threshold)
