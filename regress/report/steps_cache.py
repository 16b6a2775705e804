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
import json
from collections.abc import Callable

from regress.analysis.changepoints import Step
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId
from regress.report.verdict_cache import bid_fields
from regress.storage import computed
from regress.storage.computed import plain

_FIELDS = [f.name for f in dataclasses.fields(Step)]


def encode(steps: list[Step]) -> bytes:
    return json.dumps(
        [{**{f: getattr(s, f) for f in _FIELDS}, "id": bid_fields(s.id)} for s in steps], default=plain
    ).encode()


def decode(data: bytes) -> list[Step]:
    return [
        Step(**{**row, "id": BenchmarkId(*row["id"]), "direction": Kind(row["direction"])}) for row in json.loads(data)
    ]


def _params(threshold: float, code) -> str:
    return f"{threshold!r} {sorted((code or {}).items())}"


def steps_for(
    store, machine: str, env: str, shas: list[str], *, threshold: float, code, compute: Callable[[], list[Step]]
) -> list[Step]:
    """The steps of machine/env's history `shas` (oldest first): kept ones if nothing changed, else `compute()`'s."""
    return computed.kept(store, "steps", machine, env, shas, _params(threshold, code), compute, encode, decode)


def entry(store, machine: str, env: str, shas: list[str], *, threshold: float, code, digests=None) -> computed.Kept:
    """`steps_for` in two halves (`computed.Kept`): the kept steps or None now, `keep(encode(steps))` later.
    `digests`: the files' content digests, where the caller read them already."""
    return computed.Kept(store, "steps", machine, env, shas, _params(threshold, code), decode, digests=digests)
