"""A suite written with the decorator: a parameter grid and thread counts."""

import torch

import regress


@regress.benchmark(
    params={"n": [1_000, 100_000], "op": ["relu", "gelu", "softmax"]},
    threads=[1, 2],
    label="Activations",
    sub_label="n={n}",
    description="{op}",
)
def activation(n, op):
    x = torch.randn(n)
    fn = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "softmax": lambda t: t.softmax(-1)}[op]
    return lambda: fn(x)


@regress.benchmark(params={"size": [64, 256]}, label="Matmul", stmt="a @ b")
def matmul(size):
    return {"a": torch.randn(size, size), "b": torch.randn(size, size)}
