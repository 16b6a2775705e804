"""One encoding for values regress keeps: JSON with numpy arrays and registered records inside (no pickle).

A record is a frozen dataclass (or an Enum) named by `record`; decoding rebuilds only those, field by
field, never through code the bytes could name: anything else is a ValueError.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from enum import Enum
from typing import Any

import numpy as np

_ARRAY, _RECORD, _ENUM = "__array__", "__record__", "__enum__"
_DECODER = json.JSONDecoder()
_RECORDS: dict[str, type] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_ENUMS: dict[str, type[Enum]] = {}


def record(*classes: Any) -> Any:
    """Names frozen dataclasses (without slots) and Enums that trees may hold; usable as a decorator."""
    for cls in classes:
        name = cls.__qualname__
        if issubclass(cls, Enum):
            if _ENUMS.setdefault(name, cls) is not cls:
                raise TypeError(f"two Enums named {name}")
            continue
        params = getattr(cls, "__dataclass_params__", None)
        if params is None or not params.frozen or "__slots__" in cls.__dict__:
            raise TypeError(f"{name} is not a frozen dataclass without slots")
        if _RECORDS.setdefault(name, cls) is not cls:
            raise TypeError(f"two records named {name}")
        _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return classes[0] if len(classes) == 1 else None


def _field(v: Any) -> Any:
    """A record's field; an Enum member (which JSON would write as its bare value) marked."""
    if not isinstance(v, Enum):
        return v
    if _ENUMS.get(type(v).__qualname__) is not type(v):
        raise TypeError(f"{type(v).__name__} is not a record")
    return {_ENUM: [type(v).__qualname__, v.value]}


def encode(value: Any) -> bytes:
    """A JSON-able value with numpy arrays and scalars and records inside as bytes: a 4-byte length, the
    JSON, then each array's little-endian bytes."""
    arrays: list[np.ndarray] = []

    def default(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                raise TypeError("an array of objects is not kept")
            a = np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<"))
            arrays.append(a)
            return {_ARRAY: [a.dtype.str, list(a.shape)]}
        if isinstance(v, np.generic):
            return v.item()
        names = _FIELDS.get(type(v))
        if names is not None:
            return {_RECORD: [type(v).__qualname__, [_field(getattr(v, n)) for n in names]]}
        raise TypeError(f"{type(v).__name__} is not kept")

    head = json.dumps(value, default=default, separators=(",", ":")).encode()
    return struct.pack("<I", len(head)) + head + b"".join(a.tobytes() for a in arrays)


def decode(data: bytes) -> Any:
    """`encode`'s value back (tuples as lists; each array a read-only view of `data`); ValueError where
    `data` is not such bytes or names a record not registered."""
    try:
        (n,) = struct.unpack_from("<I", data)
        head = data[4 : 4 + n].decode()
        at = 4 + n
        if len(head) != n or "__" not in head:  # no arrays nor records: the plain decoder
            if at != len(data):
                raise ValueError("a kept value of the wrong length")
            return _DECODER.decode(head)

        def hook(d: dict) -> Any:
            nonlocal at
            if len(d) != 1:
                return d
            if _RECORD in d:
                name, values = d[_RECORD]
                cls = _RECORDS[name]
                names = _FIELDS[cls]
                if len(values) != len(names):
                    raise ValueError(f"a {name} of {len(values)} fields")
                v: Any = object.__new__(cls)  # not its __init__: the fields as they were kept
                v.__dict__.update(zip(names, values))
                return v
            if _ENUM in d:
                name, value = d[_ENUM]
                return _ENUMS[name](value)
            spec = d.get(_ARRAY)
            if spec is None:
                return d
            dtype, shape = np.dtype(spec[0]), tuple(int(k) for k in spec[1])
            count = int(np.prod(shape, dtype=np.int64))
            a = np.frombuffer(data, dtype=dtype, count=count, offset=at).reshape(shape)
            at += dtype.itemsize * count
            return a

        value = json.loads(head, object_hook=hook)
    except (struct.error, TypeError, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a kept value: {exc}") from None
    if at != len(data):
        raise ValueError("a kept value of the wrong length")
    return value
