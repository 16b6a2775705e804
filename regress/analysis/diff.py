"""Every benchmark of two commits paired and judged: regression, improvement,
unchanged, noisy, new, missing, failed. Pure: CommitResults in, Verdicts out.

`judge` decides one benchmark from its rounds; `context` applies what the
neighbouring commits and the reference workload say.
"""

from __future__ import annotations

from dataclasses import replace

from regress.analysis import context, runs, stats
from regress.analysis.counts import COUNT_THRESHOLD, compare_counts, judge_counts  # noqa: F401 - re-exported
from regress.analysis.judge import MIN_ESTIMATE_SHARE, iqr, judge  # noqa: F401 - re-exported
from regress.analysis.verdict import Verdict, any_regression, order_key  # noqa: F401 - re-exported
from regress.core.kinds import FailureKind, Kind
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult, Failure


def _commit_failure_for(result: BenchmarkResult, commit: CommitResult) -> Failure | None:
    """The commit-wide failure (build, suite file) that explains a benchmark's absence."""
    origin_file = result.origin.split(":", 1)[0]
    for f in commit.failures:
        if f.kind in (FailureKind.BUILD, FailureKind.CHECKOUT):
            return f
        if f.kind == FailureKind.SUITE and origin_file and f.where.split(":", 1)[0] == origin_file:
            return f
    return None


def _only(r: BenchmarkResult, verdict: str, reason: str, side: str) -> Verdict:
    values = stats.round_values(r) if r.ok else ()
    level = stats.level(values) if values else None
    return Verdict(
        id=r.id,
        verdict=verdict,
        base_level=level if side == "base" else None,
        head_level=level if side == "head" else None,
        base_iqr=iqr(values) if side == "base" else None,
        head_iqr=iqr(values) if side == "head" else None,
        ratio=None,
        p_value=None,
        reason=reason,
        base_rounds=len(values) if side == "base" else 0,
        head_rounds=len(values) if side == "head" else 0,
    )


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
) -> Verdict:
    if h is not None and h.failure is not None:
        # A skip (say, a CUDA benchmark on a machine without a GPU) is not a failure.
        verdict = "missing" if h.failure.kind == FailureKind.SKIPPED else "failed"
        reason = f"{'skipped' if verdict == 'missing' else 'failed'} at head: {h.failure}"
        if b is None or not b.ok:
            return Verdict(bid, verdict, None, None, None, None, None, None, reason)
        return replace(_only(b, verdict, "", "base"), reason=reason)
    if h is None or not h.samples:
        if b is None or not b.ok:
            why = f"failed at base: {b.failure}" if b is not None and b.failure else "no samples at either commit"
            return Verdict(bid, Kind.MISSING, None, None, None, None, None, None, why)
        if head is None:
            return _only(b, Kind.MISSING, "head was not measured", "base")
        failure = _commit_failure_for(b, head)
        if failure is not None:
            return _only(b, Kind.FAILED, f"failed at head: {failure}", "base")
        if not head.complete:
            why = "not measured at head: that run was interrupted; `regress run --skip-existing` measures the rest"
        elif head.settings.bench_filter:
            why = f"not measured at head (--bench {head.settings.bench_filter!r} left it out)"
        else:
            why = "not measured at head: the benchmark no longer exists there"
        return _only(b, Kind.MISSING, why, "base")
    if b is None or not b.ok:
        if b is not None and b.failure is not None:
            why = f"failed at base ({b.failure}); measured at head"
        elif base is None:
            why = "base was not measured"
        else:
            why = "not measured at base"
        return _only(h, Kind.NEW, why, "head")
    v = runs.judge_together(b, h, threshold=threshold, cores=cores, apart=apart)
    if same_code and v.verdict != Kind.UNCHANGED:
        return replace(v, verdict=Kind.UNCHANGED, reason=_same(same_code, v), rounds_needed=None)
    return replace(v, reason=_same(same_code, v)) if same_code else v


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
) -> list[Verdict]:
    """Every benchmark of either commit, grouped by label then threads, worst first.

    `before` / `after`: the measured commits next to base and head in the
    history, when there are any: a move that only one odd commit makes,
    between neighbours that agree, is a blip (`context.blip`), not a verdict.
    `apart`: BenchmarkId -> runs.Allowance, the shift between separate runs
    the history shows (for benchmarks no run measured at both commits).
    `same_code`: base's sha when both commits hold identical measured code.
    """
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    b = base.by_id() if base is not None else {}
    h = head.by_id() if head is not None else {}
    known = [c.fingerprint.cores for c in (base, head) if c is not None and c.fingerprint.cores]
    cores = min(known) if known else 0
    verdicts = [
        _pair(bid, b.get(bid), h.get(bid), base, head, threshold, cores, apart, same_code) for bid in {**b, **h}
    ]
    if same_code:
        return sorted(verdicts, key=order_key)
    machine = context.machine_shift(base, head, threshold=threshold)
    if machine is not None:
        verdicts = [context.machine_not_commit(v, machine, threshold) for v in verdicts]
    if base is not None and head is not None and (before is not None or after is not None):
        verdicts = [context.blip(v, base, head, before, after, threshold, cores, apart) for v in verdicts]
    return sorted(verdicts, key=order_key)


def judge_one(
    base: CommitResult, head: CommitResult, bid: BenchmarkId, *, threshold: float = 0.05, apart=None
) -> Verdict:
    """`compare`'s verdict for one benchmark, with the same rules (the machine's included)."""
    known = [c.fingerprint.cores for c in (base, head) if c.fingerprint.cores]
    cores = min(known) if known else 0
    v = _pair(bid, base.by_id().get(bid), head.by_id().get(bid), base, head, threshold, cores, apart)
    machine = context.machine_shift(base, head, threshold=threshold)
    return v if machine is None else context.machine_not_commit(v, machine, threshold)
