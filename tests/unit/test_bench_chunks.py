"""A chart's points in data files (report/data_files.py): joined back they are the lines; a file's digest moves
only with its own values; a new commit, and the paired push's second measurement of its parent, move only the
pieces that hold them, and a closed chunk is written once."""

from __future__ import annotations

import json

import numpy as np

from regress.report.data_files import CHUNK, PIECE, PIECES, SETTLE, Chunking, Chunks, Line, rel


def _lines(n: int, bump_at: int | None = None) -> list[Line]:
    at = np.arange(0, n, 2, dtype=np.int64)  # every other commit measured
    level = 1e-3 * (1 + at / 1e4)  # a point's value is its own, whatever the length
    if bump_at is not None:
        level[np.searchsorted(at, bump_at)] *= 1.5
    band = {"lo": level * 0.9, "hi": level * 1.1}
    return [
        Line("series", "a / default", at, {"level": level, **band}),
        Line("peak", "a / default", at[at >= CHUNK], {"y": np.full(int((at >= CHUNK).sum()), 1024.0)}, text=str),
    ]


def _decode(script: str) -> dict:
    head = "(window.REGRESS_CHUNKS = window.REGRESS_CHUNKS || []).push("
    assert script.startswith(head) and script.endswith(");\n")
    return json.loads(script[len(head) : -3])


def test_chunks_join_back_into_the_lines():
    n = 2 * CHUNK + 7
    lines = _lines(n)
    chunks = Chunks.of(lines, n)
    assert chunks.chunking.closed == 2
    keys = chunks.listed()
    assert keys == [0, CHUNK, *(2 * CHUNK + j * PIECE for j in range(PIECES))]
    assert [rel("s", chunks.chunking.name(k)) for k in keys] == [
        "data/bench/s/0.js",
        "data/bench/s/1.js",
        *(f"data/bench/s/open-{j}.js" for j in range(PIECES)),
    ]
    parts = [_decode(chunks.script(k)) for k in keys]
    assert [p["k"] for p in parts] == keys
    assert [bool(p["series"]) for p in parts] == [True, True, True] + [False] * (PIECES - 1)  # unfilled: empty
    joined = [v for p in parts for v in p["series"].get("a / default", {}).get("level", [])]
    assert joined == lines[0].columns["level"].tolist()
    assert [v for p in parts for v in p["series"].get("a / default", {}).get("at", [])] == lines[0].at.tolist()
    assert "peak" not in parts[0]["metrics"] and parts[1]["metrics"]["peak"]["a / default"]["text"][0] == "1024.0"


def test_the_grid_closes_a_chunk_settle_commits_after_it_and_lists_the_same_files_until_then():
    assert Chunking(CHUNK - 1).inline and Chunking(CHUNK - 1).listed({0}) == [0]
    assert Chunking(CHUNK).closed == 0 and not Chunking(CHUNK).inline
    for n in range(CHUNK, 3 * CHUNK + 5):
        g = Chunking(n)
        assert g.closed == (n - SETTLE) // CHUNK
        keys = g.keys(np.arange(n))
        assert (np.diff(keys) >= 0).all() and set(keys.tolist()) <= set(g.listed(set(keys.tolist())))
        assert (np.bincount(np.searchsorted(g.listed(set(keys.tolist())), keys)) <= CHUNK).all()
        if g.closed == Chunking(n - 1).closed and not Chunking(n - 1).inline:  # the page's list of files stays
            assert g.listed(set(keys.tolist())) == Chunking(n - 1).listed(
                set(Chunking(n - 1).keys(np.arange(n - 1)).tolist())
            )


def _written(before: Chunks, after: Chunks) -> list[int]:
    """The keys whose files a build after `before` writes for `after`."""
    was = {before.chunking.name(k): before.digest("v", "s", k) for k in before.listed()}
    return [k for k in after.listed() if was.get(after.chunking.name(k)) != after.digest("v", "s", k)]


def test_a_new_commit_and_its_paired_parent_write_one_piece_or_two():
    for n in (2 * CHUNK, 2 * CHUNK + 37, 2 * CHUNK + PIECE - 1, 2 * CHUNK + PIECE, 3 * CHUNK + SETTLE):
        before, after = Chunks.of(_pushed(n), n), Chunks.of(_pushed(n + 1), n + 1)
        written = _written(before, after)
        assert set(written) <= set(after.chunking.keys(np.array([n - 1, n]))), (n, written)
        assert before.listed() == after.listed()
    # The push that closes a chunk writes it, once: the pushes after leave it as it is.
    n = 3 * CHUNK + SETTLE - 1
    closing = _written(Chunks.of(_pushed(n), n), Chunks.of(_pushed(n + 1), n + 1))
    assert 2 * CHUNK in closing
    assert 2 * CHUNK not in _written(Chunks.of(_pushed(n + 1), n + 1), Chunks.of(_pushed(n + 2), n + 2))


def _pushed(n: int) -> list[Line]:
    """A paired history of n commits: the push of commit n - 1 measured n - 2 again (its band moved)."""
    at = np.arange(n, dtype=np.int64)
    level = 1e-3 * (1 + at / 1e4)
    lo, hi = level * 0.9, level * 1.1
    if n > 1:
        lo[n - 2] *= 0.99
    return [Line("series", "a / default", at, {"level": level, "lo": lo, "hi": hi})]


def test_an_old_point_moves_only_its_own_chunk():
    n = 2 * CHUNK + SETTLE
    after = Chunks.of(_lines(n), n)
    moved = Chunks.of(_lines(n, bump_at=10), n)
    assert [after.digest("v", "s", k) == moved.digest("v", "s", k) for k in after.listed()] == [False] + [True] * (
        len(after.listed()) - 1
    )
    assert after.digest("v", "s", 0) != after.digest("w", "s", 0)  # another site version
