"""A C++ torch Timer is told apart by one check, and the profiler and the memory probe both heed it."""

from __future__ import annotations

import pytest
from torch.utils.benchmark import Timer

from regress.suite import memory, profiling
from regress.suite.timing import is_cpp


def test_the_profiler_refuses_a_cpp_timer_with_its_reason(tmp_path):
    cpp = Timer("int x = 1;", language="c++")
    assert is_cpp(cpp) and not is_cpp(Timer("x = 1"))
    with pytest.raises(TypeError, match="C\\+\\+ Timers can't be profiled from Python"):
        profiling.profile(cpp, trace_path=str(tmp_path / "trace.json"), calls=5)
    assert not (tmp_path / "trace.json").exists()


def test_the_memory_probe_leaves_a_cpp_timer_out():
    assert memory.measure(Timer("int x = 1;", language="c++")) == ()
