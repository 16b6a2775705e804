"""What each benchmark can detect at a stored commit (`analysis/detectable.py`), with what the history says.

`regress show` asks it of the commit shown, `regress regressions --format json` of the newest measured
commit. The commit's rounds are the summary's light copy (its file only where there is none); the
history's noise is its trusted levels' (what the change points segment), its allowances compare's
(`comparison.History`), read from the summary's kept figures: no result file of the history decoded.
"""

from __future__ import annotations

from typing import TypedDict

from regress.analysis import detectable
from regress.analysis.detectable import Seen
from regress.core.records import CommitInfo, CommitResult
from regress.flows.comparison import History
from regress.storage import summary
from regress.storage.memo import files_digest
from regress.storage.session import Session

# `at_newest` walks back at most this many commits for one with timed results (a newest whose build failed).
LOOK_BACK = 10


def _results(session: Session, env: str, shas: list[str]) -> dict[str, CommitResult]:
    """The commits' light copies, each file read only where the summary has none."""
    store, machine = session.store, session.cfg.machine_name
    return summary.light_or_file(store, machine, env, shas)


class _Plan(TypedDict):
    """`detectable.each`'s threshold and round plan."""

    threshold: float
    rounds: int
    most_rounds: int


def at_commit(
    session: Session,
    env: str,
    result: CommitResult,
    *,
    threshold: float,
    history: History | None = None,
) -> list[Seen]:
    """Each timed benchmark of `result` (a stored commit of the session's machine, env `env`); `history`:
    that env's, where the caller has it."""
    cfg = session.cfg
    known = history or History(session, env)
    plan: _Plan = {"threshold": threshold, "rounds": cfg.min_rounds, "most_rounds": cfg.max_rounds}
    sha = result.commit.sha
    shas = [c.commit.sha for c in known.listed]
    if sha not in shas:  # not in the history (WORKTREE, say): its own rounds alone
        return detectable.each(result, **plan)
    table = known.table()
    position = next((i for i, c in enumerate(table.history) if c.commit.sha == sha), None)
    if position is None:
        return detectable.each(result, **plan)
    previous = table.history[position - 1].commit.sha if position > 0 else None
    before = _results(session, env, [previous]).get(previous) if previous is not None else None
    code = known.code(shas)
    digests = summary.digests(session.store, cfg.machine_name, env)
    inputs = files_digest(digests, shas, threshold, sorted(code.items()))
    noise = detectable.kept_noise(known.memo, inputs, table, threshold=threshold, code=code)
    return detectable.each(
        result,
        **plan,
        before=before,
        history=noise,
        apart=known.apart(result, result),
        across_runs=not detectable.shares_a_run(table, position),
    )


def at_newest(session: Session, env: str, *, threshold: float) -> tuple[CommitInfo | None, list[Seen]]:
    """The newest measured commit with timed results, and what each of its benchmarks can detect."""
    known = History(session, env)
    shas = [c.commit.sha for c in known.listed][-LOOK_BACK:]
    results = _results(session, env, shas)
    for sha in reversed(shas):
        result = results.get(sha)
        if result is not None and any(r.ok and not r.is_tracked for r in result.results):
            return result.commit, at_commit(session, env, result, threshold=threshold, history=known)
    return None, []
