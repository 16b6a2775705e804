"""Comparisons that measure first: `compare --measure` and the pull-request check.

Apart from `comparison` so that a comparison of stored results never imports
the worker machinery: only these take rounds, through the round engine.
"""

from __future__ import annotations

from regress.analysis import stats
from regress.core.errors import RegressError
from regress.core.reporter import Reporter
from regress.flows import rounds
from regress.flows.comparison import Comparison, Request, Sides, judge, judged, load
from regress.measure import engine
from regress.storage.session import Session


def compare(session: Session, request: Request, reporter: Reporter, *, more_rounds: int | None = None) -> Comparison:
    """`regress compare --measure`: the rounds the noisy verdicts ask for (or `more_rounds`
    of every benchmark), base and head in turn, then the stored comparison."""
    cfg, sides = session.cfg, request.sides
    if sides.base_env != sides.head_env or request.counts:
        raise RegressError(
            "--measure takes wall-time rounds in one environment; measure each side with "
            "`regress run REV --env NAME [--python PATH] [--mode instructions]` instead"
        )
    base, head = load(session, sides)
    if base is None or head is None:
        take, only = more_rounds or stats.RECOMMENDED_ROUNDS, request.bench
    else:
        verdicts = judge(session, sides, base, head, threshold=request.threshold_in(cfg), wanted=request.wanted)
        take, chosen = rounds.plan_more(verdicts, rounds=more_rounds)
        only = rounds.exact_filter(v.id for v in chosen)
    if take:
        rounds.measure_rounds(
            cfg, list(dict.fromkeys((sides.base, sides.head))), rounds=take, bench=only, reporter=reporter
        )
        base, head = load(session, sides)
    else:
        reporter.say("regress: nothing to measure: no verdict is noisy (use --rounds N to take more anyway)")
    return judged(session, request, base, head)


def measured_in_turn(
    session: Session,
    sides: Sides,
    reporter: Reporter,
    *,
    rounds_each: int | None = None,
    threshold: float | None = None,
) -> Comparison:
    """The pull-request check's comparison: both sides topped up by the round
    engine (the adaptive plan, or `rounds_each` more), then judged as compare does."""
    # One run of its own that measures both sides: the verdict is then paired, whatever is stored.
    cfg, run = session.cfg, engine.new_run("check")
    rounds.measure_rounds(cfg, [sides.base, sides.head], rounds=rounds_each, reporter=reporter, run=run)
    request = Request(sides, threshold=cfg.threshold if threshold is None else threshold)
    return judged(session, request, *load(session, sides))
