"""A long history's sealed prefix (`analysis/sealed.py`), kept in the memo from one site build to the next.

What the sealed part of a 10,000-commit history gives (every benchmark's
fitted levels and its search's checkpoint) changes once every SEAL commits;
kept, the next build fits and searches only the newer commits. It is kept
in the memo (`storage/memo.py`), one entry a series, as numpy arrays
(`np.savez`, read back without pickle: nothing in it can run) and a JSON
header. The entry carries the digest of what it was made
from, and the search uses it only where that digest is the history's own:
a stale or garbled entry costs the time it would have saved, nothing else.
"""

from __future__ import annotations

import io
import json

import numpy as np

from regress.analysis import sealed_fit
from regress.analysis.partition import FIELDS, Checkpoint
from regress.analysis.sealed import Prefix, SealedLevels
from regress.core.records import BenchmarkId
from regress.report.verdict_cache import bid_fields
from regress.storage import memo
from regress.storage.memo import Memo


def encode(prefix: Prefix) -> bytes:
    ids = list(prefix.levels)
    marks = [(k, prefix.checkpoints[b]) for k, b in enumerate(ids) if b in prefix.checkpoints]
    header = {
        "digest": prefix.digest,
        "ids": [bid_fields(b) for b in ids],
        "cpu": [prefix.levels[b].cpu for b in ids],
        "lengths": [len(prefix.levels[b].positions) for b in ids],
        "marks": [[k, c.t, c.digest, int(c.slots["start"].size)] for k, c in marks],
    }
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        "positions": _cat([prefix.levels[b].positions for b in ids], np.int64),
        "log_levels": _cat([prefix.levels[b].log_levels for b in ids], np.float64),
        "back": _cat([c.back for _, c in marks], np.int64),
    }
    for name in FIELDS:
        arrays[f"slot_{name}"] = _cat([c.slots[name] for _, c in marks], None)
    out = io.BytesIO()
    # mypy matches **arrays against savez's `allow_pickle: bool` (numpy 2.1+); no key is named so.
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


def decode(data: bytes | None) -> Prefix | None:
    """The kept prefix, or None where there is none or it does not read."""
    if not data:
        return None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes())
            positions, logs, back = z["positions"], z["log_levels"], z["back"]
            slots = {name: z[f"slot_{name}"] for name in FIELDS}
        ids = [BenchmarkId(*b) for b in header["ids"]]
        levels, at = {}, 0
        for bid, cpu, n in zip(ids, header["cpu"], header["lengths"], strict=True):
            levels[bid] = SealedLevels(
                positions[at : at + n], logs[at : at + n], {str(k): float(v) for k, v in cpu.items()}
            )
            at += n
        marks, at_back, at_slot = {}, 0, 0
        for k, t, digest, width in header["marks"]:
            kept = {name: slots[name][at_slot : at_slot + width] for name in FIELDS}
            marks[ids[k]] = Checkpoint(int(t), str(digest), kept, back[at_back : at_back + t + 1])
            at_back, at_slot = at_back + t + 1, at_slot + width
        return Prefix(str(header["digest"]), levels, marks)
    except (ValueError, KeyError, TypeError, IndexError, OSError):
        return None


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype or np.float64)
    return np.concatenate(parts).astype(dtype, copy=False) if dtype else np.concatenate(parts)


class Entry:
    """The series' kept prefix (`found`: its bytes, or None); `keep` a new one. `kind`: whose
    prefix: the change points' search ("prefix") or the chart's levels ("levels", `chart_levels`)."""

    def __init__(self, kept: Memo, machine: str, env: str, threshold: float | None, kind: str = "prefix") -> None:
        self.memo, self.kind, self.key = kept, kind, memo.digest(machine, env, threshold)
        found = kept.find(kind, self.key)
        self.found = found.tobytes() if isinstance(found, np.ndarray) else None

    def keep(self, data: bytes) -> None:
        self.memo.put(self.kind, self.key, np.frombuffer(data, dtype=np.uint8))


class ChartLevels:
    """The chart's levels of one series (`sealed_fit.chart`), its sealed part kept from one build to the
    next: after one new commit only the newer runs are fitted, and the older levels, the same to the
    bit, leave every older chunk of every chart as it was."""

    def __init__(self, kept: Memo, machine: str, env: str) -> None:
        self.entry = Entry(kept, machine, env, None, kind="levels")
        # Once fitted: the sealed part's digest, and the positions below which its levels are it alone
        # (`sealed_fit.chart_fixed`); None: no fit was made (every level is the measured one).
        self.fixed: tuple[str, int] | None = None

    def __call__(self, table, code: dict[str, str]) -> dict:
        kept = decode(self.entry.found)
        found, prefix, fixed = sealed_fit.chart_fixed(table, code, kept)
        if prefix is not None and (kept is None or kept.digest != prefix.digest):
            self.entry.keep(encode(prefix))
        self.fixed = (prefix.digest if prefix is not None else "", fixed)
        return found
