"""@regress.benchmark expands to the same Timers a bench_ function would (no timing)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer, Timer

import regress
from regress.suite.decorator import BenchmarkDefinition


def specs(defn):
    return [
        (t.reason if not isinstance(t, Timer) else None, t if not isinstance(t, Timer) else t._task_spec)
        for t in defn.timers()
    ]


def test_grid_threads_labels():
    @regress.benchmark(params={"n": [1, 2], "op": ["a", "b"]}, threads=[1, 4], label="L", description="{op}")
    def f(n, op):
        return lambda: n

    assert isinstance(f, BenchmarkDefinition) and f(3, "a")() == 3
    got = [(s.sub_label, s.description, s.num_threads, s.label, s.stmt) for _, s in specs(f)]
    assert len(got) == 8
    assert ("n=1", "a", 4, "L", "f()") in got and ("n=2", "b", 1, "L", "f()") in got


def test_stmt_with_globals_and_errors():
    @regress.benchmark(params={"k": [3]}, stmt="x * k")
    def g(k):
        return {"x": torch.ones(2), "k": k}

    (t,) = list(g.timers())
    assert t._task_spec.stmt == "x * k" and t.timeit(2).median > 0

    @regress.benchmark(params={"k": [3]})
    def bad(k):
        return 42

    with pytest.raises(TypeError, match="zero-argument callable"):
        list(bad.timers())
    with pytest.raises(ValueError, match="has no values"):
        regress.benchmark(params={"k": []})(lambda k: None)


def test_cuda_device_is_skipped_without_a_gpu_and_fn_not_called():
    called = []

    @regress.benchmark(params={"n": [8]}, device=["cpu", "cuda"], label="dev")
    def h(n, device):
        called.append(device)
        x = torch.ones(n, device=device)
        return lambda: x + 1

    out = specs(h)
    assert [s.sub_label for _, s in out] == ["n=8, device=cpu", "n=8, device=cuda"]
    if torch.cuda.is_available():
        assert called == ["cpu", "cuda"] and all(reason is None for reason, _ in out)
    else:
        assert called == ["cpu"]
        assert out[0][0] is None and out[1][0] == "CUDA is not available on this machine"


def _fuzzer():
    return Fuzzer(
        parameters=[
            FuzzedParameter("k0", minval=1, maxval=1000, distribution="loguniform"),
            FuzzedParameter("k1", minval=1, maxval=1000, distribution="loguniform"),
        ],
        tensors=[
            FuzzedTensor("x", size=("k0", "k1"), min_elements=16, max_elements=100_000, probability_contiguous=0.5)
        ],
    )


def test_fuzzed_inputs_are_reproducible_and_described():
    def make():
        @regress.benchmark(fuzzer=_fuzzer(), samples=6, seed=7, label="fuzzed")
        def fz(x, k0, k1):
            return lambda: x.sum()

        return fz

    first = [s.sub_label for _, s in specs(make())]
    torch.manual_seed(123)  # global RNG state must not matter
    second = [s.sub_label for _, s in specs(make())]
    assert first == second and len(first) == 6
    assert all(label.startswith("x=") for label in first)
    assert any("discontiguous" in label for label in first)

    @regress.benchmark(fuzzer=_fuzzer(), samples=6, seed=8, label="fuzzed")
    def other(x, k0, k1):
        return lambda: x.sum()

    assert [s.sub_label for _, s in specs(other)] != first
    with pytest.raises(ValueError, match="needs seed"):
        regress.benchmark(fuzzer=_fuzzer(), samples=2)(lambda x, k0, k1: None)
