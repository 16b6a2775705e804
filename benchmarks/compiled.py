"""A torch.compile benchmark: steady-state time of the compiled callable, and its compile figures.

regress records the first call's compile time, dynamo's graphs, graph breaks
and recompiles (`regress compare BASE HEAD --metric graph_breaks`). The
example uses backend="aot_eager" to stay cheap (no C++ compile per round);
drop backend= for the default inductor, which needs a C++ compiler: without
one the benchmark is reported as skipped.
"""

import torch

import regress


def gelu_mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


@regress.benchmark(label="Compiled", compile=True, backend="aot_eager", params={"n": [64]})
def compiled_mlp(n):
    x, w1, w2 = torch.randn(n, 128), torch.randn(128, 256), torch.randn(256, 128)
    return lambda: gelu_mlp(x, w1, w2)
