"""The `regress bisect` that settles a step: how `regressions` and the regression issues name it."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from regress.core.records import CommitInfo

if TYPE_CHECKING:  # annotations only: `compare` imports this and needs no change points (scipy)
    from regress.analysis.changepoints import Step


def bisect_hint(s: Step, gap: tuple | None, commits: dict[str, CommitInfo]) -> list[str]:
    """For a step whose commit follows unmeasured ones: how many, and the bisect that settles it.

    `gap`: (the measured commit before, how many commits between[, the paths they were counted by]).
    """
    if gap is None or gap[1] <= 0:
        return []
    paths = gap[2] if len(gap) > 2 else ()
    prev, c = commits[gap[0]], commits[s.sha]
    return [
        f"    between {prev.short} and {c.short}, {gap[1]} commit{'s' if gap[1] != 1 else ''} not measured: "
        + bisect_command(prev, c, [s.id], paths)
    ]


def bisect_command(good: CommitInfo, bad: CommitInfo, ids: list, paths: tuple[str, ...] = ()) -> str:
    """The `regress bisect` that finds where these benchmarks moved between two measured commits."""
    names = [re.escape(str(i)) for i in ids]
    bench = "^" + (names[0] if len(names) == 1 else "(" + "|".join(names) + ")") + "$"
    limited = " -- " + " ".join(shlex.quote(p) for p in paths) if paths else ""
    return f"regress bisect {good.short} {bad.short} --bench {shlex.quote(bench)}{limited}"
