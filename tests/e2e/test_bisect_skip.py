"""`regress bisect` past a commit that does not build and past a probe a busy minute misplaced (a file of
its own: each bisect measures for a minute or two, and the suite runs one file a worker at a time)."""

from __future__ import annotations

import json
import math

from test_bisect import history


def test_an_unbuildable_commit_beside_the_slowdown_is_skipped_and_a_busy_minute_is_searched_past(repo):
    shas = history(repo, 9, slow_at=5, broken_at=4, busy_at=3)
    proc = repo.regress("bisect", shas[0], shas[-1], "--bench", "work", "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert doc["first_bad"] is None
    assert [c["sha"] for c in doc["candidates"]] == [shas[4], shas[5]]
    assert doc["last_good"]["sha"] == shas[3]
    assert doc["measured"] <= math.log2(len(shas)) + 3
    skipped = [p for p in doc["probes"] if p["state"] == "skip"]
    assert [p["sha"] for p in skipped] == [shas[4]] and "build" in skipped[0]["why"]
    assert "skipping" in proc.stderr
    # Commit 3's first rounds read slow: placed bad, the search ends on it, the answer does not
    # confirm, and the search runs again with more rounds, which place it good.
    assert "searching again" in proc.stderr, proc.stderr
