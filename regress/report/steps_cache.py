"""A series' change points, kept beside the summary: `regressions` after a site build finds them, not recomputes them.

`changepoints.find_steps` segments every benchmark's whole history: a new
commit can move any step, so a new file means computing them afresh. But
the site build and `regress regressions` (and a second `regressions`) ask
for the steps of the same files; the first to compute them keeps them
(`storage/computed.py`) under a digest of every file's content digest in
history order, the threshold, the code identities and the analysis code.
A hit needs no light history at all: `regressions` then reads only the
commit list.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable

from regress.analysis.changepoints import Step
from regress.core.records import BenchmarkId
from regress.report.verdict_cache import bid_fields
from regress.storage import summary
from regress.storage.computed import Computed, analysis_code

_FIELDS = [f.name for f in dataclasses.fields(Step)]


def encode(steps: list[Step]) -> bytes:
    return json.dumps([{**{f: getattr(s, f) for f in _FIELDS}, "id": bid_fields(s.id)} for s in steps]).encode()


def decode(data: bytes) -> list[Step]:
    return [Step(**{**row, "id": BenchmarkId(*row["id"])}) for row in json.loads(data)]


def _key(store, machine: str, env: str, shas: list[str], threshold: float, code: dict[str, str] | None) -> str | None:
    digests = summary.digests(store, machine, env)
    if any(sha not in digests for sha in shas):
        return None  # a file the summary does not know: nothing to key it by
    h = hashlib.sha256(f"{analysis_code()} {threshold!r} {sorted((code or {}).items())}".encode())
    for sha in shas:
        h.update(f" {sha}:{digests[sha]}".encode())
    return h.hexdigest()


def steps_for(
    store, machine: str, env: str, shas: list[str], *, threshold: float, code, compute: Callable[[], list[Step]]
) -> list[Step]:
    """The steps of machine/env's history `shas` (oldest first): kept ones if nothing changed, else `compute()`'s."""
    cache = Computed(store.root, f"steps {machine}/{env}")
    try:
        key = _key(store, machine, env, shas, threshold, code)
        data = cache.get(key) if key is not None else None
        if data is not None:
            try:
                return decode(data)
            except (ValueError, KeyError, TypeError):
                pass  # garbled: computed afresh and replaced
        found = compute()
        if key is not None:
            cache.put(key, encode(found))
        return found
    finally:
        cache.close()
