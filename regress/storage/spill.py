"""Large kept values in files of their own beside the summary, the summary's row naming the file.

A 10,000-commit history keeps about 360 MB of joined figure blocks
(`analysis/table_blocks.py`) and a 50 MB sealed prefix in the summary's
`computed` table. SQLite keeps a blob that size on a chain of 4 KB overflow
pages, read one page at a time: the first read of the blocks in a fresh
process took 0.4-1.0 s, where one `read` of each file takes 0.03 s. So a
value of SPILL bytes or more is written to `<results>/.summary.d/` (atomically,
under a name of its own that is never reused) and the row holds a short
reference: the file's name and length. A reference whose file is missing or
of another length reads as no value (the caller computes it afresh), as a
lost entry would. CI keeps that folder with the summary (benchmarks.yml).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import time
from pathlib import Path

from regress.storage.atomic import write_atomic

FOLDER = ".summary.d"
# Values this long or longer go to a file.
SPILL = 1 << 20
MARK = b"\x00regress-spill\x00"
# A file no row names is removed once it is this old (a build that wrote it may not have committed yet).
ORPHAN_AGE = 3600.0


def folder(root: Path) -> Path:
    return root / FOLDER


def stored(root: Path, kind: str, key: str, value: bytes) -> bytes:
    """What the row holds for `value`: the value itself, or a reference to the file written for it."""
    if len(value) < SPILL:
        return value
    tag = hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()[:24]
    name = f"{tag}-{secrets.token_hex(6)}.bin"
    try:
        write_atomic(folder(root) / name, value, sync=False)  # a cache: a lost file is a value made again
    except OSError:
        return value  # no room for the file: in the row, as before
    return MARK + f"{name} {len(value)}".encode()


def loaded(root: Path, held: bytes | None) -> bytes | None:
    """The value a row holds (`stored`'s), None where its file is gone or is not the one written."""
    if held is None or not held.startswith(MARK):
        return held
    named = _named(held)
    if named is None:
        return None
    name, length = named
    try:
        with open(folder(root) / name, "rb") as fh:
            data = fh.read(length + 1)
    except OSError:
        return None
    return data if len(data) == length else None


def _named(held: bytes) -> tuple[str, int] | None:
    try:
        name, length = held[len(MARK) :].decode("ascii").split(" ")
        if "/" in name or "\\" in name or name.startswith("."):
            return None
        return name, int(length)
    except (UnicodeDecodeError, ValueError):
        return None


def named(values) -> set[str]:
    """The files the given row values name."""
    out = set()
    for held in values:
        found = _named(held) if isinstance(held, bytes) and held.startswith(MARK) else None
        if found is not None:
            out.add(found[0])
    return out


def sweep(root: Path, keep: set[str]) -> None:
    """Files no row names (`keep`: those some row does) removed, once old enough not to be a
    concurrent build's that has not committed its rows yet."""
    where = folder(root)
    if not where.is_dir():
        return
    now = time.time()
    with os.scandir(where) as it:
        for entry in it:
            if entry.name in keep or not entry.name.endswith(".bin"):
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > ORPHAN_AGE:
                    os.unlink(entry.path)


def remove(root: Path, names: set[str]) -> None:
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(folder(root) / name)
