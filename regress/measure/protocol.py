"""What the worker tells the runner: one JSON object a line, on a pipe of its own.

JSON rather than pickle, so a confused or hostile worker can at worst send
bad data, never code. The benchmark's own stdout/stderr go to a log file.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from regress.core.records import (
    Failure,
    Fingerprint,
    InstructionCount,
    Sample,
    TaskSpec,
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
