"""What the worker tells the runner: one JSON object a line, on a pipe of its own.

JSON rather than pickle, so a confused or hostile worker can at worst send
bad data, never code. The benchmark's own stdout/stderr go to a log file.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from regress.core.records import (
    CompileStats,
    Failure,
    Fingerprint,
    InstructionCount,
    MemoryUse,
    Sample,
    TaskSpec,
    TrackedValue,
)


def encode(kind: str, **fields: Any) -> bytes:
    return (json.dumps({"type": kind, **fields}, default=_plain) + "\n").encode()


def decode(line: bytes) -> dict:
    return json.loads(line)


def _plain(obj: Any):
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    raise TypeError(f"cannot send {type(obj).__name__}")


def spec(d: dict) -> TaskSpec:
    return TaskSpec(**d)


def sample(d: dict) -> Sample:
    return Sample(int(d["number_per_run"]), tuple(float(t) for t in d["raw_times"]), float(d["started_at"]))


def failure(d: dict) -> Failure:
    return Failure(str(d["kind"]), str(d["message"]), str(d.get("where", "")))


def fingerprint(d: dict) -> Fingerprint:
    return Fingerprint(**d)


def count(d: dict) -> InstructionCount:
    return InstructionCount(int(d["number"]), tuple(int(c) for c in d["per_call"]), float(d["started_at"]))


# A "result" message carries, besides its sample (None for a tracked value):
# memory (a list of MemoryUse), compiled (CompileStats or None) and tracked
# (TrackedValue or None); a worker of an older regress sends only the sample.


def memory(items: list | None) -> tuple[MemoryUse, ...]:
    return tuple(
        MemoryUse(int(d["allocated"]), int(d["peak"]), str(d["device"]), float(d["started_at"])) for d in items or ()
    )


def compiled(d: dict | None) -> tuple[CompileStats, ...]:
    if not d:
        return ()
    return (
        CompileStats(
            float(d["compile_time"]),
            int(d["graphs"]),
            int(d["graph_breaks"]),
            int(d["recompiles"]),
            float(d["started_at"]),
        ),
    )


def tracked(d: dict | None) -> tuple[TrackedValue, ...]:
    if not d:
        return ()
    return (TrackedValue(float(d["value"]), str(d["unit"]), str(d["better"]), float(d["started_at"])),)
