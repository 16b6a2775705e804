"""How one step of `regress regressions` is written: its own change, and a slide's total apart.

A step reports its own change (what `compare` across it sees) first; a
slide's whole move and its span follow in brackets, so +6.4% at the step is
not read as the climb's +15% (and likewise the move of levels that drift on
either side of a step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regress.core.records import CommitInfo
from regress.core.units import percent

if TYPE_CHECKING:  # annotations only: `compare` imports this and needs no change points (scipy)
    from regress.analysis.changepoints import Step


def note(s: Step, commits: dict[str, CommitInfo]) -> str:
    """For a slide: its whole move and span, "(part of a slide of +15.0% over 5 commits, to abc1234567)";
    for a step whose levels either side drift further than its own change, their move; else ""."""
    if s.span > 1:
        return (
            f" (part of a slide of {percent(s.total or s.ratio)} over {s.span} commits, to {commits[s.end_sha].short})"
        )
    if s.total is not None:
        return f" (the levels before and after it drift: {percent(s.total)} apart in all)"
    return ""


def line(s: Step, commits: dict[str, CommitInfo], fmt) -> str:
    """The step's line: direction, its own change, the levels either side of it, the benchmark."""
    return f"  {s.direction:<11} {percent(s.ratio):>8}  {fmt(s.before)} -> {fmt(s.after)}  {s.id}{note(s, commits)}"
