"""What a benchmark can detect: the smallest change its own noise lets a verdict catch, and the rounds a smaller
one takes. Pure; docs/statistics.md ("What each benchmark can detect").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regress.analysis import modes, stats
from regress.analysis.levels import PENALTY, history_scale, trusted
from regress.analysis.table import kept_id
from regress.core.records import BenchmarkId, CommitResult

Z_POWER = 1.2815515655446004  # scipy.special.ndtri(0.9): a verdict catches 0.9 of changes of the size (0.8 in fact)
MOST_ROUNDS = 40  # the most rounds a side is ever asked for (`compare --measure`'s cap)
HELD = 3  # a step the segmentation places holds its level this many commits either side (changepoints.TAIL)


def _order_stats(excess: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    """The exact mean of each order statistic of n draws (with replacement) from `excess`, smallest first, and
    the variance of the smallest."""
    x = np.sort(np.asarray(excess, dtype=float))
    m = len(x)
    below = np.arange(m) / m  # P(a draw < x_j), j in sorted order (ties broken by position)
    # pmf[j, i] = P(exactly i of the n draws fall below x_j): C(n, i) below^i (1 - below)^(n - i)
    comb = np.array([math.comb(n, i) for i in range(n)], dtype=float)
    pmf = ((1 - below) ** n)[:, None] * comb * (below / (1 - below))[:, None] ** np.arange(n)
    at_least = np.cumsum(pmf, axis=1)  # [j, k-1]: P(k-th smallest >= x_j)
    weights = at_least - np.vstack([at_least[1:], np.zeros((1, n))])
    means = x @ weights
    first = weights[:, 0]
    return means, float(max(np.dot(first, (x - means[0]) ** 2), 0.0))


@dataclass(frozen=True)
class Noise:
    """What a benchmark's rounds say of its noise: each round's excess over its floor (log), pooled."""

    excess: tuple[float, ...]  # the fast mode's rounds, where there are modes: a floor is read from them
    every: tuple[float, ...] = ()  # every round's, the slow mode's included (`slow_mode`)

    @classmethod
    def of(cls, groups: Sequence[Sequence[float]]) -> Noise | None:
        """From round values grouped by commit and run (groups of one round tell nothing); None when none do."""
        pool = modes.relative(groups)
        if len(pool) < 2 * stats.FEWEST_ROUNDS_TO_JUDGE:
            return None
        seen = modes.detect(pool)
        fast = pool[pool < seen.split] if seen is not None else pool
        return cls(tuple(float(v) for v in fast), tuple(float(v) for v in pool))

    def slow_mode(self, rounds: int) -> float:
        """The smallest change (log) whose slower side's `rounds` can't all have landed that high by luck (`modes.luck`)."""
        x = np.sort(np.asarray(self.every or self.excess, dtype=float))[::-1]
        m, n = len(x), max(int(rounds), 1)
        # The most rounds of m that may land that high: ((k + PRIOR) / (m + 2 PRIOR))^n < ALPHA.
        k = math.floor((m + 2 * modes.PRIOR) * modes.ALPHA ** (1 / n) - modes.PRIOR - 1e-12)
        if k >= m:
            return 0.0
        return float(x[max(k, 0)]) / modes.SHRINK

    def detectable(self, rounds: int, drift: float) -> float:
        """The smallest change (log) caught 0.9 of the time with `rounds` a side and this allowance."""
        x = np.asarray(self.excess, dtype=float)
        n = max(int(rounds), stats.FEWEST_ROUNDS_TO_JUDGE)
        # A typical side of n rounds (each order statistic at its mean), judged against itself.
        means, floor_var = _order_stats(x, n)
        typical = np.exp(means)
        s = stats.shift(typical, typical, drift=drift)
        interval = max(math.log(s.high), -math.log(s.low))
        difference = math.sqrt(2 * floor_var + drift**2)
        return max(
            interval + Z_POWER * difference,
            Z_POWER * difference / (1 - stats.MIN_ESTIMATE_SHARE),
            self.slow_mode(n),
        )

    def rounds_for(self, change: float, drift: float) -> int | None:
        """The fewest rounds a side that detect a `change` (a fraction: 0.05), None where no number does."""
        target = math.log1p(change)
        if self.detectable(MOST_ROUNDS, drift) > target:
            return None
        lo, hi = stats.FEWEST_ROUNDS_TO_JUDGE, MOST_ROUNDS
        if self.detectable(lo, drift) <= target:
            return lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.detectable(mid, drift) > target else (lo, mid)
        return hi


@dataclass(frozen=True)
class Detectable:
    """A benchmark's smallest detectable change (fractions: 0.031 is 3.1%) where verdicts are made."""

    rounds: int  # a side's rounds the first two figures assume (the plan's minimum)
    paired: float  # a paired push, or a pull-request check: both sides in one run
    more: int | None  # rounds a side that detect the threshold, when `paired` is above it (None: none do)
    most: float  # the same with the plan's most rounds
    most_rounds: int
    history: float | None  # a step in the history (None: no series to tell)
    threshold: float

    @property
    def reaches(self) -> bool:
        """The threshold is within reach of a paired verdict at the plan's minimum rounds."""
        return self.paired <= self.threshold + 1e-12

    def short(self) -> str:
        """One line: "detects 3.1% in a paired push at 5 rounds (2.0% at 15); 4.2% in the history"."""
        text = f"detects {_pct(self.paired)} in a paired push at {self.rounds} rounds"
        if self.most < self.paired - 5e-4:
            text += f" ({_pct(self.most)} at {self.most_rounds})"
        if self.history is not None:
            text += f"; {_pct(self.history)} in the history"
        return text

    def advice(self, threads: int = 1, cores: int = 0) -> str:
        """What would let it catch the threshold, when it can't at the minimum rounds ("" when it can)."""
        if self.reaches:
            return ""
        t = f"{self.threshold * 100:g}%"
        if self.more is not None:
            return f"a {t} change needs {self.more} rounds a side (`--min-rounds {self.more}`)"
        helps = []
        if threads > 1:
            helps.append("fewer threads" + (f" (it uses {threads} of {cores} cores)" if cores else ""))
        helps += ["a larger input (more work a call)", "instruction counts (`--mode instructions`)"]
        return f"no number of rounds catches a {t} change here; what would help: {', '.join(helps)}"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def of(
    noise: Noise,
    *,
    threshold: float,
    rounds: int,
    most_rounds: int,
    threads: int = 1,
    cores: int = 0,
    history_noise: float | None = None,
    apart: float | None = None,
    within: float | None = None,
) -> Detectable:
    """The three figures for one benchmark. `history_noise`: its series' commit-to-commit noise (log); `apart`,
    `within`: `diff.Allowance.sigma` (where the history's steps are judged across runs) and `.within`."""
    within = max(within or 0.0, stats.drift_for(threads, cores))
    paired = math.expm1(noise.detectable(rounds, within))
    most = math.expm1(noise.detectable(most_rounds, within))
    more = None if paired <= threshold else noise.rounds_for(threshold, within)
    history = None
    if history_noise is not None:
        # A step held HELD commits either side beats the penalty, and compare across it agrees.
        seen = math.sqrt(2 * PENALTY / HELD) * history_noise
        across = noise.detectable(rounds, within if apart is None else max(apart, within))
        history = math.expm1(max(seen, across))
    return Detectable(rounds, paired, more, most, most_rounds, history, threshold)


def noise_of(*results) -> Noise | None:
    """`Noise.of` a few BenchmarkResults' rounds, grouped by run (a verdict's two sides, say)."""
    return Noise.of([g for r in results if r is not None for g in stats.by_run(r).values()])


FEWEST_LEVELS = 3  # a series' levels before its commit-to-commit noise says anything


@dataclass(frozen=True)
class Seen:
    """One benchmark's figures at a commit, or why there are none."""

    id: BenchmarkId
    rounds: int  # the commit's own rounds of it
    found: Detectable | None  # None: too few rounds to tell
    pooled: bool = False  # read from this commit's rounds and the commit's before it
    cores: int = 0

    @property
    def advice(self) -> str:
        """What would let it catch the threshold ("" where it can, or nothing is known)."""
        return "" if self.found is None else self.found.advice(self.id.num_threads, self.cores)

    @property
    def rounds_for_threshold(self) -> int | None:
        """Rounds a side that catch a change of the threshold (the plan's minimum where it can; None: none can)."""
        if self.found is None:
            return None
        return self.found.rounds if self.found.reaches else self.found.more

    def too_few(self) -> str:
        """Why there is no figure: "too few rounds to tell (4 here; 6 in runs of 2 or more are needed)"."""
        need = 2 * stats.FEWEST_ROUNDS_TO_JUDGE
        return f"too few rounds to tell ({self.rounds} here; {need} in runs of 2 or more are needed)"


NOISE = "history noise"  # the memo's kind for `kept_noise`


def kept_noise(memo, inputs: str | None, table, *, threshold: float, code: dict[str, str], levels=None):
    """`history_noise` of the trusted levels the change points segment (`levels.trusted`, or `levels()`), kept in
    `memo` under `inputs` (the digest of the history's files, threshold and code)."""

    def noise() -> dict[BenchmarkId, float]:
        found = levels() if levels is not None else trusted(table, threshold=threshold, code=code)
        return history_noise({bid: values for bid, (_, values) in found.items()})

    return memo.get(
        NOISE,
        inputs,
        noise,
        lambda noise: list(noise.items()),
        lambda tree: {kept_id(b): float(v) for b, v in tree},
    )


def history_noise(levels: Mapping[BenchmarkId, Sequence[float]]) -> dict[BenchmarkId, float]:
    """Each series' commit-to-commit noise (log; `history_scale`) from its levels, if long enough."""
    out = {}
    for bid, values in levels.items():
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v) & (v > 0)]
        if len(v) >= FEWEST_LEVELS:
            out[bid] = history_scale(np.log(v))
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
    """Every timed benchmark of `result`, in its order. `before`: the commit before it (pooled where this one's
    rounds are too few); `history`: `history_noise`; `apart`: BenchmarkId -> `diff.Allowance`."""
    cores = result.fingerprint.cores
    earlier = before.by_id() if before is not None else {}
    out = []
    for r in result.results:
        if not r.ok or r.is_tracked:
            continue
        bid = r.id
        noise, pooled = noise_of(r), False
        other = earlier.get(bid)
        if noise is None and other is not None and other.ok and not other.is_tracked:
            noise, pooled = noise_of(r, other), True
        found = None
        if noise is not None:
            given = apart(bid) if apart is not None else None
            found = of(
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
        out.append(Seen(bid, len(r.samples), found, pooled and found is not None, cores))
    return out
