"""Enum fields a result file holds as plain names: how the records that have them pickle.

Result files of format 7 and older hold `Settings.mode`, `.benchmarks_from` and
`TrackedValue.better` as strings. Written so still, every file stays readable by
any regress of the format; read through any unpickler (the codec's, the
summary's), the strings become the Enums again, so the annotations hold.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import fields
from enum import Enum


class PlainKinds:
    """A record's base: its Enum fields pickle as their values and read back (or are built) as members."""

    def __post_init__(self) -> None:
        for name, kind in kind_fields(type(self)).items():
            object.__setattr__(self, name, kind(getattr(self, name)))

    def __getstate__(self) -> dict:
        return {k: v.value if isinstance(v, Enum) else v for k, v in vars(self).items()}

    def __setstate__(self, state: dict) -> None:
        kinds = kind_fields(type(self))
        for name, value in state.items():
            kind = kinds.get(name)
            if kind is not None and type(value) is str and value in kind._value2member_map_:
                value = kind(value)  # a name that is no member stays a string, for the codec to refuse
            object.__setattr__(self, name, value)


@functools.cache
def kind_fields(cls: type) -> dict[str, type[Enum]]:
    """A record class's fields declared as Enums, by name."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: hints[f.name]
        for f in fields(cls)
        if isinstance(hints[f.name], type) and issubclass(hints[f.name], Enum)
    }
