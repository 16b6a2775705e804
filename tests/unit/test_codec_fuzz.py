"""Hostile and malformed result files: each refused in bounded time, nothing executed,
and a history with one bad file still loads the others."""

from __future__ import annotations

import dataclasses
import pickle
import random
import time

import factories
import pytest

from regress.core.errors import RegressError
from regress.core.kinds import FailureKind
from regress.core.records import CommitInfo, CommitResult
from regress.storage.codec import FORMAT, FORMAT_VERSION, decode, encode
from regress.storage.store import Store


def good() -> CommitResult:
    return factories.commit("a", factories.bench([1e-3, 1.1e-3, 1.2e-3]), torch="2.13.0", reference=[1e-3, 1e-3])


def envelope(result) -> bytes:
    return pickle.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "result": result}, protocol=pickle.HIGHEST_PROTOCOL
    )


def poke(obj, name, value):
    """A copy of a frozen record with one field set to anything (what a hostile writer can pickle)."""
    copy = dataclasses.replace(obj)
    object.__setattr__(copy, name, value)
    return copy


def refused(data: bytes) -> str:
    started = time.perf_counter()
    with pytest.raises(RegressError) as exc:
        decode(data, "evil.pkl")
    assert time.perf_counter() - started < 2.0, "refusing a file must not take long"
    line = str(exc.value)
    assert "evil.pkl" in line and "\n" not in line
    return line


def deep_tuple(levels: int):
    x = ("leaf",)
    for _ in range(levels):
        x = (x, x)  # 2**levels leaves, all by reference: a tiny pickle
    return x


def test_a_tiny_file_with_2_to_the_60_leaves_is_refused_at_once():
    data = envelope(poke(good(), "commit", poke(good().commit, "subject", deep_tuple(60))))
    assert len(data) < 4000
    assert "result.commit.subject is tuple, not str" in refused(data)


def test_every_field_of_every_record_checks_its_type():
    result = good()
    bench = result.results[0]
    wrongs = [{"a": 1}, [1.0], deep_tuple(30), None, b"bytes", 1 + 2j, True]
    cases = []
    for record, rebuild in (
        (result, lambda r: r),
        (result.commit, lambda c: poke(result, "commit", c)),
        (result.fingerprint, lambda f: poke(result, "fingerprint", f)),
        (result.settings, lambda s: poke(result, "settings", s)),
        (bench, lambda b: poke(result, "results", (b,))),
        (bench.spec, lambda s: poke(result, "results", (poke(bench, "spec", s),))),
        (bench.samples[0], lambda s: poke(result, "results", (poke(bench, "samples", (s,)),))),
    ):
        for f in dataclasses.fields(record):
            for wrong in wrongs:
                value = getattr(record, f.name)
                if wrong is None and f.type.endswith("| None"):
                    continue  # None is that field's own value
                if type(wrong) is type(value) or (wrong is True and f.type == "bool"):
                    continue
                cases.append((f"{type(record).__name__}.{f.name}", rebuild(poke(record, f.name, wrong))))
    assert len(cases) > 250
    for name, hostile in cases:
        line = refused(envelope(hostile))
        # Wrong types are refused by the field check; foreign types (complex, bytes' class) already by the unpickler.
        assert "not a valid regress result file" in line or "nothing was run from it" in line, (name, line)


def test_extra_attributes_nan_and_wrong_containers_are_refused():
    result = good()
    sample = result.results[0].samples[0]
    odd = dataclasses.replace(sample)
    object.__setattr__(odd, "__class_getitem__", "x")  # an attribute the record does not declare
    assert "unknown fields" in refused(envelope(poke(result, "results", (poke(result.results[0], "samples", (odd,)),))))
    nan = poke(sample, "raw_times", (float("nan"),))
    assert "NaN" in refused(envelope(poke(result, "results", (poke(result.results[0], "samples", (nan,)),))))
    assert "not a tuple" in refused(envelope(poke(result, "results", list(result.results))))
    assert "is str, not CommitResult" in refused(envelope("just a string"))


def test_foreign_classes_are_never_built_or_called(tmp_path):
    marker = tmp_path / "ran"

    class Touch:
        def __reduce__(self):
            import pathlib

            return (pathlib.Path.touch, (pathlib.Path(marker),))

    for payload in (Touch(), {"format": FORMAT, "version": FORMAT_VERSION, "result": Touch()}, [Touch()]):
        line = refused(pickle.dumps(payload))
        assert "nothing was run from it" in line
    assert not marker.exists()


def test_truncated_and_garbage_bytes_are_refused():
    data = encode(good())
    rng = random.Random(11)
    cuts = sorted(rng.sample(range(1, len(data) - 1), 40))
    for n in cuts:
        refused(data[:n])
    for _ in range(40):
        flipped = bytearray(data)
        for _ in range(3):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        try:
            decode(bytes(flipped), "evil.pkl")  # a flip inside a float or a string can still be a valid file
        except RegressError as exc:
            assert "evil.pkl" in str(exc)
    for junk in (b"", b"\x80\x05", b"not a pickle", bytes(range(256))):
        refused(junk)


def test_envelopes_that_lie_about_their_format():
    result = good()
    assert "newer regress" in refused(pickle.dumps({"format": FORMAT, "version": FORMAT_VERSION + 1, "result": result}))
    assert "no format version" in refused(pickle.dumps({"format": FORMAT, "version": "4", "result": result}))
    assert "not a regress result file" in refused(pickle.dumps({"format": "other", "version": 4, "result": result}))


def test_older_formats_still_load(monkeypatch):
    # Formats 1-3 named the records' module regress.model and stored failure kinds as plain strings.
    import sys

    from regress.core import records

    old = factories.commit("a", factories.bench([1e-3]), torch="2.13.0")
    failed = factories.bench(sub="broken", failure=records.Failure("error", "boom"))
    object.__setattr__(failed.failure, "kind", "error")  # a str, as format 3 wrote it
    old = dataclasses.replace(old, results=(*old.results, failed))
    monkeypatch.setitem(sys.modules, "regress.model", records)
    for cls in (
        records.CommitResult,
        records.CommitInfo,
        records.Fingerprint,
        records.Settings,
        records.BenchmarkResult,
        records.TaskSpec,
        records.Sample,
        records.Failure,
    ):
        monkeypatch.setattr(cls, "__module__", "regress.model")
    data = pickle.dumps({"format": FORMAT, "version": 3, "result": old}, protocol=pickle.HIGHEST_PROTOCOL)
    monkeypatch.undo()
    assert b"regress.model" in data and b"regress.core.records" not in data
    loaded = decode(data, "old.pkl")
    assert [s.raw_times for s in loaded.results[0].samples] == [s.raw_times for s in old.results[0].samples]
    # Before format 6 a file is one run: every round of it in that run, the file's fingerprint its machine.
    (run,) = loaded.runs
    assert run.kind == "file" and run.fingerprint == old.fingerprint
    assert {s.run for s in loaded.results[0].samples} == {run.id}
    kind = loaded.results[1].failure.kind
    assert kind is FailureKind.ERROR and loaded.failed == (loaded.results[1],)


def test_a_history_with_one_hostile_file_loads_the_others(tmp_path):
    store = Store(tmp_path)
    for i in range(3):
        r = factories.commit(f"{i:040x}", factories.bench([1e-3]), when=i, torch="2.13.0")
        store.save(r)
    bad = store.path("box", "default", f"{1:040x}")
    bad.write_bytes(envelope(poke(good(), "commit", poke(good().commit, "subject", deep_tuple(60)))))
    history = store.history("box", "default")
    assert [r.commit.sha for r in history] == [f"{0:040x}", f"{2:040x}"]
    (line,) = store.refused
    assert str(bad) in line and "not a valid regress result file" in line
    assert isinstance(history[0].commit, CommitInfo)


def test_every_older_format_loads_as_one_run_per_file():
    for version in (4, 5):
        rounds = factories.bench([1e-3, 1.1e-3, 0.9e-3])
        a = factories.commit("a" * 40, rounds, torch="2.13.0", when=1)
        b = factories.commit("b" * 40, rounds, torch="2.13.0", when=2)
        runs = []
        for old in (a, b):
            loaded = decode(pickle.dumps({"format": FORMAT, "version": version, "result": old}), "old.pkl")
            (run,) = loaded.runs
            assert {s.run for r in loaded.results for s in r.samples} == {run.id}
            runs.append(run.id)
        assert runs[0] != runs[1]  # two files, two runs
    # Today's format keeps what was stored, and a file that names no runs gains none.
    current = decode(encode(good()), "new.pkl")
    assert current.runs == good().runs


def test_a_round_plan_without_a_time_limit_loads():
    # `compare --measure --rounds N` and `check --rounds N` take a fixed count: no time budget.
    fixed = dataclasses.replace(good(), settings=dataclasses.replace(good().settings, budget=float("inf")))
    assert decode(encode(fixed), "fixed.pkl").settings.budget == float("inf")
