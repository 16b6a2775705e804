"""The kept computed entries (storage/computed.py): an entry a build used stays, one no build used for
KEEP_BUILDS builds is dropped, and marking an entry used leaves the entry's own row as it was."""

from __future__ import annotations

import os
import sqlite3
import time

from regress.storage import spill, summary
from regress.storage.computed import KEEP_BUILDS, Computed


def test_used_entries_stay_and_unused_ones_go_after_keep_builds(tmp_path):
    first = Computed(tmp_path, "k")
    first.put("used", b"a" * 100_000)
    first.put("unused", b"b")
    first.close()
    other = Computed(tmp_path, "other kind")
    other.put("x", b"c")
    other.close()
    for k in range(KEEP_BUILDS):  # builds that each keep something new (a build that writes nothing counts not)
        c = Computed(tmp_path, "k")
        assert c.get("used") == b"a" * 100_000
        c.put(f"new {k}", b"n")
        c.close()
    c = Computed(tmp_path, "k")
    assert c.get("unused") is None and c.get("used") is not None
    c.close()
    with sqlite3.connect(tmp_path / summary.FILE) as db:
        # Marked used in its own table: the entry's row is as first written (its build column the first build's).
        assert db.execute("SELECT build FROM computed WHERE key = 'used'").fetchone() == (1,)
        assert db.execute("SELECT kind, key FROM computed ORDER BY kind, key").fetchall() == [
            # "new 0", kept by the first of those builds and used by none since, went with the last build's write.
            *[("k", f"new {k}") for k in range(1, KEEP_BUILDS)],
            ("k", "used"),
            ("other kind", "x"),  # another kind's entries are its own builds' to drop
        ]
    db.close()


def test_a_read_that_puts_nothing_new_writes_nothing(tmp_path):
    c = Computed(tmp_path, "k")
    c.put("a", b"1")
    c.close()
    path = tmp_path / summary.FILE
    before = (path.stat().st_mtime_ns, path.read_bytes())
    for _ in range(KEEP_BUILDS + 2):  # read after read: the entry stays, and the file is not touched
        c = Computed(tmp_path, "k")
        assert c.get("a") == b"1"
        c.close()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
    c = Computed(tmp_path, "k")
    c.put("b", b"2")  # a build that puts: "a" used by none of the last KEEP_BUILDS writing builds stays
    assert c.get("a") == b"1"
    c.close()
    c = Computed(tmp_path, "k")
    assert (c.get("a"), c.get("b")) == (b"1", b"2")
    c.close()


def test_a_large_value_is_kept_in_a_file_of_its_own_which_goes_with_its_entry(tmp_path):
    big, other = b"x" * spill.SPILL, b"y" * (spill.SPILL + 7)
    c = Computed(tmp_path, "k")
    c.put("big", big)
    c.put("small", b"s")
    c.close()
    (first,) = list((tmp_path / spill.FOLDER).iterdir())
    with sqlite3.connect(tmp_path / summary.FILE) as db:
        held = dict(db.execute("SELECT key, value FROM computed"))
    db.close()
    assert held["small"] == b"s" and len(held["big"]) < 100 and first.name.encode() in held["big"]
    c = Computed(tmp_path, "k")
    assert (c.get("big"), c.get("small")) == (big, b"s")
    c.put("big", other)  # replaced: its old file goes, the new one has a name of its own
    c.close()
    (second,) = list((tmp_path / spill.FOLDER).iterdir())
    assert second.name != first.name
    c = Computed(tmp_path, "k")
    assert c.get("big") == other
    c.close()
    # A file cut short or gone reads as no value (made afresh), never as a wrong one.
    second.write_bytes(other[:-1])
    c = Computed(tmp_path, "k")
    assert c.get("big") is None
    c.close()
    second.unlink()
    c = Computed(tmp_path, "k")
    assert c.get("big") is None and c.get("small") == b"s"
    c.close()
    # Dropped with its entry: unused for KEEP_BUILDS writing builds.
    c = Computed(tmp_path, "k")
    c.put("big", big)
    c.close()
    for k in range(KEEP_BUILDS + 1):
        c = Computed(tmp_path, "k")
        c.put(f"new {k}", b"n")
        c.close()
    assert not list((tmp_path / spill.FOLDER).iterdir())


def test_a_file_no_entry_names_is_swept_once_old(tmp_path):
    c = Computed(tmp_path, "k")
    c.put("big", b"x" * spill.SPILL)
    c.close()
    (kept,) = list((tmp_path / spill.FOLDER).iterdir())
    orphan, young = tmp_path / spill.FOLDER / "lost-0.bin", tmp_path / spill.FOLDER / "young-0.bin"
    orphan.write_bytes(b"left by a killed build")
    young.write_bytes(b"a concurrent build's, not committed yet")
    old = time.time() - 2 * spill.ORPHAN_AGE
    os.utime(orphan, (old, old))
    os.utime(kept, (old, old))
    c = Computed(tmp_path, "k")
    c.put("big", b"z" * spill.SPILL)  # replacing it sweeps
    c.close()
    left = {p.name for p in (tmp_path / spill.FOLDER).iterdir()}
    assert orphan.name not in left and kept.name not in left and young.name in left and len(left) == 2
