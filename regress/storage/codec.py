"""A results file's bytes <-> a CommitResult, refusing anything that is not one.

Result files come from CI jobs and from anyone who can push to the results
branch, so loading is a trust boundary. The unpickler builds only the record
classes and plain containers (nothing else is ever imported or called), and
then every field of every record is checked against its declared type and a
size limit, walking each object once: a file of a few KB that nests tuples
60 deep (2^60 leaves by reference) or swaps a string for a dict is refused
in bounded time instead of hanging whatever reads it next.

Format versions: every change is listed in `upgrade.py`, with how older files read.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import math
import pickle
import types
import typing

from regress.core import records
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind
from regress.storage import container, upgrade

FORMAT = "regress-results"
FORMAT_VERSION = 7
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)

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
        records.Run,
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
    """What is wrong, and where in the record (built outwards as it propagates)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what, self.path = what, ""

    def at(self, step: str) -> Invalid:
        self.path = step + self.path
        return self

    def __str__(self) -> str:
        return f"result{self.path} {self.what}"


_HINTS = {cls: typing.get_type_hints(cls) for cls in _RECORDS.values()}
_PRIMITIVES = {float: {float, int}, int: {int}, str: {str}, bool: {bool}}


class _Walk:
    """One file's walk: each shared object checked once, and a bound on the values seen."""

    def __init__(self) -> None:
        self.nodes = 0
        self.seen: set[tuple[int, object]] = set()

    def count(self, n: int) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise Invalid("holds too many values")

    def first_visit(self, value, kind) -> bool:
        key = (id(value), kind)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def _name(t) -> str:
    return type(t).__name__ if not isinstance(t, type) else t.__name__


def _primitive(kind):
    allowed = _PRIMITIVES[kind]

    def check(value, walk):
        if type(value) not in allowed:
            raise Invalid(f"is {_name(value)}, not {kind.__name__}")
        if kind is float and value != value:
            raise Invalid("is NaN")
        if kind is str and len(value) > MAX_TEXT:
            raise Invalid(f"is {len(value)} characters long")

    return check


def _tuple_of_primitives(kind):
    allowed = _PRIMITIVES[kind]

    def check(value, walk):
        if type(value) is not tuple:
            raise Invalid(f"is {_name(value)}, not a tuple")
        if len(value) > MAX_ITEMS:
            raise Invalid(f"has {len(value)} items")
        walk.count(len(value))
        found = set(map(type, value))
        if not found <= allowed:
            raise Invalid(f"holds {_name(next(iter(found - allowed)))}, not {kind.__name__}")
        if kind is float and any(map(math.isnan, value)):
            raise Invalid("holds NaN")
        if kind is str and any(len(x) > MAX_TEXT for x in value):
            raise Invalid("holds a string too long")

    return check


def _tuple_of(item, inner):
    def check(value, walk):
        if type(value) is not tuple:
            raise Invalid(f"is {_name(value)}, not a tuple")
        if len(value) > MAX_ITEMS:
            raise Invalid(f"has {len(value)} items")
        if not walk.first_visit(value, item):  # shared by reference: checked once
            return
        walk.count(len(value))
        for i, x in enumerate(value):
            try:
                inner(x, walk)
            except Invalid as exc:
                raise exc.at(f"[{i}]") from None

    return check


def _optional(inner):
    def check(value, walk):
        if value is not None:
            inner(value, walk)

    return check


def _is_kind(kind) -> bool:
    return isinstance(kind, type) and issubclass(kind, enum.Enum)


def _kind(enum_cls):
    """A str Enum field: its member, or (older formats) its plain name, which the record upgrades."""
    names = frozenset(k.value for k in enum_cls)

    def check(value, walk):
        if not isinstance(value, str) or value not in names:
            raise Invalid(f"is not a {enum_cls.__name__}")

    return check


def _record(cls):
    fields = []

    def check(value, walk):
        if type(value) is not cls:
            raise Invalid(f"is {_name(value)}, not {cls.__name__}")
        # A record that holds only plain values costs the same to check again as to
        # remember: the walk's count bounds how often. Others are checked once.
        if not leaf and not walk.first_visit(value, cls):
            return
        walk.count(1)
        state = vars(value)
        if len(state) > len(fields) or not state.keys() <= names:
            raise Invalid(f"has unknown fields {sorted(set(state) - names)}")
        for name, field_check, default in fields:
            if name not in state:  # written by an older format: the default stands
                if default is dataclasses.MISSING:
                    raise Invalid(f"lacks {name}")
                object.__setattr__(value, name, default)
            try:
                field_check(state[name], walk)
            except Invalid as exc:
                raise exc.at(f".{name}") from None
        for name in kinds:
            if type(state[name]) is str:  # an older format wrote the kind's plain name
                object.__setattr__(value, name, hints[name](state[name]))

    names: set[str] = set()
    hints = _HINTS[cls]
    kinds = [f.name for f in dataclasses.fields(cls) if _is_kind(hints[f.name])]
    _CHECKS[cls] = check  # before its fields: a record may (in future) nest its own kind
    for f in dataclasses.fields(cls):
        fields.append((f.name, _compile(_HINTS[cls][f.name]), f.default))
        names.add(f.name)
    leaf = all(_plain(_HINTS[cls][name]) for name in names)
    return check


def _plain(kind) -> bool:
    """A field type holding no records: primitives, kinds, and tuples or options of them."""
    args = [a for a in typing.get_args(kind) if a is not type(None) and a is not Ellipsis]
    if args:
        return all(_plain(a) for a in args)
    return kind in _PRIMITIVES or _is_kind(kind)


_CHECKS: dict = {}


def _compile(kind):
    """A checker for one declared field type, built once per type."""
    if kind in _CHECKS:
        return _CHECKS[kind]
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [k for k in typing.get_args(kind) if k is not type(None)]
        check = _optional(_compile(inner))
    elif origin is tuple:
        item, dots = typing.get_args(kind)
        if dots is not Ellipsis:
            raise TypeError(f"the codec checks tuple[X, ...] fields, not {kind}")
        check = _tuple_of_primitives(item) if item in _PRIMITIVES else _tuple_of(item, _compile(item))
    elif kind in _HINTS:
        return _record(kind)
    elif _is_kind(kind):
        check = _kind(kind)
    elif kind in _PRIMITIVES:
        check = _primitive(kind)
    else:
        raise TypeError(f"the codec has no check for fields of type {kind}")
    _CHECKS[kind] = check
    return check


_CHECK_RESULT = _compile(records.CommitResult)


def encode(result: records.CommitResult) -> bytes:
    envelope = {"format": FORMAT, "version": FORMAT_VERSION, "result": result}
    return container.pack(pickle.dumps(envelope, protocol=pickle.HIGHEST_PROTOCOL))


def decode(data: bytes, where: str) -> records.CommitResult:
    data = container.unpack(data, where)  # format 7 compresses; older files are the pickle itself
    try:
        envelope = _Unpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise RegressError(
            f"{where} is not a regress result file ({exc}); nothing was run from it; delete or move it away"
        ) from None
    except Exception as exc:  # noqa: BLE001 - truncated or garbage bytes raise many kinds
        raise RegressError(
            f"{where} is corrupt ({type(exc).__name__}); delete it and measure that commit again"
        ) from None
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
        _CHECK_RESULT(result, _Walk())
    except (Invalid, RecursionError) as exc:
        raise RegressError(
            f"{where} is not a valid regress result file ({exc}); delete it and measure that commit again"
        ) from None
    return result if version >= 6 else upgrade.one_run(result)
