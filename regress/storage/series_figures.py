"""A series' files as the history-wide analyses read them: each file's figures (`analysis/table.py`),
computed from its light result and kept in the memo (kind KIND) under the file's content digest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from regress.core.records import CommitResult
from regress.storage import summary
from regress.storage.memo import Memo

KIND = "figures"
CHUNK = 100  # files whose light results are read at once to compute what the memo lacks


class SeriesFigures:
    """A series' commits in history order (their headers), each file's figures (`blobs`), and
    `load(position)`: that commit's light result. `memo`: where the figures are kept."""

    def __init__(
        self,
        store,
        memo: Memo,
        machine: str,
        env: str,
        headers: list[CommitResult],
        digests: dict[str, str],
        compute: Callable[[CommitResult], Any],
    ) -> None:
        self.store, self.memo, self.machine, self.env, self.compute = store, memo, machine, env, compute
        self.headers = headers
        self.by_sha: dict[str, str] = digests  # sha -> its file's content digest, as the summary has it
        self.shas = [h.commit.sha for h in headers]
        self.digests = [digests.get(sha, "") for sha in self.shas]  # each file's content digest ("": none)
        self._loaded: dict[int, CommitResult] = {}

    def blobs(self, a: int, b: int) -> list[Any]:
        """The figures of positions a to b (excluded), kept or computed (and kept); ValueError where a
        file's light result is gone from the summary."""
        found = self.memo.get_many(KIND, {p: self.digests[p] or None for p in range(a, b)}, self._made)
        return [found[p] for p in range(a, b)]

    def _made(self, positions: list[int]) -> dict[int, Any]:
        out = {}
        for k in range(0, len(positions), CHUNK):  # a chunk's light results in memory at a time
            part = positions[k : k + CHUNK]
            light = summary.light_of(self.store, self.machine, self.env, [self.shas[p] for p in part])
            for p in part:
                result = light.get(self.shas[p])
                if result is None:
                    raise ValueError(f"the summary lost {self.shas[p][:10]}'s light result")
                out[p] = self.compute(result)
        return out

    def load(self, position: int) -> CommitResult:
        if position not in self._loaded:
            sha = self.shas[position]
            found = summary.light_of(self.store, self.machine, self.env, [sha]).get(sha)
            if found is None:  # its entry went missing since: the file, else the commit without its benchmarks
                result = self.store.load(self.machine, self.env, sha)
                found = summary.light(result) if result is not None else self.headers[position]
            self._loaded[position] = found
        return self._loaded[position]


def per_file(store, memo: Memo, machine: str, env: str, compute: Callable[[CommitResult], Any]) -> SeriesFigures | None:
    """machine/env's files with `compute(light result)` of each, kept in `memo`; None where the summary
    is unusable."""
    headers = summary.headers(store, machine, env)
    if headers is None:
        return None
    return SeriesFigures(store, memo, machine, env, headers, summary.digests(store, machine, env), compute)
