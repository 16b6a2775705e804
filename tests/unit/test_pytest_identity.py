"""A pytest-benchmark test's identity, from pytest's own collection (in this process, no worker)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from regress.suite import pytest_suite

TESTS = """
import pytest

@pytest.mark.benchmark(group="marked")
@pytest.mark.parametrize("n", [1, 2], ids=["one", "two"])
def test_marked(benchmark, n):
    benchmark(len, [n])

def test_grouped_in_body(benchmark):
    benchmark.group = "from the body"
    benchmark(len, [])

class TestThings:
    def test_method(self, benchmark):
        benchmark(len, [])

def test_plain():
    pass

@pytest.mark.skipif(True, reason="not on this machine")
def test_skipif(benchmark):
    benchmark(len, [])
"""


def _collect(tmp_path: Path, *args: str):
    sys.modules.pop("test_ids", None)  # one collection a process in the worker; here, several
    folder = tmp_path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / "test_ids.py").write_text(textwrap.dedent(TESTS).lstrip())
    s = pytest_suite.configure(tmp_path, [folder], args)
    pytest_suite.collect(s, [folder / "test_ids.py"])
    return pytest_suite.entries(s, [folder / "test_ids.py"], folder=folder, shown_root=tmp_path, env="e")


def test_label_sub_label_description_and_node_id(tmp_path):
    made, failures, notes = _collect(tmp_path)
    assert not failures and not notes
    got = {(e.spec.label, e.spec.sub_label, e.spec.description): e for e in made}
    assert set(got) == {
        ("marked", "one", "test_marked"),
        ("marked", "two", "test_marked"),
        ("from the body", None, "test_grouped_in_body"),
        ("test_ids", None, "TestThings.test_method"),
        ("test_ids", None, "test_skipif"),
    }
    assert (
        got[("marked", "one", "test_marked")].origin
        == "benchmarks/test_ids.py:3 benchmarks/test_ids.py::test_marked[one]"
    )
    assert got[("test_ids", None, "test_skipif")].skip == "not on this machine"
    assert all(e.spec.num_threads == 1 for e in made)


@pytest.mark.parametrize(
    ("group_by", "label"),
    [("func", "test_marked"), ("param", "one"), ("param:n", "n=1"), ("group,param", "marked one")],
)
def test_group_by_names_the_label(tmp_path, group_by, label):
    made, _, _ = _collect(tmp_path, f"--benchmark-group-by={group_by}")
    first = next(e for e in made if e.spec.sub_label == "one")
    assert first.spec.label == label


def test_pytest_benchmarks_options_are_accepted_and_a_bad_group_by_is_a_failure(tmp_path):
    made, failures, _ = _collect(tmp_path, "--benchmark-min-time=0.1", "--benchmark-warmup", "--benchmark-disable")
    assert len(made) == 5 and not failures
    made, failures, _ = _collect(tmp_path, "--benchmark-group-by=colour")
    assert not made and "is not one of group, func" in failures[0].message
