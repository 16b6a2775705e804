"""Instruction-count plumbing on fixture dumps (the end-to-end valgrind run is in test_instructions_e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regress.measure import callgrind

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_parse_totals_from_dumps():
    assert callgrind.parse_total((FIXTURES / "callgrind.loop.out").read_bytes()) == 645873
    assert callgrind.parse_total((FIXTURES / "callgrind.empty.out").read_bytes()) == 0
    assert callgrind.parse_total(b"events: Ir\nsummary: 17\n") == 17
    with pytest.raises(ValueError):
        callgrind.parse_total(b"# callgrind format\nevents: Ir\n")


def test_summary_drops_the_specialising_first_repeat():
    from regress.core.records import InstructionCount

    assert InstructionCount(20, (5000, 1000, 1003, 1001)).value == 1001
    assert InstructionCount(20, (1234,)).value == 1234


def test_counter_reads_each_new_dump_once(tmp_path):
    """The worker side, with callgrind's dumps faked as files appearing."""
    counter = callgrind.Counter.__new__(callgrind.Counter)
    counter.out_dir, counter.seen = tmp_path, set()
    dumps = iter([b"totals: 300\n", b"totals: 2300\n"])

    def fake_dump():
        (tmp_path / f"cg.1.{len(counter.seen) + 1}").write_bytes(next(dumps))

    counter._toggle, counter._dump, counter._dump_separately = (lambda: None), fake_dump, True

    class LoopTimer:
        def _timeit(self, number):
            return 0.0

    assert counter.count(LoopTimer(), number=20, repeats=1) == (100,)  # (2300 - 300) / 20
    assert list(tmp_path.iterdir()) == []


def test_missing_valgrind_is_one_clear_line(monkeypatch, tmp_path):
    from regress.core.errors import RegressError

    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None)
    with pytest.raises(RegressError, match="apt-get install valgrind"):
        callgrind.prepare(tmp_path)
