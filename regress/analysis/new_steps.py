"""Which regressions a commit's results newly bring to light, grouped by the commit they start at.

`regress regressions` only confirms a step once commits after it agree, so
the step a push reveals usually starts a few commits back. "Newly found" is
literal: the regression steps `changepoints.find_steps` finds in the history
up to the pushed commit, less those it found without that commit's results.
A step that merely moved by a commit or two as results arrived is the same
step. Pure: a history in, culprits out.
"""

from __future__ import annotations

from dataclasses import dataclass

from regress.analysis import changepoints
from regress.analysis.changepoints import Step
from regress.core.errors import RegressError
from regress.core.kinds import Kind
from regress.core.records import CommitInfo, CommitResult

# A step found again this many history positions away from where it was is the same step.
MOVED = 2


@dataclass(frozen=True)
class Culprit:
    """A commit that made benchmarks slower, as the history shows it."""

    commit: CommitInfo  # the first measured commit at the new level
    previous: CommitInfo | None  # the measured commit before it
    steps: tuple[Step, ...]

    @property
    def worst(self) -> float:
        return max(s.ratio for s in self.steps)


def newly_found(history: list[CommitResult], sha: str, *, threshold: float) -> list[Step]:
    """Regression steps found with `sha`'s results and not without them (`history` oldest first)."""
    shas = [c.commit.sha for c in history]
    if sha not in shas:
        raise RegressError(
            f"{sha[:10]} has no results in this history; notify after its results are saved "
            "(`regress run`, or `regress results pull` in CI)"
        )
    at = shas.index(sha)

    def regressions(part: list[CommitResult]) -> list[Step]:
        return [s for s in changepoints.find_steps(part, threshold=threshold) if s.direction == Kind.REGRESSION]

    before = regressions(history[:at])
    return [
        s
        for s in regressions(history[: at + 1])
        if not any(b.id == s.id and abs(b.index - s.index) <= MOVED for b in before)
    ]


def by_culprit(steps: list[Step], history: list[CommitResult]) -> list[Culprit]:
    """The steps grouped by their first commit, oldest commit first, worst step first in each."""
    groups: dict[str, list[Step]] = {}
    for s in sorted(steps, key=lambda s: (s.index, -s.ratio, s.id)):
        groups.setdefault(s.sha, []).append(s)
    out = []
    for _sha, group in groups.items():
        i = group[0].index
        out.append(Culprit(history[i].commit, history[i - 1].commit if i > 0 else None, tuple(group)))
    return out
