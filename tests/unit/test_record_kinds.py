"""Settings.mode, .benchmarks_from and TrackedValue.better are Enums, while result files hold their plain names."""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
import pickletools
import subprocess
import sys
from enum import Enum

import factories
import pytest

from regress.core.errors import RegressError
from regress.core.kinds import BenchmarksFrom, Better, Mode
from regress.core.plain_kinds import PlainKinds
from regress.core.records import Settings, TrackedValue
from regress.storage import codec
from regress.storage.codec import decode, encode
from regress.storage.store import Store

NEW_KINDS = ("Mode", "BenchmarksFrom", "Better")


def _result():
    tracked = dataclasses.replace(factories.bench(sub="size"), samples=(), tracked=(TrackedValue(3.0, "MB", "higher"),))
    r = factories.commit("a", factories.bench((1e-3, 1.1e-3)), tracked)
    return dataclasses.replace(r, settings=Settings(mode="instructions", benchmarks_from="commit"))


class _OldWriter(pickle.Pickler):
    """Pickles as regress did while these fields were declared `str`: each record's state as it is,
    strings and all (the default reduce of a dataclass, written out)."""

    def __init__(self, out, state=None):
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.state = state or {}

    def reducer_override(self, obj):
        if not isinstance(obj, PlainKinds):
            return NotImplemented
        plain = {k: str(v.value) if isinstance(v, Enum) else v for k, v in vars(obj).items()}
        return copyreg.__newobj__, (type(obj),), {**plain, **self.state.get(type(obj), {})}


def _old_file(result, version: int, state=None) -> bytes:
    out = io.BytesIO()
    _OldWriter(out, state).dump({"format": "regress-results", "version": version, "result": result})
    return out.getvalue()


def _names(data: bytes) -> set[str]:
    return {str(arg) for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)}


def test_built_from_names_the_fields_hold_the_enums():
    s = Settings(mode="instructions", benchmarks_from="commit")
    assert s.mode is Mode.INSTRUCTIONS and s.benchmarks_from is BenchmarksFrom.COMMIT
    assert TrackedValue(1.0, better="higher").better is Better.HIGHER
    assert Settings().mode is Mode.TIME and TrackedValue(1.0).better is Better.LOWER
    assert dataclasses.replace(s, budget=1.0).mode is Mode.INSTRUCTIONS
    with pytest.raises(ValueError):
        Settings(mode="sideways")


@pytest.mark.parametrize("version", [5, 7])
def test_an_old_style_file_with_plain_names_loads_into_the_enums(version):
    data = _old_file(_result(), version)
    assert not _names(data) & set(NEW_KINDS)  # what was written holds the names, no Enum class
    if version == 7:
        data = codec.pack(data)
    loaded = decode(data, "old.pkl")
    assert loaded.settings.mode is Mode.INSTRUCTIONS
    assert loaded.settings.benchmarks_from is BenchmarksFrom.COMMIT
    (value,) = [r for r in loaded.results if r.tracked][0].tracked
    assert value.better is Better.HIGHER and value.unit == "MB"


def test_a_new_file_is_what_format_7_wrote_plain_names_and_all():
    result = _result()
    data = codec.unpack(encode(result), "new.pkl")
    names = _names(data)
    assert {"instructions", "commit", "higher"} <= names and not names & set(NEW_KINDS)
    assert data == pickle.dumps(pickle.loads(data), protocol=pickle.HIGHEST_PROTOCOL)
    old = _old_file(result, 7)
    assert pickle.loads(old) == pickle.loads(data) == {"format": "regress-results", "version": 7, "result": result}


def test_a_name_that_is_no_member_is_refused_with_where_it_is():
    data = _old_file(_result(), 7, state={Settings: {"mode": "sideways"}})
    with pytest.raises(RegressError, match=r"result\.settings\.mode is not a Mode"):
        decode(data, "bad.pkl")


def test_the_summary_gives_the_enums_back_too(tmp_path):
    store = Store(tmp_path)
    store.save(_result())
    for _ in range(2):  # built from the file, then read from the summary's own entry
        (got,) = Store(tmp_path).history("box", "default")
        assert got.settings.mode is Mode.INSTRUCTIONS and got.settings.benchmarks_from is BenchmarksFrom.COMMIT
        assert [r for r in got.results if r.tracked][0].tracked[0].better is Better.HIGHER
    assert (tmp_path / ".summary.sqlite").is_file()


def test_a_worker_that_purged_regress_from_sys_modules_still_builds_the_records():
    # The worker imports the records, then drops regress's modules so the measured commit's own
    # regress can load (`measure/worker.py`); a track value is built after that.
    code = (
        "import sys\n"
        "from regress.core.records import Settings, TrackedValue\n"
        "for m in [m for m in sys.modules if m.startswith('regress')]: del sys.modules[m]\n"
        "print(TrackedValue(1.0, 'MB', 'higher').better.name, Settings(mode='instructions').mode.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["HIGHER", "INSTRUCTIONS"]
