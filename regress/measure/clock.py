"""How long a `regress run` still has to go: the round plan's rounds, priced at the pace so far.

The plan gives every benchmark `min_rounds`, and one whose rounds disagree
more, one round at a time, up to `max_rounds` while its commit has spent
less than `budget` seconds. Counting only the minimum (the first estimate)
read half the truth on a shared machine, where most commits take extra
rounds. So for each benchmark still measuring, the chance it takes another
round at each length is read off every benchmark of the range so far (of
those that reached the length, the share that went on), drawn toward a prior
by PSEUDO benchmarks' worth: at the minimum most settle
(SETTLE_CONTINUE), and one that went on is likely to keep going (CONTINUE).
A commit takes a round while any of its benchmarks does, and stops taking
extra ones at its budget (after the round that crosses it).

A round costs a fixed part (the fork, the suites' import) plus a part per
benchmark in it, fitted on every commit's rounds and seconds so far; while
every round has been a full one the two can't be told apart, and the fixed
part is taken as ROUND_FLOOR of a round. `scripts/eval_clock.py` measures
how close this comes on a real range (figures in docs/statistics.md). Pure.
"""

from __future__ import annotations

import numpy as np

from regress.measure import adaptive

# Priors (tuned on scripts/eval_clock.py's recorded runs): the chance a benchmark at
# `min_rounds` takes another round, and one already past it; and their weight in benchmarks.
SETTLE_CONTINUE = 0.4
CONTINUE = 0.9
PSEUDO = 4.0
# The fixed part of a round's cost, as a share of a full round, until the rounds tell.
ROUND_FLOOR = 0.25


def _live(t) -> list[tuple[object, list[float]]]:
    return [(k, v) for k, v in t.values.items() if k not in t.final]


def _costs(targets) -> tuple[float, float]:
    """(fixed seconds a round, seconds a benchmark in it), fitted on every commit's rounds so far."""
    started = [t for t in targets if t.rounds]
    rounds = np.array([t.rounds for t in started], dtype=float)
    benches = np.array([sum(len(v) for _, v in _live(t)) or t.rounds for t in started], dtype=float)
    spent = np.array([t.spent for t in started], dtype=float)
    per = benches / rounds
    if per.max() > 1.05 * per.min():  # some commits took partial rounds: the two parts show
        (fixed, each), *_ = np.linalg.lstsq(np.stack([rounds, benches], axis=1), spent, rcond=None)
        if each > 0:
            if fixed < 0:  # no fixed part to speak of
                return 0.0, float(spent.sum() / benches.sum())
            return float(fixed), float(each)
    full = spent.sum() / rounds.sum()
    return ROUND_FLOOR * full, (1 - ROUND_FLOOR) * full / max(float(np.median(per)), 1.0)


def _going_on(targets, budget: adaptive.Budget) -> list[float]:
    """[i]: the chance a benchmark at i rounds takes another (1 below `min_rounds`), from the range so far."""
    went = np.zeros(budget.max_rounds + 1)
    stopped = np.zeros(budget.max_rounds + 1)
    for t in targets:
        for k, v in _live(t):
            n = min(len(v), budget.max_rounds)
            went[:n] += 1
            if n >= budget.min_rounds:
                if t._wants(k, v, budget):
                    went[n] += 1  # it wants the next round: it goes on from here
                else:
                    stopped[n] += 1
    # Each length's share, drawn toward CONTINUE by PSEUDO benchmarks' worth, so a few don't decide it.
    seen = went[budget.min_rounds : budget.max_rounds] + stopped[budget.min_rounds : budget.max_rounds]
    prior = np.full(len(seen), CONTINUE)
    prior[:1] = SETTLE_CONTINUE
    share = (went[budget.min_rounds : budget.max_rounds] + prior * PSEUDO) / (seen + PSEUDO)
    return [1.0] * budget.min_rounds + share.tolist()


def time_left(targets, budget: adaptive.Budget) -> float | None:
    """Seconds of measuring left, or None before any round finished."""
    if not any(t.rounds for t in targets):
        return None
    fixed, each = _costs(targets)
    chance = _going_on(targets, budget)
    sizes = [len(_live(t)) for t in targets if _live(t)]
    typical = int(np.median(sizes)) if sizes else 1
    left = 0.0
    for t in targets:
        if not t.wants(budget):
            continue
        live = _live(t)
        lengths = [len(v) for k, v in live if len(v) < budget.min_rounds or t._wants(k, v, budget)]
        if not live:  # not measured yet: a commit like the others
            lengths = [0] * typical
        spent = t.spent
        at = np.array(lengths)
        alive = np.ones(len(lengths))  # the chance each benchmark is measured in the next round
        while True:
            measuring = alive * (at < budget.max_rounds)
            if spent >= budget.seconds:
                measuring = measuring * (at < budget.min_rounds)  # past its budget: the minimum only
            if measuring.sum() <= 1e-3:
                break
            cost = (1 - np.prod(1 - measuring)) * fixed + each * measuring.sum()  # a round if any takes one
            left += cost
            spent += cost
            at = at + 1
            alive = measuring * np.array([chance[i] if i < len(chance) else 0.0 for i in at])
    return left
