"""Recipe step 7: batched dot over fuzzed inputs, the same inputs at every commit.

Both implementations draw from one Fuzzer with one seed, so row k of the table
is the same input for mul/sum and for bmm, at every commit and on every machine.
"""

from batched_dot import batched_dot_bmm, batched_dot_mul_sum
from torch.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer

import regress

FUZZER = Fuzzer(
    parameters=[
        FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
        FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
    ],
    tensors=[
        FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=1_000_000, probability_contiguous=0.6)
    ],
)


@regress.benchmark(fuzzer=FUZZER, samples=8, seed=0, label="Batched dot (fuzzed)", description="mul/sum")
def fuzzed_mul_sum(x, k0, k1):
    return lambda: batched_dot_mul_sum(x, x)


@regress.benchmark(fuzzer=FUZZER, samples=8, seed=0, label="Batched dot (fuzzed)", description="bmm")
def fuzzed_bmm(x, k0, k1):
    return lambda: batched_dot_bmm(x, x)
