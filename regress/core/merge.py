"""Putting together results of one commit that were measured in different places.

CI shards, a concurrent job's push to the results branch, a laptop's folder:
each may hold a file for the same commit, machine and environment. Combining
them must keep every measurement exactly once and must never blend different
things under one name. The rules:

- different benchmarks of a commit: all kept (that is what shards produce);
- one benchmark with the same task spec on both sides: every round of both
  kept; a round both sides hold (the very same samples, e.g. restored from the
  results branch and pushed back) counts once;
- **conflicts**, refused:
  - one benchmark identity with different task specs (different code measured
    under one name: no series can hold both), and
  - a different torch build or Python version under one environment name
    (environments are never mixed; `--env` keeps them apart).
  The side merged *into* keeps its own version; the other side's file is not
  changed, so nothing measured is lost, and the conflict is reported.

Failure state is the later run's (a skip changes nothing); the result is
complete if either side is.

A new run of a commit on this machine (`Store.save`) goes through the same
rules with `latest=True`: the new run is what this machine measures now, so
where the two conflict (the benchmark's code was edited, torch was upgraded
under the same env name) the new run replaces the stored part instead of
being refused, and every such replacement is returned for the user to see.
The WORKTREE, re-measured from scratch each time, is not merged at all.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from regress.core.kinds import FailureKind
from regress.core.records import BenchmarkResult, CommitResult, Fingerprint


@dataclass(frozen=True)
class Conflict:
    """A duplicate that was refused: what, for which commit, and why."""

    machine: str
    env: str
    sha: str
    what: str  # the benchmark identity, or "build"
    why: str

    def __str__(self) -> str:
        return f"{self.machine}/{self.env}/{self.sha[:10]}: {self.what}: {self.why}"


def _build(fp: Fingerprint) -> tuple[str, str, str]:
    return (fp.torch_version, fp.torch_git, fp.python)


def _build_conflict(a: Fingerprint, b: Fingerprint) -> str | None:
    """Why two fingerprints can't share an environment name, or None.

    An empty field is unknown (a commit whose build failed never started a
    worker), never a conflict.
    """
    names = ("torch", "torch git", "python")
    for name, x, y in zip(names, _build(a), _build(b)):
        if x and y and x != y:
            return f"{name} {x} here, {y} there; measure different builds under different --env names"
    return None


def _union(mine: tuple, theirs: tuple) -> tuple:
    return mine + tuple(x for x in theirs if x not in mine)


def _one(
    mine: BenchmarkResult, theirs: BenchmarkResult, theirs_later: bool, *, new_run: bool = False
) -> BenchmarkResult:
    failure = mine.failure
    if theirs_later and not (theirs.failure is not None and theirs.failure.kind == FailureKind.SKIPPED):
        failure = theirs.failure
    if mine.failure is not None and mine.failure.kind == FailureKind.SKIPPED and theirs.failure is None:
        failure = None  # skipped here, measured there: the measurement stands
    # A new run's rounds are new measurements, however alike; a copy from
    # elsewhere may hold rounds this side already has.
    join = (lambda a, b: a + b) if new_run else _union
    return replace(
        mine,
        samples=join(mine.samples, theirs.samples),
        counts=join(mine.counts, theirs.counts),
        memory=join(mine.memory, theirs.memory),
        compiled=join(mine.compiled, theirs.compiled),
        tracked=join(mine.tracked, theirs.tracked),
        failure=failure,
    )


def _rounds(r: BenchmarkResult) -> str:
    n = len(r.samples) + len(r.counts) + len(r.tracked)
    return f"{n} stored round{'s' if n != 1 else ''}"


def combine(
    into: CommitResult, other: CommitResult, *, latest: bool = False
) -> tuple[CommitResult, tuple[Conflict, ...]]:
    """`into` with everything of `other` it lacks.

    Conflicting parts of `other` are refused, or with `latest` (`other` is a
    new run here) replace `into`'s; either way each is returned as a Conflict.
    """
    if (into.commit.sha, into.machine, into.env) != (other.commit.sha, other.machine, other.env):
        raise ValueError("combine() takes results of one commit, machine and environment")

    def conflict(what: str, why: str) -> Conflict:
        return Conflict(into.machine, into.env, into.commit.sha, what, why)

    why = _build_conflict(into.fingerprint, other.fingerprint)
    if why is not None:
        if not latest:
            return into, (conflict("build", why),)
        n = sum(len(r.samples) + len(r.counts) + len(r.tracked) for r in into.results)
        return other, (
            conflict("build", f"{why.split(';')[0]}: the new run replaced {n} stored rounds of the old build"),
        )
    theirs_later = latest or (other.finished_at or other.started_at) > (into.finished_at or into.started_at)
    merged = into.by_id()
    conflicts: list[Conflict] = []
    for res in other.results:
        mine = merged.get(res.id)
        if mine is None:
            merged[res.id] = res
        elif mine.spec != res.spec:
            if latest:
                merged[res.id] = res
                conflicts.append(
                    conflict(str(res.id), f"its definition changed; the new one replaced {_rounds(mine)} of the old")
                )
            else:
                why = f"different benchmark code under one name ({mine.origin} here, {res.origin} there)"
                conflicts.append(conflict(str(res.id), why))
        else:
            merged[res.id] = _one(mine, res, theirs_later, new_run=latest)
    starts = [t for t in (into.started_at, other.started_at) if t]
    newer = other if latest else into
    result = replace(
        newer,
        fingerprint=newer.fingerprint if newer.fingerprint.torch_version else (into if latest else other).fingerprint,
        results=tuple(merged.values()),
        failures=other.failures if latest else _union(into.failures, other.failures),
        reference=_union(into.reference, other.reference),
        runs=_union(into.runs, tuple(r for r in other.runs if r.id not in {m.id for m in into.runs})),
        complete=into.complete or other.complete,
        started_at=min(starts) if starts else 0.0,
        finished_at=max(into.finished_at, other.finished_at),
    )
    return result, tuple(conflicts)
