"""The worker's job and messages cross a process boundary as JSON: built back only with every field checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regress.core.kinds import FailureKind
from regress.core.records import BenchmarkId, Failure, Sample, TaskSpec
from regress.measure import protocol
from regress.measure.job import Callgrind, JobMode, WorkerJob
from regress.measure.shard import Shard


def a_job(**changes) -> WorkerJob:
    fields = dict(
        cwd=Path("/c"),
        import_path=Path("/c/src"),
        benchmarks_dir=Path("/c/benchmarks"),
        shown_root=Path("/c"),
        machine="box",
        env="default",
        mode=JobMode.INSTRUCTIONS,
        shard=Shard(2, 4),
        skip=(BenchmarkId("ops", "add", "", 1),),
        callgrind=Callgrind(Path("/tmp/cg"), None, 10, 3),
    )
    return WorkerJob(**{**fields, **changes})


def test_a_job_survives_the_trip_through_json():
    job = a_job()
    back = WorkerJob.parse(json.loads(json.dumps(job.plain())))
    assert back == job and back.mode is JobMode.INSTRUCTIONS and isinstance(back.cwd, Path)


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"mode": "fast"}, "job.mode is not a JobMode"),
        ({"warmup": "1"}, "job.warmup is str, not int"),
        ({"skip": [["ops", "add", "", "one"]]}, "job.skip[0] is list, not an object with the fields of BenchmarkId"),
        ({"surprise": 1}, "job has unknown fields ['surprise']"),
    ],
)
def test_a_job_that_is_not_one_is_refused_naming_the_field(change, problem):
    data = {**a_job().plain(), **change}
    with pytest.raises(ValueError, match="not a worker job") as err:
        WorkerJob.parse(data)
    assert problem in str(err.value)


def test_messages_round_trip_and_are_typed():
    sent = [
        protocol.Discovered((protocol.Listed(TaskSpec("f()", label="ops"), "bench.py:3"),)),
        protocol.Start(0),
        protocol.Result(0, Sample(10, (0.5, 0.25), 1.0)),
        protocol.Failed(0, Failure(FailureKind.ERROR, "boom", "bench.py:4")),
        protocol.Done(),
    ]
    back = [protocol.parse(protocol.encode(m)) for m in sent]
    assert back == sent
    assert back[3].failure.kind is FailureKind.ERROR
    assert json.loads(protocol.encode(protocol.Start(0)))["type"] == protocol.Message.START


@pytest.mark.parametrize(
    "line, problem",
    [
        (b"not json", "a line that is not JSON"),
        (b"[1, 2]", "a JSON list, not a message object"),
        (b'{"type": "exec", "code": "rm"}', "a message of unknown type 'exec'"),
        (b'{"type": {"x": 1}}', "a message of unknown type"),
        (b'{"type": "start"}', "start lacks index"),
        (b'{"type": "start", "index": true}', "start.index is bool, not int"),
        (
            b'{"type": "discovered", "benchmarks": [{"spec": {"stmt": "f()", "evil": 1}, "origin": "x"}]}',
            "discovered.benchmarks[0].spec has unknown fields ['evil']",
        ),
        (
            b'{"type": "result", "index": 0, "sample": {"number_per_run": 1, "raw_times": [NaN]}}',
            "result.sample.raw_times[0] is NaN",
        ),
        (
            b'{"type": "failed", "index": 0, "failure": {"kind": "error", "message": "m", "where": 3}}',
            "failed.failure.where is int, not str",
        ),
        (b'{"type": "done", "then": "more"}', "done has unknown fields ['then']"),
        (b"[" * 100000 + b"]" * 100000, "a line that is not JSON"),
    ],
)
def test_a_malformed_message_is_one_line_saying_what_is_wrong(line, problem):
    with pytest.raises(protocol.Malformed) as err:
        protocol.parse(line)
    assert problem in str(err.value)
