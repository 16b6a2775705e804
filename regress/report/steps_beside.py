"""The change points' search, beside the rest of a site build: in a forked process, on a second core.

After one new commit a site build spends a third of its time finding the
change points afresh (`changepoints.candidates`: every benchmark's levels
fitted and segmented), and the pages that don't show them (each chart's
points, the label pages' tables, the recent verdicts) need none of it. The
search is pure numpy over the series' table, already in memory, and reads
no file: a forked child (`forked.Forked`) runs it and sends its candidates
back as JSON, while the build goes on; the build judges them (compare across
each, through the kept verdicts) once a page needs the steps. Where there is
no child, or it fails or sends what does not read back, the build runs the
search itself when asked: the same candidates either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from regress.analysis.changepoints import Candidate, Search
from regress.core.records import BenchmarkId
from regress.report import prefix_cache
from regress.report.forked import Forked
from regress.report.verdict_cache import bid_fields


@dataclass(frozen=True)
class Found:
    """A search's candidates, and its sealed prefix's bytes where it is new (to keep: report/prefix_cache.py)."""

    candidates: list[Candidate]
    keep: bytes | None = None


def found_of(search: Search) -> Found:
    return Found(search.found, prefix_cache.encode(search.prefix) if search.changed and search.prefix else None)


def _frame(found: Found) -> bytes:
    head = encode(found.candidates)
    return len(head).to_bytes(8, "little") + head + (found.keep or b"")


def _unframe(data: bytes) -> Found:
    n = int.from_bytes(data[:8], "little")
    if len(data) < 8 + n:
        raise ValueError("a short answer")
    return Found(decode(data[8 : 8 + n]), data[8 + n :] or None)


def encode(found: list[Candidate]) -> bytes:
    rows = [[bid_fields(c.id), c.start, c.end, c.prior, c.ratio, c.own_before, c.own_after, c.p_value] for c in found]
    return json.dumps(rows).encode()


def decode(data: bytes) -> list[Candidate]:
    return [Candidate(BenchmarkId(*bid), *rest) for bid, *rest in json.loads(data)]


class Beside:
    """`compute()`'s search, computed in a forked child from now on; `get()` waits for what it found."""

    def __init__(self, compute: Callable[[], Search], *, fork: bool | None = None) -> None:
        self.compute = lambda: found_of(compute())
        self.value: Found | None = None
        self.child = Forked(lambda: _frame(self.compute()), fork=fork)

    @property
    def pid(self) -> int | None:
        return self.child.pid

    def get(self) -> Found:
        if self.value is None:
            self.value = self._collect()
        return self.value

    def stop(self) -> None:
        """The child, if still running, killed and reaped (the build failed before it asked)."""
        self.child.stop()

    def _collect(self) -> Found:
        data = self.child.get()
        if data is not None:
            try:
                return _unframe(data)
            except (ValueError, TypeError):
                pass
        return self.compute()  # no child, or it failed: the same search here
