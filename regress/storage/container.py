"""A results file's outer layer: the pickle's bytes, zlib-compressed (format 7), after `MAGIC`.

A file without `MAGIC` is a pickle as formats 1-6 wrote them. Decompression
is capped (`MAX_BYTES`): result files are a trust boundary.
"""

from __future__ import annotations

import zlib

from regress.core.errors import RegressError

MAGIC = b"RGRZ\x01"  # "regress, zlib", container version 1
LEVEL = 6
# Far above any real results file (a suite of thousands of benchmarks), far below exhausting memory.
MAX_BYTES = 1 << 30


def pack(payload: bytes) -> bytes:
    return MAGIC + zlib.compress(payload, LEVEL)


def unpack(data: bytes, where: str) -> bytes:
    """The pickle inside `data` (itself, for an uncompressed file of formats 1-6)."""
    if not data.startswith(MAGIC):
        return data
    inflate = zlib.decompressobj()
    try:
        payload = inflate.decompress(memoryview(data)[len(MAGIC) :], MAX_BYTES)
    except zlib.error:
        raise RegressError(
            f"{where} is corrupt (bad compressed data); delete it and measure that commit again"
        ) from None
    if inflate.unconsumed_tail:
        raise RegressError(f"{where} holds more than {MAX_BYTES >> 20} MiB of results; delete or move it away")
    if not inflate.eof:
        raise RegressError(f"{where} is corrupt (truncated); delete it and measure that commit again")
    return payload
