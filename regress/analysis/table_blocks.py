"""A series' figures table joined from blocks of BLOCK commits, each kept whole from one read to the next.

A block that ends TAIL or more positions before the newest (a push measures
the commit before it again, and a rerun the few before that) is joined once
and kept (kind BLOCKS) under a digest of its files' shas and content
digests; a block with a file of another digest is joined afresh. The joined
table is the one the files alone give, field for field. Pure: the reading
and keeping is the memo's.
"""

from __future__ import annotations

import hashlib

import numpy as np

from regress.analysis import figures as file_figures
from regress.core.records import BenchmarkId

BLOCK = 100
TAIL = 10
BLOCKS = "figures block"  # the memo's kind
# (name, dtype) of the row arrays, the run-row arrays, and the per-position one: a file's figures' own
# (`figures.DTYPES`), with the positions and benchmarks a table adds.
_ROWS = ("status", "ok", "level", "band", "torch", "instructions", "extra")
_ARRAYS: tuple[tuple[str, type], ...] = (
    ("pos", np.int32),
    ("bench", np.int32),
    *((name, file_figures.DTYPES[name]) for name in _ROWS),
    ("run_pos", np.int32),
    ("run_bench", np.int32),
    *((name, file_figures.DTYPES[name]) for name in ("run", "run_n", "low")),
    ("reference", np.float64),
)


def spans(n: int) -> list[tuple[int, int]]:
    """The blocks (first position, end) kept in a history of n commits."""
    return [(a, a + BLOCK) for a in range(0, max(n - TAIL, 0) // BLOCK * BLOCK, BLOCK)]


def key(shas: list[str], digests: list[str]) -> str | None:
    """What a block is kept under; None where a file has no digest to key it by."""
    if not all(digests):
        return None
    return hashlib.sha256(" ".join(f"{s}:{d}" for s, d in zip(shas, digests)).encode()).hexdigest()


def assemble(kept, table_cls):
    """The Table of `kept` (a `storage.series_figures.SeriesFigures`): blocks kept in its memo decoded,
    the rest joined from their files' figures (new blocks kept). ValueError where a figure does not read."""
    cache = {}  # a file_figures.IdCache, shared by every block's decoding
    n = len(kept.headers)

    def joined(a: int, b: int):
        files = [file_figures.from_tree(tree, cache) for tree in kept.blobs(a, b)]
        return table_cls.build(kept.headers[a:b], files, None)

    def decoded(tree: dict, positions: int):
        part = from_tree(tree, cache, table_cls)
        if len(part.reference) != positions:
            raise ValueError("a block of another length")
        return part

    parts, end = [], 0
    for a, b in spans(n):
        k = key(kept.shas[a:b], kept.digests[a:b])
        parts.append(kept.memo.get(BLOCKS, k, lambda a=a, b=b: joined(a, b), to_tree, lambda d, n=b - a: decoded(d, n)))
        end = b
    if end < n or not parts:
        parts.append(joined(end, n))
    return join(table_cls, kept.headers, parts, kept.load)


def join(table_cls, history, parts: list, load):
    """One table of consecutive parts (each a Table of its own positions, from 0), as `build` of all
    their files would give: benchmarks and runs numbered in the order first seen."""
    index: dict[BenchmarkId, int] = {}
    names: dict[str, int] = {}
    rows = run_rows = positions = 0
    cols: dict[str, list[np.ndarray]] = {name: [] for name, _ in _ARRAYS}
    messages: dict[int, str] = {}
    units: dict[int, str] = {}
    for p in parts:
        ids = np.asarray([index.setdefault(b, len(index)) for b in p.ids] or [0], dtype=np.int32)
        runs = np.asarray([names.setdefault(r, len(names)) for r in p.run_names] or [0], dtype=np.int32)
        for name, _ in _ARRAYS:
            a = getattr(p, name)
            if name in ("bench", "run_bench"):
                a = ids[a]
            elif name == "run":
                a = runs[a]
            elif name in ("pos", "run_pos"):
                a = a + positions
            cols[name].append(a)
        messages.update((rows + k, v) for k, v in p.messages.items())
        units.update((rows + k, v) for k, v in p.units.items())
        rows, run_rows, positions = rows + len(p.pos), run_rows + len(p.run_pos), positions + len(p.reference)
    arrays: dict[str, np.ndarray] = {
        name: np.concatenate(cols[name], axis=-1).astype(dtype, copy=False) if cols[name] else np.zeros(0, dtype)
        for name, dtype in _ARRAYS
    }
    return table_cls(
        history=history,
        load=load,
        ids=list(index),
        messages=messages,
        units=units,
        run_names=list(names),
        **arrays,
    )


def to_tree(t) -> dict:
    """A block as the memo keeps it: its table (positions from 0)."""
    return {
        "ids": [file_figures.id_key(b) for b in t.ids],
        "runs": list(t.run_names),
        "messages": {str(k): v for k, v in t.messages.items()},
        "units": {str(k): v for k, v in t.units.items()},
        **{name: np.asarray(getattr(t, name), dtype=dtype) for name, dtype in _ARRAYS},
    }


def from_tree(tree: dict, cache: dict, table_cls):
    """`to_tree`'s Table back (no history, no load); ValueError on anything that does not read back as one."""
    try:
        ids = [file_figures.id_of(k, cache) for k in tree["ids"]]
        arrays = {name: tree[name] for name, _ in _ARRAYS}
        if any(not isinstance(a, np.ndarray) or a.dtype != dtype for (name, dtype), a in zip(_ARRAYS, arrays.values())):
            raise ValueError("a block's arrays of another type")
        bench, run = arrays["bench"], arrays["run"]
        if (len(bench) and int(bench.max()) >= len(ids)) or (len(run) and int(run.max()) >= len(tree["runs"])):
            raise ValueError("a block naming a benchmark or run it does not list")
        return table_cls(
            history=[],
            load=None,
            ids=ids,
            messages={int(k): str(v) for k, v in tree["messages"].items()},
            units={int(k): str(v) for k, v in tree["units"].items()},
            run_names=[str(r) for r in tree["runs"]],
            **arrays,
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"unreadable block: {exc}") from None
