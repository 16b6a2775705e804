"""The recipe's CUDA section: batched dot on the GPU.

torch's Timer synchronises the device around every block, and regress warms
each benchmark up before timing, so bmm's first-call cuBLAS load never lands
in a sample. On a machine without CUDA these are reported as skipped.
"""

import torch
from batched_dot import batched_dot_bmm, batched_dot_mul_sum

import regress

IMPLEMENTATIONS = {"mul/sum": batched_dot_mul_sum, "bmm": batched_dot_bmm}


@regress.benchmark(
    params={"impl": list(IMPLEMENTATIONS)},
    device="cuda",
    label="Batched dot (CUDA)",
    sub_label="[10000, 1024]",
    description="{impl}",
)
def cuda_batched_dot(impl, device):
    x = torch.randn(10000, 1024, device=device)
    fn = IMPLEMENTATIONS[impl]
    return lambda: fn(x, x)
