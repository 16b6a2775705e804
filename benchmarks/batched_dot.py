"""The recipe's batched dot product: mul/sum against bmm (recipe steps 1, 3 and 5).

Written exactly as the recipe writes its Timers, so recipe code can be copied
in unchanged: regress lets `from __main__ import ...` find this module.
"""

from itertools import product

import torch
import torch.utils.benchmark as benchmark


def batched_dot_mul_sum(a, b):
    """Computes batched dot by multiplying and summing."""
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    """Computes batched dot by reducing to bmm."""
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(a, b).flatten(-3)


# The recipe's sizes; [10000, 10000] is left out to keep the suite under a
# minute on a 2-core machine.
SIZES = [1, 64, 1024, 10000]
SHAPES = [(b, n) for b, n in product(SIZES, SIZES) if b * n <= 10_000_000]


def bench_batched_dot():
    for b, n in SHAPES:
        x = torch.ones((b, n))
        assert batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))
        for num_threads in (1, 2):
            yield benchmark.Timer(
                stmt="batched_dot_mul_sum(x, x)",
                setup="from __main__ import batched_dot_mul_sum",
                globals={"x": x},
                num_threads=num_threads,
                label="Batched dot",
                sub_label=f"[{b}, {n}]",
                description="mul/sum",
            )
            yield benchmark.Timer(
                stmt="batched_dot_bmm(x, x)",
                setup="from __main__ import batched_dot_bmm",
                globals={"x": x},
                num_threads=num_threads,
                label="Batched dot",
                sub_label=f"[{b}, {n}]",
                description="bmm",
            )
