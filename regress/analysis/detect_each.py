"""What each benchmark of one commit can detect: `detectable.of` for every timed benchmark it measured, from its
rounds (pooled with the commit before where too few), the history's noise and its allowances. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regress.analysis import detectable, segments, stats, trusted_levels
from regress.analysis.detectable import Detectable
from regress.core.records import BenchmarkId, BenchmarkResult, CommitResult

# A series needs this many levels before its commit-to-commit noise says anything (segments.history_scale).
FEWEST_LEVELS = 3


@dataclass(frozen=True)
class Seen:
    """One benchmark's figures at a commit, or why there are none."""

    id: BenchmarkId
    rounds: int  # the commit's own rounds of it
    found: Detectable | None  # None: too few rounds to tell
    pooled: bool = False  # read from this commit's rounds and the commit's before it
    threads: int = 1
    cores: int = 0

    @property
    def advice(self) -> str:
        """What would let it catch the threshold ("" where it can, or nothing is known)."""
        return "" if self.found is None else self.found.advice(self.threads, self.cores)

    @property
    def rounds_for_threshold(self) -> int | None:
        """Rounds a side that catch a change of the threshold: the plan's minimum where it already can,
        None where no number of rounds can (or nothing is known)."""
        if self.found is None:
            return None
        return self.found.rounds if self.found.reaches else self.found.more

    def too_few(self) -> str:
        """Why there is no figure: "too few rounds to tell (4 in runs of 2 or more; 6 needed)"."""
        need = 2 * stats.FEWEST_ROUNDS_TO_JUDGE
        return f"too few rounds to tell ({self.rounds} here; {need} in runs of 2 or more are needed)"


# The memo's kind for a history's commit-to-commit noise per benchmark (`noise_of`).
NOISE = "history noise"


def noise_of(table, *, threshold: float, code: dict[str, str], levels=None) -> dict[BenchmarkId, float]:
    """Each benchmark's commit-to-commit noise (`history_noise`) of the trusted levels the change points segment
    (`trusted_levels.series`, or `levels`, where the caller has them)."""
    found = levels if levels is not None else trusted_levels.series(table, threshold=threshold, code=code)
    return history_noise({bid: values for bid, (_, values) in found.items()})


def kept_noise(memo, inputs: str | None, table, *, threshold: float, code: dict[str, str], levels=None):
    """`noise_of`, kept in `memo` (a `storage.memo.Memo`) under `inputs` (the digest of the history's files, the
    threshold and the code identities)."""
    return memo.get(
        NOISE,
        inputs,
        lambda: noise_of(table, threshold=threshold, code=code, levels=None if levels is None else levels()),
        noise_tree,
        noise_from_tree,
    )


def noise_tree(noise: dict[BenchmarkId, float]) -> dict:
    """`noise_of`'s value as the memo keeps it."""
    ids = [[b.label, b.sub_label, b.description, b.num_threads] for b in noise]
    return {"ids": ids, "noise": np.asarray(list(noise.values()), dtype=float)}


def noise_from_tree(tree: dict) -> dict[BenchmarkId, float]:
    return {BenchmarkId(*bid): float(v) for bid, v in zip(tree["ids"], tree["noise"].tolist(), strict=True)}


def history_noise(levels: Mapping[BenchmarkId, Sequence[float]]) -> dict[BenchmarkId, float]:
    """Each series' commit-to-commit noise (log; `segments.history_scale`), from its levels oldest first;
    left out where the series is too short to tell."""
    out = {}
    for bid, values in levels.items():
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v) & (v > 0)]
        if len(v) >= FEWEST_LEVELS:
            out[bid] = segments.history_scale(np.log(v))
    return out


def shares_a_run(table, position: int) -> bool:
    """Whether a run that measured the commit at `position` of a figures table measured another commit too."""
    here = table.run_pos == position
    mine = np.unique(table.run[here])
    return bool(len(mine)) and bool(np.isin(mine, table.run[~here]).any())


def each(
    result: CommitResult,
    *,
    threshold: float,
    rounds: int,
    most_rounds: int,
    before: CommitResult | None = None,
    history: Mapping[BenchmarkId, float] | None = None,
    apart: Callable | None = None,
    across_runs: bool = False,
) -> list[Seen]:
    """Every timed benchmark `result` measured, in its order. `before`: the commit measured before it (its
    rounds pooled where this one's alone are too few); `history`: `history_noise`; `apart`: BenchmarkId ->
    `runs.Allowance` (its `sigma` for the history's steps when `across_runs`)."""
    cores = result.fingerprint.cores
    earlier = before.by_id() if before is not None else {}
    out = []
    for r in result.results:
        if not _timed(r):
            continue
        bid = r.id
        noise, pooled = detectable.noise_of(r), False
        other = earlier.get(bid)
        if noise is None and other is not None and _timed(other):
            noise, pooled = detectable.noise_of(r, other), True
        found = None
        if noise is not None:
            given = apart(bid) if apart is not None else None
            found = detectable.of(
                noise,
                threshold=threshold,
                rounds=rounds,
                most_rounds=most_rounds,
                threads=bid.num_threads,
                cores=cores,
                history_noise=(history or {}).get(bid),
                apart=given.sigma if given is not None and across_runs else None,
                within=given.within if given is not None else None,
            )
        out.append(Seen(bid, len(r.samples), found, pooled and found is not None, bid.num_threads, cores))
    return out


def _timed(r: BenchmarkResult) -> bool:
    return r.ok and not r.is_tracked
