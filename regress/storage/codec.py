"""A results file's bytes <-> a CommitResult, refusing anything that is not one.

Result files come from CI jobs and from anyone who can push to the results
branch, so loading is a trust boundary. The unpickler builds only the record
classes and plain containers (nothing else is ever imported or called), and
then every field of every record is checked against its declared type and a
size limit, walking each object once: a file of a few KB that nests tuples
60 deep (2^60 leaves by reference) or swaps a string for a dict is refused
in bounded time instead of hanging whatever reads it next.

Format versions (bump FORMAT_VERSION and add a line for every change):
  1  first format: {"format": "regress-results", "version": 1, "result": CommitResult}
  2  BenchmarkResult.counts (InstructionCount records) added; version 1 files
     read as having no counts
  3  CommitResult.reference (the reference workload's Samples, one per round)
     and Settings.min_rounds/max_rounds/budget (the round plan) added;
     versions 1 and 2 read as having no reference rounds and a 1-round plan
  4  the record classes moved from regress.model to regress.core.records (the
     pickles name the new module), and Failure.kind is a FailureKind; older
     files load through the old name, their kinds read from plain strings
  5  BenchmarkResult.memory (MemoryUse: bytes allocated and peak per call),
     .compiled (CompileStats: compile time, graphs, graph breaks, recompiles)
     and .tracked (TrackedValue: a track_* function's values) added; versions
     1-4 read as having none of them
"""

from __future__ import annotations

import dataclasses
import io
import math
import pickle
import types
import typing

from regress.core import records
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind

FORMAT = "regress-results"
FORMAT_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)

_RECORDS = {
    cls.__name__: cls
    for cls in (
        records.BenchmarkId,
        records.TaskSpec,
        records.Sample,
        records.Failure,
        records.BenchmarkResult,
        records.InstructionCount,
        records.MemoryUse,
        records.CompileStats,
        records.TrackedValue,
        records.CommitInfo,
        records.Fingerprint,
        records.Settings,
        records.CommitResult,
    )
}
_ALLOWED = {("regress.core.records", name): cls for name, cls in _RECORDS.items()}
_ALLOWED.update({("regress.model", name): cls for name, cls in _RECORDS.items()})  # formats 1-3
_ALLOWED[("regress.core.kinds", "FailureKind")] = FailureKind

# Limits far above anything measured (a string the size of a long stack
# trace; more rounds and blocks than any run takes), far below a hang.
MAX_TEXT = 1 << 20
MAX_ITEMS = 1 << 20
MAX_NODES = 1 << 23


class _Refused(pickle.UnpicklingError):
    pass


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise _Refused(f"refusing to load {module}.{name}") from None


class Invalid(Exception):
    pass


_HINTS = {cls: typing.get_type_hints(cls) for cls in _RECORDS.values()}


class _Checker:
    """Walks the records once, checking each field against its type."""

    def __init__(self) -> None:
        self.nodes = 0
        self.seen: set[tuple[int, object]] = set()

    def check(self, value, kind, where: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Invalid("too many values")
        origin = typing.get_origin(kind)
        if origin in (typing.Union, types.UnionType):
            options = typing.get_args(kind)
            if value is None and type(None) in options:
                return
            (kind,) = [k for k in options if k is not type(None)]
            origin = typing.get_origin(kind)
        if origin is tuple:
            item, dots = typing.get_args(kind)
            if type(value) is not tuple or dots is not Ellipsis:
                raise Invalid(f"{where} is {type(value).__name__}, not a tuple")
            if len(value) > MAX_ITEMS:
                raise Invalid(f"{where} has {len(value)} items")
            key = (id(value), item)
            if key in self.seen:  # shared by reference: checked once
                return
            self.seen.add(key)
            for i, x in enumerate(value):
                self.check(x, item, f"{where}[{i}]")
            return
        if kind in _HINTS:
            self._record(value, kind, where)
            return
        if kind is FailureKind:
            if not isinstance(value, str) or value not in FailureKind._value2member_map_:
                raise Invalid(f"{where} is not a failure kind")
            return
        if kind is float:
            ok = type(value) in (float, int) and math.isfinite(value)
        elif kind is int:
            ok = type(value) is int
        else:
            ok = type(value) is kind
        if not ok:
            raise Invalid(f"{where} is {type(value).__name__}, not {kind.__name__}")
        if kind is str and len(value) > MAX_TEXT:
            raise Invalid(f"{where} is {len(value)} characters long")

    def _record(self, value, cls, where: str) -> None:
        if type(value) is not cls:
            raise Invalid(f"{where} is {type(value).__name__}, not {cls.__name__}")
        key = (id(value), cls)
        if key in self.seen:
            return
        self.seen.add(key)
        state = vars(value)
        hints = _HINTS[cls]
        extra = set(state) - set(hints)
        if extra:
            raise Invalid(f"{where} has unknown fields {sorted(extra)}")
        for field in dataclasses.fields(cls):
            if field.name not in state:  # written by an older format: the default stands
                default = field.default if field.default is not dataclasses.MISSING else dataclasses.MISSING
                if default is dataclasses.MISSING:
                    raise Invalid(f"{where} lacks {field.name}")
                object.__setattr__(value, field.name, default)
            self.check(state[field.name], hints[field.name], f"{where}.{field.name}")
        if cls is records.Failure and type(state["kind"]) is str:  # older formats: a plain string
            object.__setattr__(value, "kind", FailureKind(state["kind"]))


def encode(result: records.CommitResult) -> bytes:
    return pickle.dumps({"format": FORMAT, "version": FORMAT_VERSION, "result": result}, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data: bytes, where: str) -> records.CommitResult:
    try:
        envelope = _Unpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise RegressError(
            f"{where} is not a regress result file ({exc}); nothing was run from it; delete or move it away"
        ) from None
    except Exception as exc:  # noqa: BLE001 - truncated or garbage bytes raise many kinds
        raise RegressError(f"{where} is corrupt ({type(exc).__name__}); delete it and measure that commit again") from None
    if type(envelope) is not dict or envelope.get("format") != FORMAT:
        raise RegressError(f"{where} is not a regress result file; delete or move it away")
    version = envelope.get("version")
    if type(version) is not int:
        raise RegressError(f"{where} has no format version; delete it and measure that commit again")
    if version > FORMAT_VERSION:
        raise RegressError(
            f"{where} was written by a newer regress (format {version}, this one reads {FORMAT_VERSION}); "
            "upgrade regress (pip install -U regress)"
        )
    if version not in READABLE_VERSIONS:
        raise RegressError(
            f"{where} uses result format {version}, which this regress no longer reads; measure that commit again"
        )
    result = envelope.get("result")
    try:
        _Checker().check(result, records.CommitResult, "result")
    except (Invalid, RecursionError) as exc:
        raise RegressError(f"{where} is not a valid regress result file ({exc}); delete it and measure that commit again") from None
    return result
