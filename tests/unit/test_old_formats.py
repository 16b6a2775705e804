"""Real result files of every format, each written by the regress of its day, read by today's loader.

tests/fixtures/old_formats/ holds one file a format (README.md there names the
commit that wrote each and the command); the measured project is a tiny suite in
a one-commit repository with fixed dates, so every file names the same commit.
"""

from __future__ import annotations

import pickletools
import shutil
from pathlib import Path

import pytest

from regress.core.records import BenchmarkId
from regress.storage import codec
from regress.storage.store import Store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "old_formats"
SHA = "9be33660e4222cf004b011c4eae7536a236ac959"
IDS = {BenchmarkId("tiny", "add", "64", 1), BenchmarkId("tiny", "sum", "64", 1)}
FORMATS = range(1, codec.FORMAT_VERSION + 1)


def _written_version(path: Path) -> int:
    """The envelope's "version", read from the pickle's opcodes (nothing is built)."""
    ops = list(pickletools.genops(codec.unpack(path.read_bytes(), str(path))))
    at = next(i for i, (op, arg, _) in enumerate(ops) if arg == "version")
    return next(arg for op, arg, _ in ops[at + 1 :] if isinstance(arg, int) and "INT" in op.name)


def test_there_is_one_real_file_of_every_readable_format():
    assert sorted(p.name for p in FIXTURES.glob("*.pkl")) == [f"format-{n}.pkl" for n in FORMATS]
    assert tuple(FORMATS) == codec.READABLE_VERSIONS
    for n in FORMATS:
        path = FIXTURES / f"format-{n}.pkl"
        assert _written_version(path) == n, path
        assert path.read_bytes().startswith(codec.MAGIC) == (n >= 7), path  # format 7 compresses
        # The records' module the pickle names: regress.model until format 4 moved them.
        module = b"regress.model" if n <= 3 else b"regress.core.records"
        assert module in codec.unpack(path.read_bytes(), str(path)), path


@pytest.mark.parametrize("n", FORMATS)
def test_each_format_loads_with_its_fields_upgraded(n, tmp_path):
    # Through the store, as every command reads a file.
    folder = tmp_path / "results" / "fixture" / "default"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / f"format-{n}.pkl", folder / f"{SHA}.pkl")
    store = Store(tmp_path / "results")
    (result,) = store.history("fixture", "default")

    assert (result.commit.sha, result.commit.subject, result.commit.author) == (SHA, "tiny suite", "fixture")
    assert result.commit.committed_at == 1767225600 and result.commit.parents == ()
    assert (result.machine, result.env, result.fingerprint.machine) == ("fixture", "default", "fixture")
    assert result.settings.min_run_time == 0.01 and result.settings.mode == "time"
    assert {r.id for r in result.results} == IDS and not result.failures
    for r in result.results:
        assert all(s.raw_times and min(s.raw_times) > 0 and s.number_per_run >= 1 for s in r.samples)
        assert r.counts == ()  # format 2 added instruction counts; none were asked for
        assert r.compiled == () and r.tracked == ()  # format 5: no torch.compile, no track_* here

    # Rounds: formats 1-2 took one and read as a 1-round plan with no reference
    # workload; from format 3 the two rounds asked for and a reference sample a round.
    rounds = 1 if n <= 2 else 2
    assert [len(r.samples) for r in result.results] == [rounds, rounds]
    assert len(result.reference) == (0 if n <= 2 else rounds)
    assert (result.settings.min_rounds, result.settings.max_rounds) == (rounds, rounds)
    assert (result.settings.budget > 0) == (n >= 3)

    # Format 5 added memory per call: older files read as having none.
    assert [len(r.memory) for r in result.results] == [0 if n <= 4 else rounds] * 2
    if n >= 5:
        sizes = {r.id.sub_label: {m.allocated for m in r.memory} for r in result.results}
        assert sizes == {"add": {256}, "sum": {4}}  # 64 float32s; one float32

    # Runs: format 6 recorded them. Older files read as one run of kind "file" holding every round.
    samples = [s for r in result.results for s in r.samples] + list(result.reference)
    (run,) = result.runs
    if n <= 5:
        assert run.kind == "file" and run.id == f"file-{SHA[:12]}-{int(result.started_at)}"
        assert run.fingerprint == result.fingerprint and run.started_at == result.started_at
        assert {s.process for s in samples} == {0}
    else:
        assert run.kind == "run" and not run.id.startswith("file-")
        assert all(s.process > 0 for s in samples)  # the fork each round ran in
    assert {s.run for s in samples} == {run.id}


@pytest.mark.parametrize("n", FORMATS)
def test_an_upgraded_file_is_saved_as_todays_format_unchanged(n, tmp_path):
    path = FIXTURES / f"format-{n}.pkl"
    result = codec.decode(path.read_bytes(), str(path))
    data = codec.encode(result)
    assert data.startswith(codec.MAGIC)
    assert codec.decode(data, "again.pkl") == result
