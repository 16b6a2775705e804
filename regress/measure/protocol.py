"""What the worker tells the runner: one JSON object a line, on a pipe of its own.

JSON rather than pickle, so a confused or hostile worker can at worst send
bad data, never code. Each message is a frozen record below, named by its
`type` (a `Message`); `parse` builds it with the field checks a results file
passes (`core/checks.py`), so a malformed line is one `Malformed` naming what
is wrong, never a crash or an arbitrary object. The benchmark's own
stdout/stderr go to a log file.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from enum import Enum

from regress.core.checks import Invalid, from_plain
from regress.core.ops import Op
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
from regress.suite.files import Note


class Message(str, Enum):
    HELLO = "hello"
    DISCOVERED = "discovered"
    START = "start"
    RESULT = "result"
    COUNTED = "counted"
    FAILED = "failed"
    PROFILED = "profiled"
    REFERENCE = "reference"
    DONE = "done"


class Malformed(Exception):
    """A line that is not one of the messages below; the text says what is wrong with it."""


@dataclass(frozen=True)
class Hello:
    pid: int
    fingerprint: Fingerprint


@dataclass(frozen=True)
class Listed:
    """A discovered benchmark: its spec, where it is defined, and why it cannot run here (if so)."""

    spec: TaskSpec
    origin: str
    skip: str | None = None


@dataclass(frozen=True)
class Discovered:
    benchmarks: tuple[Listed, ...]
    failures: tuple[Failure, ...] = ()
    notes: tuple[Note, ...] = ()  # files and functions under the benchmark path that are not benchmarks, and why
    mistake: str = ""  # a user mistake that stops the command (exit 2): pytest missing for pytest-benchmark tests


@dataclass(frozen=True)
class Start:
    index: int


@dataclass(frozen=True)
class Result:
    """A measured benchmark: its round (None for a tracked value) and what else that round found."""

    index: int
    sample: Sample | None = None
    memory: tuple[MemoryUse, ...] = ()
    compiled: CompileStats | None = None
    tracked: TrackedValue | None = None


@dataclass(frozen=True)
class Counted:
    index: int
    count: InstructionCount


@dataclass(frozen=True)
class Failed:
    index: int
    failure: Failure


@dataclass(frozen=True)
class Profiled:
    """`regress explain`: the operators of `calls` executions, and the Chrome trace's file."""

    index: int
    trace: str
    calls: int
    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Reference:
    sample: Sample


@dataclass(frozen=True)
class Done:
    pass


_RECORDS = {
    Message.HELLO: Hello,
    Message.DISCOVERED: Discovered,
    Message.START: Start,
    Message.RESULT: Result,
    Message.COUNTED: Counted,
    Message.FAILED: Failed,
    Message.PROFILED: Profiled,
    Message.REFERENCE: Reference,
    Message.DONE: Done,
}
_TYPES = {cls: kind for kind, cls in _RECORDS.items()}
_NAMES = frozenset(kind.value for kind in Message)
# The messages about one benchmark of the list: they carry its index.
ABOUT_ONE = (Start, Result, Counted, Failed, Profiled)
ENDS_ONE = (Result, Counted, Failed, Profiled)


def encode(msg) -> bytes:
    """One message as the line the worker writes."""
    return (json.dumps({"type": _TYPES[type(msg)], **dataclasses.asdict(msg)}) + "\n").encode()


def parse(line: bytes):
    """The message on one line; Malformed (saying what is wrong) for anything else."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"a line that is not JSON ({type(exc).__name__})") from None
    if type(data) is not dict:
        raise Malformed(f"a JSON {type(data).__name__}, not a message object")
    kind = data.pop("type", None)
    if not isinstance(kind, str) or kind not in _NAMES:
        raise Malformed(f"a message of unknown type {str(kind)[:40]!r}")
    try:
        return from_plain(_RECORDS[Message(kind)], data)
    except Invalid as exc:
        raise Malformed(f"a {kind} message: {exc.under(kind)}") from None
