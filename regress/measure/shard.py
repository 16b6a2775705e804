"""`--shard K/N`: the share of the benchmarks that one of N parallel CI jobs measures.

A benchmark's shard is a hash of its identity alone, so it never depends on
what else was discovered, on `--skip-existing` or on which worker restarted:
N jobs given 1/N .. N/N measure every benchmark exactly once between them, and
`regress merge` puts their results back together. The hash is sha1, not
Python's `hash()`, which differs between processes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from regress.core.records import BenchmarkId

_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as CI matrices count
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"

    def takes(self, bid: BenchmarkId) -> bool:
        return shard_of(bid, self.total) == self.index


def shard_of(bid: BenchmarkId, total: int) -> int:
    """Which of `total` shards (1-based) measures the benchmark `bid`."""
    key = "\0".join((bid.label, bid.sub_label, bid.description, str(bid.num_threads)))
    return int.from_bytes(hashlib.sha1(key.encode("utf-8")).digest()[:8], "big") % total + 1


def parse(text: str) -> Shard:
    """'2/4' -> Shard(2, 4); ValueError with the fix otherwise."""
    m = _FORM.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a shard; write it as K/N, like 1/4")
    index, total = int(m.group(1)), int(m.group(2))
    if total < 1 or not 1 <= index <= total:
        raise ValueError(f"{text!r} is not a shard; K/N needs 1 <= K <= N, like 1/4 .. 4/4")
    return Shard(index, total)
