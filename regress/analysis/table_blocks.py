"""A series' figures table joined from blocks of BLOCK commits, each kept whole from one read to the next.

Every command that reads a long history builds its `Table` from each file's
kept figures (`storage/derived.py`): at 10,000 commits that is 10,000 small
blobs to select, 10,000 JSON heads to parse and 10,000 pieces to join, at
every build, though after one new commit all but the newest are what they
were. Here the positions are cut into blocks of BLOCK; a block that ends
TAIL or more positions before the newest (a push measures the commit before
it again, and a rerun the few before that) is joined once and kept under a
digest of its files' shas and content digests (and, through its kind, the
analysis code): the next read finds it and decodes one blob for BLOCK files.
A block with a file of another digest is joined afresh from its files. The
joined table is the one the files alone give, field for field. Pure: the
reading and keeping is `Derived`'s.
"""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np

from regress.analysis import figures as file_figures
from regress.analysis.sealed_rows import rows_digest
from regress.core.records import BenchmarkId

BLOCK = 100
TAIL = 10
# Bump when what a block holds changes (its kind holds the analysis code too).
VERSION = 2  # 2: the digest of its run rows (`sealed_rows.rows_digest`), made as it is joined
_FIELD, _SEP = "\x1f", "\x1e"
# (name, dtype) of the row arrays, the run-row arrays, and the per-position one, in the blob's order.
_ARRAYS = (
    ("pos", np.int32),
    ("bench", np.int32),
    ("status", np.int8),
    ("ok", np.bool_),
    ("level", np.float64),
    ("band", np.float64),
    ("torch", np.float64),
    ("instructions", np.int64),
    ("extra", np.float64),
    ("run_pos", np.int32),
    ("run_bench", np.int32),
    ("run", np.int32),
    ("run_n", np.int32),
    ("low", np.float64),
    ("reference", np.float64),
)


def spans(n: int) -> list[tuple[int, int]]:
    """The blocks (first position, end) kept in a history of n commits."""
    return [(a, a + BLOCK) for a in range(0, max(n - TAIL, 0) // BLOCK * BLOCK, BLOCK)]


def key(shas: list[str], digests: list[str]) -> str | None:
    """What a block is kept under; None where a file has no digest to key it by."""
    if not all(digests):
        return None
    return hashlib.sha256(f"{VERSION} {' '.join(f'{s}:{d}' for s, d in zip(shas, digests))}".encode()).hexdigest()


def assemble(kept, table_cls):
    """The Table of `kept` (a `storage.derived.Derived`): kept blocks decoded, the rest joined from
    their files' figures (new blocks kept for the next read). ValueError where a blob does not read."""
    cache = {}  # a file_figures.IdCache, shared by every block's decoding
    n = len(kept.headers)

    def joined(a: int, b: int):
        files = [file_figures.decode(blob, cache) for blob in kept.blobs(a, b)]
        return table_cls.build(kept.headers[a:b], files, None)

    parts, end, keyed = [], 0, []
    for a, b in spans(n):
        k = key(kept.shas[a:b], kept.digests[a:b])
        data = kept.blocks.get(k) if k is not None else None
        part = _decoded(data, cache, table_cls, b - a) if data is not None else None
        if part is None:
            part = joined(a, b)
            part.blocks = ((0, b - a, "", rows_digest(part, 0, b - a)),)
            if k is not None:
                kept.blocks.put(k, encode(part))
        if k is not None:
            keyed.append((a, b, k, part.blocks[0][3]))
        parts.append(part)
        end = b
    if end < n or not parts:
        parts.append(joined(end, n))
    table = join(table_cls, kept.headers, parts, kept.load)
    table.blocks = tuple(keyed)
    return table


def _decoded(data: bytes, cache: dict, table_cls, positions: int):
    try:
        part = decode(data, cache, table_cls)
    except ValueError:
        return None  # a kept block that does not read: joined afresh, and replaced
    return part if len(part.reference) == positions else None


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
    arrays = {
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


def _bid_key(b: BenchmarkId) -> str:
    return _FIELD.join((b.label, b.sub_label, b.description, str(b.num_threads)))


def encode(t) -> bytes:
    """A block's blob: its table (positions from 0), and the digest of its run rows (`blocks`' own, if made)."""
    n = len(t.reference)
    made = [rows for a, b, _, rows in t.blocks if (a, b) == (0, n)]
    head = {
        "v": VERSION,
        "rows": made[0] if made else rows_digest(t, 0, n),
        "ids": [_bid_key(b) for b in t.ids],
        "runs": list(t.run_names),
        "shapes": [list(np.shape(getattr(t, name))) for name, _ in _ARRAYS],
        "messages": {str(k): v for k, v in t.messages.items()},
        "units": {str(k): v for k, v in t.units.items()},
    }
    data = json.dumps(head).encode()
    body = b"".join(np.ascontiguousarray(getattr(t, name), dtype=dtype).tobytes() for name, dtype in _ARRAYS)
    return struct.pack("<I", len(data)) + data + body


def decode(blob: bytes, cache: dict, table_cls):
    """A block's Table (no history, no load); ValueError on anything that does not read back as one."""
    try:
        (n,) = struct.unpack_from("<I", blob)
        head = json.loads(blob[4 : 4 + n])
        if head["v"] != VERSION:
            raise ValueError("a block of another version")
        ids = []
        for k in head["ids"]:
            bid = cache.get(k)
            if bid is None:
                label, sub, desc, threads = k.split(_FIELD)
                bid = cache[k] = BenchmarkId(label, sub, desc, int(threads))
            ids.append(bid)
        arrays, at = {}, 4 + n
        for (name, dtype), shape in zip(_ARRAYS, head["shapes"], strict=True):
            count = int(np.prod(shape, dtype=np.int64))
            arrays[name] = np.frombuffer(blob, dtype=dtype, count=count, offset=at).reshape(shape)
            at += np.dtype(dtype).itemsize * count
        if at != len(blob):
            raise ValueError("a block of the wrong length")
        bench, run = arrays["bench"], arrays["run"]
        if (len(bench) and int(bench.max()) >= len(ids)) or (len(run) and int(run.max()) >= len(head["runs"])):
            raise ValueError("a block naming a benchmark or run it does not list")
        rows = head["rows"]
        if not isinstance(rows, str):
            raise TypeError("a block without the digest of its rows")
        return table_cls(
            history=[],
            load=None,
            ids=ids,
            messages={int(k): str(v) for k, v in head["messages"].items()},
            units={int(k): str(v) for k, v in head["units"].items()},
            run_names=[str(r) for r in head["runs"]],
            blocks=((0, len(arrays["reference"]), "", rows),),
            **arrays,
        )
    except (struct.error, KeyError, TypeError, AttributeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable block: {exc}") from None
