"""Enum fields a result file holds as plain names: how the records that have them pickle.

Result files of format 7 and older hold `Settings.mode`, `.benchmarks_from` and
`TrackedValue.better` as strings. Written so still, every file stays readable by
any regress of the format; read through any unpickler (the codec's, the
summary's), the strings become the Enums again, so the annotations hold.
"""

from __future__ import annotations

import typing
from enum import Enum


class PlainKinds:
    """A record's base: its Enum fields pickle as their values and read back (or are built) as members."""

    _kinds: typing.ClassVar[dict[str, type[Enum]]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        # Resolved now, while the defining module's names are there: a worker purges regress's
        # modules from sys.modules, and later lookups by module name find nothing.
        super().__init_subclass__(**kwargs)
        hints = typing.get_type_hints(cls)
        cls._kinds = {n: t for n, t in hints.items() if isinstance(t, type) and issubclass(t, Enum)}

    def __post_init__(self) -> None:
        for name, kind in self._kinds.items():
            object.__setattr__(self, name, kind(getattr(self, name)))

    def __getstate__(self) -> dict:
        return {k: v.value if isinstance(v, Enum) else v for k, v in vars(self).items()}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            kind = self._kinds.get(name)
            if kind is not None and type(value) is str and value in kind._value2member_map_:
                value = kind(value)  # a name that is no member stays a string, for the codec to refuse
            object.__setattr__(self, name, value)
