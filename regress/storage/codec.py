"""A results file's bytes <-> a CommitResult, refusing anything that is not one.

Loading is a trust boundary (anyone who can push to the results branch writes files): the unpickler
builds only the record classes and plain containers, then every field is checked against its type
and a size limit (`core/checks.py`), so a crafted file is refused in bounded time.

Format versions (bump FORMAT_VERSION and add a line for every change; `one_run` and
`unpack` read older files as today's):
  1  first format: {"format": "regress-results", "version": 1, "result": CommitResult}
  2  BenchmarkResult.counts (InstructionCount records) added; version 1 files
     read as having no counts
  3  CommitResult.reference (the reference workload's Samples, one per round)
     and Settings.min_rounds/max_rounds/budget (the round plan) added;
     versions 1 and 2 read as having no reference rounds and a 1-round plan
  4  the record classes moved from regress.model to regress.core.records (the
     pickles name the new module), and Failure.kind is a FailureKind; older
     files load through the old name, their kinds read from plain strings
  5  BenchmarkResult.memory (MemoryUse: bytes allocated and peak per call),
     .compiled (CompileStats: compile time, graphs, graph breaks, recompiles)
     and .tracked (TrackedValue: a track_* function's values) added; versions
     1-4 read as having none of them
  6  Sample.run and .process (the run that took a round and the process it
     was forked from) and CommitResult.runs (Run records: id, kind, start,
     fingerprint) added; versions 1-5 read as one run per file (kind "file",
     the file's fingerprint), every round of the file in it
  7  the file is compressed (`pack`: a magic header, then zlib of the
     pickle); the records are format 6's. Files without the header are
     read as the pickle itself, so versions 1-6 load as they did
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import zlib

from regress.core import checks, records
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind

FORMAT = "regress-results"
FORMAT_VERSION = 7
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)
MAGIC = b"RGRZ\x01"  # "regress, zlib", container version 1
LEVEL = 6
# Far above any real results file (a suite of thousands of benchmarks), far below exhausting memory.
MAX_BYTES = 1 << 30

_RECORDS = {
    name: cls
    for name, cls in vars(records).items()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == records.__name__
}
_ALLOWED: dict[tuple[str, str], type] = {("regress.core.records", name): cls for name, cls in _RECORDS.items()}
_ALLOWED.update({("regress.model", name): cls for name, cls in _RECORDS.items()})  # formats 1-3
_ALLOWED[("regress.core.kinds", "FailureKind")] = FailureKind


class Refused(pickle.UnpicklingError):
    pass


class Unpickler(pickle.Unpickler):
    """Builds only the classes of `allowed` (and plain Python values); any other raises Refused."""

    allowed = _ALLOWED

    def find_class(self, module: str, name: str):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise Refused(f"refusing to load {module}.{name}") from None


_CHECK_RESULT = checks.checker(records.CommitResult)


def encode(result: records.CommitResult) -> bytes:
    envelope = {"format": FORMAT, "version": FORMAT_VERSION, "result": result}
    return pack(pickle.dumps(envelope, protocol=pickle.HIGHEST_PROTOCOL))


def decode(data: bytes, where: str) -> records.CommitResult:
    data = unpack(data, where)  # format 7 compresses; older files are the pickle itself
    try:
        envelope = Unpickler(io.BytesIO(data)).load()
    except Refused as exc:
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
        _CHECK_RESULT(result, checks.Walk())
    except (checks.Invalid, RecursionError) as exc:
        why = exc.under("result") if isinstance(exc, checks.Invalid) else exc
        raise RegressError(
            f"{where} is not a valid regress result file ({why}); delete it and measure that commit again"
        ) from None
    assert isinstance(result, records.CommitResult)  # what _CHECK_RESULT passes
    return result if version >= 6 else one_run(result)


def pack(payload: bytes) -> bytes:
    """A file's bytes (format 7): MAGIC, then the pickle zlib-compressed."""
    return MAGIC + zlib.compress(payload, LEVEL)


def unpack(data: bytes, where: str) -> bytes:
    """The pickle inside `data` (itself, for an uncompressed file of formats 1-6); decompression is capped
    at MAX_BYTES, as result files are a trust boundary."""
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


def one_run(result: records.CommitResult) -> records.CommitResult:
    """A file from before runs were recorded (format <= 5): all its rounds are one run, the file's own."""
    run = records.Run(
        id=f"file-{result.commit.sha[:12]}-{int(result.started_at)}",
        kind="file",
        started_at=result.started_at,
        fingerprint=result.fingerprint,
    )

    def stamp(samples):
        return tuple(dataclasses.replace(s, run=run.id) for s in samples)

    return dataclasses.replace(
        result,
        results=tuple(dataclasses.replace(r, samples=stamp(r.samples)) for r in result.results),
        reference=stamp(result.reference),
        runs=(run,),
    )
