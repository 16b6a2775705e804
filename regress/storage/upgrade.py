"""Older result formats read as today's: what a file from before a format change means now.

Format versions (bump codec.FORMAT_VERSION and add a line for every change):
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
  7  the file is compressed (`container.py`: a magic header, then zlib of
     the pickle); the records are format 6's. Files without the header are
     read as the pickle itself, so versions 1-6 load as they did
"""

from __future__ import annotations

import dataclasses

from regress.core import records


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
