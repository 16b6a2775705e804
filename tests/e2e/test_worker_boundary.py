"""A worker is another process, maybe a hostile one: what it sends is checked, and how it is started.

The fake worker below is a real interpreter started the way regress starts
its workers (it is given as the project's python, so regress also tries it
as a fork server first, and it refuses to be one). Its first start sends one
crafted line in place of a message; any restart behaves. Each crafted line
must become one clear failure, of the benchmark it was about or of the
worker, never a traceback or an arbitrary object.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from regress.core.config import Config
from regress.core.kinds import FailureKind
from regress.core.records import CommitInfo, Settings
from regress.measure import one_commit
from regress.measure.worker_process import close_servers

FAKE = """#!{python}
import json, os, sys
if sys.argv[-2:-1] != ["regress.measure.worker"]:
    sys.exit("not a fork server")  # started as one: refuse, so regress starts fresh workers
out = os.fdopen(int(sys.argv[-1]), "wb", buffering=0)
job = json.loads(sys.stdin.read())
starts = os.path.join(os.environ["FAKE_DIR"], "starts")
first = not os.path.exists(starts)
open(starts, "a").write("x")
crafted = json.loads(os.environ["FAKE_CASE"]) if first else {{}}
skip = [b["sub_label"] for b in job["skip"]]
names = [n for n in ("a", "b") if n not in skip]


def send(stage, msg):
    line = crafted.get(stage)
    out.write((line if line is not None else json.dumps(msg)).encode() + b"\\n")


send("hello", {{"type": "hello", "pid": os.getpid(), "fingerprint": {{"machine": "box"}}}})
specs = [{{"spec": {{"stmt": n + "()", "label": "ops", "sub_label": n}}, "origin": "bench.py:1"}} for n in names]
send("discovered", {{"type": "discovered", "benchmarks": specs, "failures": []}})
for i, n in enumerate(names):
    send("start " + n, {{"type": "start", "index": i}})
    sample = {{"number_per_run": 1, "raw_times": [0.001, 0.002], "started_at": 1.0}}
    send(n, {{"type": "result", "index": i, "sample": sample}})
send("done", {{"type": "done"}})
"""

SPEC_EXTRA = json.dumps(
    {
        "type": "discovered",
        "benchmarks": [{"spec": {"stmt": "a()", "label": "ops", "os": "rm -rf"}, "origin": "bench.py:1"}],
    }
)
CASES = {
    "unknown field": (
        "hello",
        '{"type": "hello", "pid": 1, "fingerprint": {"machine": "box", "__class__": "os.system"}}',
        None,
        "worker sent a hello message: hello.fingerprint has unknown fields ['__class__'] while importing the suites",
    ),
    "taskspec with extra keys": (
        "discovered",
        SPEC_EXTRA,
        None,
        "discovered.benchmarks[0].spec has unknown fields ['os'] while importing the suites",
    ),
    "wrong type": (
        "a",
        '{"type": "result", "index": 0, "sample": {"number_per_run": 1, "raw_times": ["fast"]}}',
        "a",
        "worker sent a result message: result.sample.raw_times[0] is str, not float",
    ),
    "not json": ("a", "<html>", "a", "worker sent a line that is not JSON"),
    "unknown type": ("a", '{"type": "pickle", "data": "gASV"}', "a", "a message of unknown type 'pickle'"),
    "another benchmark's end": (
        "a",
        '{"type": "failed", "index": 1, "failure": {"kind": "error", "message": "x"}}',
        "a",
        "worker sent an end of benchmark 1 while 0 runs",
    ),
    "index out of range": (
        "start a",
        '{"type": "start", "index": 7}',
        None,
        "worker sent a message about benchmark 7 of 2 listed between benchmarks",
    ),
}


@pytest.fixture
def fake_python(tmp_path, monkeypatch):
    path = tmp_path / "fake-python"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    yield path
    close_servers()


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_message_is_one_clear_failure(case, fake_python, tmp_path, monkeypatch):
    stage, line, blamed, message = CASES[case]
    monkeypatch.setenv("FAKE_CASE", json.dumps({stage: line}))
    cfg = Config(root=tmp_path, machine="box", python=str(fake_python))
    info = CommitInfo("c" * 40, (), "A", "a@x", 0, 0, "c")
    req = one_commit.Request(info, Settings(timeout=30.0), tmp_path, tmp_path / "benchmarks", tmp_path)
    got = one_commit.measure_commit(cfg, req)
    failed = {k.sub_label: r.failure for k, r in got.results.items() if r.failure is not None}
    if blamed is None:  # the worker's fault, not a benchmark's
        assert failed == {} and len(got.failures) == 1, got
        problems = got.failures[0]
    else:
        assert list(failed) == [blamed] and got.failures == [], got
        problems = failed[blamed]
    assert problems.kind is FailureKind.CRASH and message in problems.message, problems
    measured = sorted(k.sub_label for k, r in got.results.items() if r.ok)
    # A crafted line before the list is known stops the commit; after it, a fresh worker takes the rest.
    assert measured == ([] if stage in ("hello", "discovered") else sorted({"a", "b"} - {blamed}))
    for r in got.results.values():
        assert all(type(t) is float for s in r.samples for t in s.raw_times)


def test_a_crafted_message_in_a_run_is_recorded_and_shown(repo, fake_python, tmp_path):
    env = {"FAKE_DIR": str(tmp_path), "FAKE_CASE": json.dumps({"discovered": SPEC_EXTRA})}
    run = repo.regress("run", "HEAD", "--python", str(fake_python), env=env)
    # Exit 1, as for any commit whose suites failed: the failure is the worker's, said in one line.
    assert run.returncode == 1 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert "spec has unknown fields ['os'] while importing the suites" in run.stdout
    shown = repo.regress("show", "HEAD", env=env)
    assert "spec has unknown fields ['os']" in shown.stdout + shown.stderr, shown.stdout
    assert "Traceback" not in shown.stderr


PROBE = """
import json, os, sys
import cProfile  # imports the stdlib's `profile`: it must be that one, whatever regress ships

import torch.utils.benchmark as benchmark

MEASURE = os.path.join({root!r}, "regress", "measure")
with open(os.environ["PROBE_OUT"], "a") as fh:
    fh.write(json.dumps({{
        "path": sys.path,
        "argv": sys.orig_argv,  # how the interpreter (or the fork server it came from) was started
        "profile": sys.modules["profile"].__file__,
        "shadowed": [name for name, m in list(sys.modules.items())
                     if os.path.dirname(os.path.abspath(getattr(m, "__file__", None) or "/")) == MEASURE
                     and not name.startswith("regress.measure.")],
    }}) + "\\n")

def bench_nothing():
    yield benchmark.Timer(stmt="pass", label="probe")
"""


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "fresh"])
def test_a_worker_never_has_regress_measure_on_its_path(repo, tmp_path, fork):
    root = str(Path(one_commit.__file__).resolve().parents[2])
    repo.write("benchmarks/bench_probe.py", PROBE.format(root=root))
    out = tmp_path / "probe.jsonl"
    listed = repo.regress("list", env={"PROBE_OUT": str(out), "REGRESS_FORK": fork})
    assert listed.returncode == 0, listed.stderr
    (seen,) = [json.loads(line) for line in out.read_text().splitlines()]
    measure = Path(root) / "regress" / "measure"
    assert [p for p in seen["path"] if p and Path(p).resolve() == measure] == []
    assert "" not in seen["path"] and os.path.dirname(seen["profile"]) != str(measure)
    assert seen["shadowed"] == []
    # Never started as a script of regress/measure/, which would put that folder first on sys.path.
    assert [a for a in seen["argv"] if Path(a).parent == measure] == [], seen["argv"]
