"""Format 7's compressed container: lossless, today's uncompressed files still read, bombs and torn files refused."""

from __future__ import annotations

import pickle
import zlib

import factories
import pytest

from regress.core.errors import RegressError
from regress.storage import codec


def _result():
    rounds = factories.rounds_of([1.234567891e-5, 1.2e-5, 1.3e-5], blocks=30)
    return factories.commit("a" * 40, factories.bench(samples=rounds))


def test_compressed_files_round_trip_every_float_bit_for_bit_and_are_smaller():
    result = _result()
    data = codec.encode(result)
    assert data.startswith(codec.MAGIC)
    back = codec.decode(data, "x.pkl")
    assert back == result
    raw = [t.hex() for s in result.results[0].samples for t in s.raw_times]
    assert [t.hex() for s in back.results[0].samples for t in s.raw_times] == raw
    uncompressed = pickle.dumps({"format": codec.FORMAT, "version": 6, "result": result}, protocol=5)
    assert len(data) < len(uncompressed)


def test_an_uncompressed_format_6_file_still_loads():
    result = _result()
    old = pickle.dumps({"format": codec.FORMAT, "version": 6, "result": result}, protocol=5)
    assert codec.decode(old, "old.pkl") == result


def test_a_torn_or_garbled_compressed_file_is_one_clear_line():
    data = codec.encode(_result())
    for bad, says in ((data[: len(data) // 2], "truncated"), (codec.MAGIC + b"\x00garbage", "bad compressed")):
        with pytest.raises(RegressError, match=says):
            codec.decode(bad, "x.pkl")


def test_a_decompression_bomb_is_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_BYTES", 1 << 20)
    bomb = codec.MAGIC + zlib.compress(b"\0" * (4 << 20))
    with pytest.raises(RegressError, match="more than 1 MiB"):
        codec.decode(bomb, "bomb.pkl")
