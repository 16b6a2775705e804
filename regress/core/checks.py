"""Field checks for records that cross a trust boundary: a results file, a worker's message, a worker's job.

Every field of every record is checked against its declared type and a size
limit, walking each object once: a few KB that nest tuples 60 deep (2^60
leaves by reference) or swap a string for a dict are refused in bounded time
instead of hanging whatever reads them next. `checker` checks records already
built (the results codec's unpickled objects); `from_plain` builds records
from JSON-shaped data (dicts, lists, plain values) with the same checks, so a
hostile worker can send bad data but never an arbitrary object. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path

# Limits far above anything measured (a string the size of a long stack
# trace; more rounds and blocks than any run takes), far below a hang.
MAX_TEXT = 1 << 20
MAX_ITEMS = 1 << 20
MAX_NODES = 1 << 23


class Invalid(Exception):
    """What is wrong, and where in the record (built outwards as it propagates)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what, self.path = what, ""

    def at(self, step: str) -> Invalid:
        self.path = step + self.path
        return self

    def under(self, root: str) -> str:
        """The problem named from `root` down: 'result.commit.subject is tuple, not str'."""
        return f"{root}{self.path} {self.what}"

    def __str__(self) -> str:
        return self.under("value")


# A field's check: raises Invalid where the value (walked by the Walk) is not of its declared type.
Check = Callable[[typing.Any, "Walk"], None]

_PRIMITIVES = {float: {float, int}, int: {int}, str: {str}, bool: {bool}}


class Walk:
    """One boundary crossing's walk: each shared object checked once, and a bound on the values seen."""

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


def _is_record(kind) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _kind(enum_cls):
    """A str Enum field: its member, or (older formats) its plain name, which the record upgrades."""
    names = frozenset(k.value for k in enum_cls)

    def check(value, walk):
        if not isinstance(value, str) or value not in names:
            raise Invalid(f"is not a {enum_cls.__name__}")

    return check


@functools.cache
def hints(cls) -> dict:
    """A record's declared field types, resolved once."""
    return typing.get_type_hints(cls)


def _record(cls: type) -> Check:
    fields: list[tuple[str, Check, object]] = []

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
                object.__setattr__(value, name, declared[name](state[name]))

    names: set[str] = set()
    declared = hints(cls)
    kinds = [f.name for f in dataclasses.fields(cls) if _is_kind(declared[f.name])]
    _CHECKS[cls] = check  # before its fields: a record may (in future) nest its own kind
    for f in dataclasses.fields(cls):
        fields.append((f.name, checker(declared[f.name]), f.default))
        names.add(f.name)
    leaf = all(_plain(declared[name]) for name in names)
    return check


def _plain(kind) -> bool:
    """A field type holding no records: primitives, kinds, and tuples or options of them."""
    args = [a for a in typing.get_args(kind) if a is not type(None) and a is not Ellipsis]
    if args:
        return all(_plain(a) for a in args)
    return kind in _PRIMITIVES or _is_kind(kind)


_CHECKS: dict = {}


def checker(kind):
    """A checker `check(value, walk)` for one declared field type, built once per type."""
    if kind in _CHECKS:
        return _CHECKS[kind]
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [k for k in typing.get_args(kind) if k is not type(None)]
        check = _optional(checker(inner))
    elif origin is tuple:
        item, dots = typing.get_args(kind)
        if dots is not Ellipsis:
            raise TypeError(f"records check tuple[X, ...] fields, not {kind}")
        check = _tuple_of_primitives(item) if item in _PRIMITIVES else _tuple_of(item, checker(item))
    elif _is_record(kind):
        return _record(kind)
    elif _is_kind(kind):
        check = _kind(kind)
    elif kind in _PRIMITIVES:
        check = _primitive(kind)
    else:
        raise TypeError(f"records have no check for fields of type {kind}")
    _CHECKS[kind] = check
    return check


def from_plain(kind, data, walk: Walk | None = None):
    """`data` (as json.loads gives it) as a value of the declared type `kind`; Invalid if it is not one.

    A record comes from an object with only its fields (those without a default
    required), a tuple from a list, a kind from its name, a Path from a string;
    every plain value passes the same check as a stored record's field.
    """
    walk = walk if walk is not None else Walk()
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [k for k in typing.get_args(kind) if k is not type(None)]
        return None if data is None else from_plain(inner, data, walk)
    if origin is tuple:
        item = typing.get_args(kind)[0]
        if type(data) not in (list, tuple):
            raise Invalid(f"is {_name(data)}, not a list")
        if len(data) > MAX_ITEMS:
            raise Invalid(f"has {len(data)} items")
        walk.count(len(data))
        return tuple(_item(item, i, x, walk) for i, x in enumerate(data))
    if _is_record(kind):
        return _record_from(kind, data, walk)
    if kind is Path:
        checker(str)(data, walk)
        return Path(data)
    checker(kind)(data, walk)
    if _is_kind(kind):
        return kind(data)
    return float(data) if kind is float else data


def _item(kind, i: int, x, walk: Walk):
    try:
        return from_plain(kind, x, walk)
    except Invalid as exc:
        raise exc.at(f"[{i}]") from None


def _record_from(cls, data, walk: Walk):
    if type(data) is not dict:
        raise Invalid(f"is {_name(data)}, not an object with the fields of {cls.__name__}")
    walk.count(1)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise Invalid(f"has unknown fields {sorted(map(str, unknown))}")
    values = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Invalid(f"lacks {name}")
            continue
        try:
            values[name] = from_plain(hints(cls)[name], data[name], walk)
        except Invalid as exc:
            raise exc.at(f".{name}") from None
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a record's own check (__post_init__) refused it
        raise Invalid(f"is not a valid {cls.__name__} ({exc})") from None
