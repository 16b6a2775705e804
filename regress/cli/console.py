"""Where the command line writes what is not its answer."""

from __future__ import annotations

import sys

from regress.core.reporter import Reporter


def err(line: str) -> None:
    print(line, file=sys.stderr)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class RoundLines(Reporter):
    """A line on stderr per round of a topped-up comparison or a bisect, and each note."""

    most = 0

    def say(self, line: str) -> None:
        err(line)

    def rounds_planned(self, most: int) -> None:
        self.most = most

    def round_started(self, k, i, n, info, left) -> None:
        err(f"round {k}/{self.most}: {info.short} {info.subject[:60]}")


def refused(conflicts, done: str) -> int:
    """List the duplicates a merge refused, and fail with one line saying what to do."""
    from regress.core.errors import RegressError

    if not conflicts:
        return 0
    for c in conflicts:
        err(f"  conflict: {c}")
    raise RegressError(
        f"{plural(len(conflicts), 'conflicting duplicate')} refused (listed above), {done}; "
        "measure different builds under different --env names, and give changed benchmarks new names"
    )


def skipped_files(store) -> None:
    """Say which result files a history load refused (it went on without them)."""
    for line in store.refused:
        err(f"regress: warning: skipped {line}")
