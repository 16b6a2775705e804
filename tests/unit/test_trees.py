"""The one encoding of kept values (core/trees.py): records rebuilt as they were, and nothing else ever made."""

from __future__ import annotations

import pytest

from regress.analysis.judge import Verdict
from regress.core import trees
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId
from regress.report import data  # noqa: F401 (registers the records the site keeps)


def test_records_come_back_equal_with_their_enums():
    bid = BenchmarkId("mm", "64", "", 1)
    v = Verdict(bid, Kind.REGRESSION, 1.0, 1.2, None, None, 1.2, 0.01, "slower")
    back = trees.decode(trees.encode({"v": [v], "ids": [bid]}))
    assert back == {"v": [v], "ids": [bid]}
    assert type(back["v"][0].verdict) is Kind and type(back["v"][0].id) is BenchmarkId


def test_an_unknown_or_garbled_record_is_a_value_error_never_a_call():
    good = trees.encode([BenchmarkId("mm", "64", "", 1)])
    for wrong in (
        good.replace(b"BenchmarkId", b"os.system!!"),
        good.replace(b'"mm",', b""),  # a field short
        trees.encode([{"__record__": ["Kind", ["regression"]]}]),  # an Enum is no record
        trees.encode([{"__enum__": ["BenchmarkId", "x"]}]),  # nor a record an Enum
        trees.encode([{"__record__": "BenchmarkId"}]),
    ):
        with pytest.raises(ValueError):
            trees.decode(wrong)


def test_only_registered_classes_are_encoded():
    class Loose:
        pass

    with pytest.raises(TypeError):
        trees.encode([Loose()])
    with pytest.raises(TypeError):
        trees.record(Loose)
