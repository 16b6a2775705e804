"""The order of measured commits, and a commit's neighbours in it."""

from __future__ import annotations

import heapq

from regress.core.records import CommitInfo


def history_order(commits: list[CommitInfo]) -> list[CommitInfo]:
    """Oldest first: a parent always before its child, else by commit date.

    Dates alone can't order commits made within one second (scripts, rebases,
    `git am`), so recorded parents decide wherever both ends are in the list;
    dates (then sha, for a stable order) break the rest.
    """
    by_sha = {c.sha: c for c in commits}
    children: dict[str, list[str]] = {sha: [] for sha in by_sha}
    waiting = dict.fromkeys(by_sha, 0)
    for c in by_sha.values():
        for parent in set(c.parents):
            if parent in by_sha and parent != c.sha:
                children[parent].append(c.sha)
                waiting[c.sha] += 1

    def when(sha: str) -> tuple:
        c = by_sha[sha]
        return (c.committed_at, c.authored_at, sha)

    ready = [(when(sha), sha) for sha, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, sha = heapq.heappop(ready)
        out.append(by_sha[sha])
        for child in children[sha]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (when(child), child))
    return out


def neighbours(history: list, base_sha: str, head_sha: str) -> tuple:
    """(the result just before base, the result just after head) in a history list, or None for each."""
    shas = [r.commit.sha for r in history]
    before = after = None
    if base_sha not in shas or head_sha not in shas or shas.index(base_sha) >= shas.index(head_sha):
        return None, None  # not a step forward in this history: no neighbours to speak of
    if shas.index(base_sha) > 0:
        before = history[shas.index(base_sha) - 1]
    if shas.index(head_sha) + 1 < len(shas):
        after = history[shas.index(head_sha) + 1]
    return before, after
