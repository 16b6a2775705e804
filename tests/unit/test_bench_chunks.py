"""A chart's points in chunk files: joined back they are the lines; a chunk's digest moves only with its own values."""

from __future__ import annotations

import json

import numpy as np

from regress.report.bench_chunks import CHUNK, Chunks, Line, rel


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
    assert chunks.full == 2 and chunks.listed() == [0, 1, 2]
    assert [rel("s", k, chunks.full) for k in chunks.listed()] == [
        "data/bench/s/0.js",
        "data/bench/s/1.js",
        "data/bench/s/last.js",
    ]
    parts = [_decode(chunks.script(k)) for k in chunks.listed()]
    assert [p["k"] for p in parts] == [0, 1, 2]
    joined = [v for p in parts for v in p["series"]["a / default"]["level"]]
    assert joined == lines[0].columns["level"].tolist()
    assert [v for p in parts for v in p["series"]["a / default"]["at"]] == lines[0].at.tolist()
    assert "peak" not in parts[0]["metrics"] and parts[1]["metrics"]["peak"]["a / default"]["text"][0] == "1024.0"


def test_a_new_commit_changes_only_the_last_chunk():
    n = 2 * CHUNK
    before, after = Chunks.of(_lines(n), n), Chunks.of(_lines(n + 2), n + 2)
    assert after.listed() == before.listed() == [0, 1, 2]  # the page's list of chunks stays
    same = [before.digest("v", "s", k) == after.digest("v", "s", k) for k in before.listed()]
    assert same == [True, True, False]
    moved = Chunks.of(_lines(n + 2, bump_at=10), n + 2)  # an old point moved: its chunk, and only it
    assert [after.digest("v", "s", k) == moved.digest("v", "s", k) for k in after.listed()] == [False, True, True]
    assert before.digest("v", "s", 0) != before.digest("w", "s", 0)  # another site version
