"""The memo (storage/memo.py): a value is found again for the same kind, inputs and code, and for nothing
else; a garbled row or database is a miss; REGRESS_VERIFY_CACHE catches a wrong kept value; one
clean-up rule; and its one encoding reads back what it was given."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from regress.storage import memo, summary
from regress.storage.memo import KEEP, Memo, StaleValue
from regress.storage.store import Store


def counted(calls: list, value):
    def compute():
        calls.append(1)
        return value

    return compute


def get(root, kind: str, inputs: str, value, calls: list, *, verify: bool = False):
    with Memo(Store(root) if root is not None else None, verify=verify) as m:
        return m.get(kind, inputs, counted(calls, value))


def rows(root) -> list[tuple]:
    with sqlite3.connect(root / memo.FILE) as db:
        found = db.execute("SELECT kind, inputs FROM memo ORDER BY kind, inputs").fetchall()
    db.close()
    return found


def test_a_hit_a_miss_on_other_inputs_and_nothing_kept_without_inputs(tmp_path):
    calls: list = []
    value = {"levels": np.arange(5, dtype=np.float64), "name": "x"}
    first = get(tmp_path, "k", "a", value, calls)
    again = get(tmp_path, "k", "a", {"other": 1}, calls)
    assert calls == [1]  # found, not computed
    assert again["name"] == "x" and np.array_equal(again["levels"], value["levels"]) and first is value
    assert get(tmp_path, "k", "b", {"other": 1}, calls) == {"other": 1} and len(calls) == 2  # other inputs
    assert get(tmp_path, "other kind", "a", [1], calls) == [1] and len(calls) == 3  # another kind
    with Memo(Store(tmp_path)) as m:
        assert m.get("k", None, lambda: "not kept") == "not kept"
    assert rows(tmp_path) == [("k", "a"), ("k", "b"), ("other kind", "a")]


def test_another_code_digest_is_a_miss_and_its_rows_go_when_a_command_writes(tmp_path, monkeypatch):
    calls: list = []
    get(tmp_path, "k", "a", 1, calls)
    get(tmp_path, "k", "b", 2, calls)
    monkeypatch.setattr(memo, "code_digest", lambda: "other code")
    assert get(tmp_path, "k", "a", 10, calls) == 10 and len(calls) == 3  # made by other code: computed
    assert rows(tmp_path) == [("k", "a")]  # "b", the other code's, dropped with that write
    monkeypatch.undo()
    assert get(tmp_path, "k", "a", 1, calls) == 1 and len(calls) == 4


def test_a_garbled_row_or_database_is_a_miss(tmp_path):
    calls: list = []
    get(tmp_path, "k", "a", [1, 2], calls)
    with sqlite3.connect(tmp_path / memo.FILE) as db:
        db.execute("UPDATE memo SET value = x'0500000000'")  # a length that runs past the end
    db.close()
    assert get(tmp_path, "k", "a", [1, 2], calls) == [1, 2] and len(calls) == 2
    with Memo(Store(tmp_path)) as m:  # a tree the caller can't read: a miss too, and replaced
        assert m.get("k", "a", lambda: 3, from_tree=lambda t: t["no such key"]) == 3
    assert get(tmp_path, "k", "a", 0, calls) == 3
    (tmp_path / memo.FILE).write_bytes(b"not a database" * 100)
    assert get(tmp_path, "k", "a", 4, calls) == 4 and get(tmp_path, "k", "a", 4, calls) == 4
    (tmp_path / memo.FILE).unlink()
    (tmp_path / memo.FILE).mkdir()  # not a file SQLite can open
    assert get(tmp_path, "k", "a", 5, calls) == 5
    assert get(None, "k", "a", 6, calls) == 6  # no results folder: nothing kept, nothing raised


def test_a_memo_file_of_the_older_schema_is_still_used(tmp_path):
    with sqlite3.connect(tmp_path / memo.FILE) as db:  # rows that named files of their own (SPILL, gone)
        db.execute(
            "CREATE TABLE memo (kind TEXT NOT NULL, inputs TEXT NOT NULL, code TEXT NOT NULL,"
            " file TEXT, length INTEGER, value BLOB, PRIMARY KEY (kind, inputs))"
        )
        db.execute("INSERT INTO memo VALUES ('k', 'a', ?, 'gone.bin', 9, NULL)", (memo.code_digest(),))
    db.close()
    calls: list = []
    assert get(tmp_path, "k", "a", 1, calls) == 1 and get(tmp_path, "k", "a", 2, calls) == 1 and len(calls) == 1


def test_an_older_regress_spill_folder_goes_at_the_first_write_and_a_read_leaves_it(tmp_path):
    old = tmp_path / memo.OLD_FOLDER
    old.mkdir()
    (old / "0123-abcd.bin").write_bytes(b"x" * 100)
    with Memo(Store(tmp_path)) as m:  # reads only: nothing written, nothing removed
        assert m.find("k", "a") is None
    assert old.is_dir()
    calls: list = []
    assert get(tmp_path, "k", "a", 1, calls) == 1
    assert not old.exists()


def test_verify_computes_every_hit_again_and_catches_a_wrong_kept_value(tmp_path):
    calls: list = []
    get(tmp_path, "figures", "a", {"level": np.ones(3)}, calls)
    assert get(tmp_path, "figures", "a", {"level": np.ones(3)}, calls, verify=True)["level"].tolist() == [1.0] * 3
    assert len(calls) == 2  # the hit computed again, and the same
    with pytest.raises(StaleValue, match="figures"):  # a value its inputs no longer give: named by its kind
        get(tmp_path, "figures", "a", {"level": np.full(3, 2.0)}, calls, verify=True)
    assert os.environ.get(memo.VERIFY) == "1"  # the test suite runs with it on (tests/conftest.py)
    assert Memo(Store(tmp_path)).verify and not Memo(Store(tmp_path), verify=False).verify


def test_a_row_that_none_of_the_last_writing_commands_used_is_dropped(tmp_path):
    calls: list = []
    get(tmp_path, "k", "used", 1, calls)
    get(tmp_path, "k", "unused", 2, calls)
    for k in range(KEEP - 1):  # writing commands that use "used"
        with Memo(Store(tmp_path)) as m:
            m.get("k", "used", lambda: 1)
            m.put("k", f"new {k}", k)
    assert ("k", "unused") in rows(tmp_path)  # used by the KEEP-th writing command before the last
    with Memo(Store(tmp_path)) as m:
        m.get("k", "used", lambda: 1)
        m.put("k", "newest", 0)
    assert KEEP == 3 and rows(tmp_path) == [("k", "new 0"), ("k", "new 1"), ("k", "newest"), ("k", "used")]
    # A command that puts nothing writes nothing: the file as it was, whatever it read.
    path = tmp_path / memo.FILE
    before = (path.stat().st_mtime_ns, path.read_bytes())
    for _ in range(KEEP + 2):
        assert get(tmp_path, "k", "used", 1, calls) == 1
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


def test_values_put_are_written_once_write_at_bytes_wait_and_count_as_used_by_their_command(tmp_path, monkeypatch):
    monkeypatch.setattr(memo, "WRITE_AT", 1000)
    with Memo(Store(tmp_path)) as m:
        m.put("k", "a", "x" * 600)
        assert rows(tmp_path) == []  # 600 bytes wait
        m.put("k", "b", "y" * 600)
        assert rows(tmp_path) == [("k", "a"), ("k", "b")] and not m._puts  # written, not held
        assert m.find("k", "a") == "x" * 600  # read back from its row
        m.put("k", "c", 1)
    assert rows(tmp_path) == [("k", "a"), ("k", "b"), ("k", "c")]
    for k in range(KEEP - 1):  # the command that put them counts as having used them
        with Memo(Store(tmp_path)) as m:
            m.put("k", f"new {k}", k)
    assert ("k", "a") in rows(tmp_path)
    with Memo(Store(tmp_path)) as m:
        m.put("k", "newest", 0)
    assert ("k", "a") not in rows(tmp_path) and ("k", "c") not in rows(tmp_path)


def test_the_encoding_reads_back_what_it_was_given():
    tree = {
        "ints": np.arange(6, dtype=np.int32).reshape(2, 3),
        "flags": np.array([True, False]),
        "big-endian": np.array([1.5, 2.5], dtype=">f8"),
        "empty": np.zeros((0, 3)),
        "nested": [{"n": np.int64(3), "x": np.float64(0.25)}, None, float("nan"), "é"],
        "tuple": (1, 2),
    }
    back = memo.decode(memo.encode(tree))
    assert back["ints"].dtype == np.int32 and back["ints"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["flags"].tolist() == [True, False] and back["big-endian"].tolist() == [1.5, 2.5]
    assert back["empty"].shape == (0, 3) and back["tuple"] == [1, 2]
    assert back["nested"][0] == {"n": 3, "x": 0.25} and back["nested"][1] is None and np.isnan(back["nested"][2])
    assert memo.encode(back) == memo.encode(tree)  # read back, the very bytes
    for wrong in (memo.encode(tree)[:-1], b"\x05\x00\x00\x00{oops", b"", memo.encode(tree) + b"\x00"):
        with pytest.raises(ValueError):
            memo.decode(wrong)
    with pytest.raises(TypeError):
        memo.encode({"objects": np.array([object()])})


def test_the_code_digest_covers_the_package_source_and_is_made_once():
    assert memo.code_digest() == memo.code_digest() and len(memo.code_digest()) == 64
    assert memo.code_digest.cache_info().hits >= 1


def test_a_changed_source_file_or_template_is_another_code_digest(tmp_path):
    package = Path(memo.__file__).resolve().parents[1]
    copy = tmp_path / "regress"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(package.parent / "templates", copy / "templates")
    first = memo.package_digest(copy)
    assert memo.package_digest(copy) == first
    figures = copy / "analysis" / "table.py"
    figures.write_text(figures.read_text() + "\n# a comment is a change too\n")
    second = memo.package_digest(copy)
    assert second != first
    base = next((copy / "templates").glob("*.html"))
    base.write_text(base.read_text() + "<!-- a template -->")
    assert memo.package_digest(copy) not in (first, second)


def test_a_changed_figure_function_finds_no_stale_value(tmp_path, monkeypatch):
    """A site build keeps each file's figures, their blocks, the steps and the verdicts; then a function the
    figures depend on changes, and with it the code digest (as any change to regress's source does): the
    next read computes everything afresh, and what it gives is the changed function's, nowhere the kept."""
    from regress.analysis import table as figures_table
    from regress.analysis.table import Table
    from regress.report import site
    from regress.storage.store import Store
    from scripts.fabricate_history import fabricate

    machine, env = "ci-runner", "default"
    commits = figures_table.BLOCK + figures_table.TAIL + 5  # one kept block, and the newest beside it
    fabricate(tmp_path / "r", machines=(machine,), commits=commits, benchmarks=3, rounds="3-4", times="3")
    store = Store(tmp_path / "r")
    site.build(store, tmp_path / "site")  # the memo filled: figures, a block, verdicts, steps, pairs

    def read(verify: bool = False) -> Table:
        with Memo(store, verify=verify) as m:
            return Table.kept(summary.per_file(store, m, machine, env, figures_table.compute), list)

    before = read()
    real = figures_table.of_file
    seven = np.asarray([7.0])
    monkeypatch.setattr(
        figures_table, "of_file", lambda result, **kw: dataclasses.replace(real(result, **kw), reference=seven)
    )
    assert read().reference.tolist() == before.reference.tolist()  # the same code digest: kept ...
    with pytest.raises(StaleValue, match="figures"):
        read(verify=True)  # ... and found out as stale where the memo verifies
    monkeypatch.setattr(memo, "code_digest", lambda: "the changed code's")
    made = []
    counted = figures_table.compute
    monkeypatch.setattr(figures_table, "compute", lambda f: made.append(1) or counted(f))
    with Memo(store) as m:
        found = m.find_many(summary.FIGURES, [d for d in summary.digests(store, machine, env).values()])
    assert found == {}  # nothing kept is found by other code
    after = read()
    assert len(made) == commits  # every file's figures made afresh, the block joined from them
    assert after.reference.tolist() == [7.0] * commits and before.reference.tolist() != [7.0] * commits
    again = read()
    assert again.reference.tolist() == [7.0] * commits and len(made) == commits  # now kept, by the new code
    site.build(store, tmp_path / "site2")  # the site of the changed code: its verdicts and steps verified


def test_the_summarys_version_moves_with_the_code_its_entries_are_made_by_and_only_that(tmp_path, monkeypatch):
    """The summary is rebuilt (every result file read again) when the code an entry is made by changes, at any
    depth of its imports; another part of regress may change and leave it be."""
    import shutil
    from pathlib import Path

    package = tmp_path / "regress"
    shutil.copytree(Path(memo.__file__).resolve().parents[1], package, ignore=shutil.ignore_patterns("__pycache__"))
    # As summary._version reads it: the memo's module (and the version it reads) left out.
    summary_version = functools.partial(memo.imports_digest, leave_out=(memo.__name__,))
    before, everything = (
        summary_version("regress.storage.summary", package),
        memo.imports_digest("regress.storage.summary", package),
    )
    assert before == summary_version("regress.storage.summary", package)
    init = package / "__init__.py"
    assert '__version__ = "' in init.read_text()
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9'))  # a release
    assert summary_version("regress.storage.summary", package) == before
    for unrelated in ("report/site.py", "storage/memo.py"):  # another report, another memo
        path = package / unrelated
        path.write_text(path.read_text() + "\n# another report\n")
        assert summary_version("regress.storage.summary", package) == before, unrelated
    whole = memo.package_digest(package)
    monkeypatch.setattr(memo, "__version__", "9" + memo.__version__)  # the running regress's release
    assert summary_version("regress.storage.summary", package) == before
    assert memo.package_digest(package) != whole  # the memo's code digest: the version and all the source
    assert memo.imports_digest("regress.storage.summary", package) != everything  # read where not left out
    for changed in ("core/checks.py", "core/blocks.py", "core/records.py"):  # imported by summary, at depth 1-2
        path = package / changed
        path.write_text(path.read_text() + "\n# another rule\n")
        after = summary_version("regress.storage.summary", package)
        assert after != before, changed
        before = after
