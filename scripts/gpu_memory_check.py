"""On a CUDA machine: does regress's memory per call match a known allocation?

A benchmark allocates a tensor of a known size on the GPU; regress's memory
measurement (regress/suite/memory.py, the code the worker runs after timing)
must report a CUDA peak equal to that size rounded up to the caching
allocator's 512-byte blocks. Several sizes, including ones that are not
multiples of 512. Prints one line per size and exits 1 on any mismatch.

    python scripts/gpu_memory_check.py

Without CUDA it says so in one line and exits 2 (it cannot run on a CPU-only machine).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BLOCK = 512  # the CUDA caching allocator rounds every request up to a multiple of 512 bytes
SIZES = (1, 1000, 512 * 1024, 10 * (1 << 20) + 3, 64 * (1 << 20))


def expected(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK


def main() -> int:
    import torch
    from torch.utils.benchmark import Timer

    from regress.suite import memory, timing

    if not torch.cuda.is_available():
        print("gpu_memory_check: no CUDA device here; run it on a machine with a GPU")
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    bad = 0
    for n in SIZES:
        timer = Timer("torch.empty(n, dtype=torch.uint8, device='cuda')", globals={"n": n})
        timing.measure(timer, min_run_time=0.05)  # warm-up and timing first, as the worker does
        uses = {m.device: m for m in memory.measure(timer)}
        cuda = uses.get("cuda")
        if cuda is None:
            print(f"{n:>10} B: no CUDA figures recorded")
            bad += 1
            continue
        want = expected(n)
        ok = cuda.peak == want and cuda.allocated == want
        bad += not ok
        print(
            f"{n:>10} B requested: peak {cuda.peak} B, allocated {cuda.allocated} B, expected {want} B (512 B blocks): "
            f"{'ok' if ok else 'MISMATCH'}"
        )
    # A temporary inside the call: peak is both tensors, held at once.
    timer = Timer("a = torch.empty(n, dtype=torch.uint8, device='cuda'); b = a + 1", globals={"n": 1 << 20})
    timing.measure(timer, min_run_time=0.05)
    cuda = {m.device: m for m in memory.measure(timer)}.get("cuda")
    want = 2 * expected(1 << 20)
    ok = cuda is not None and cuda.peak == want
    bad += not ok
    print(
        f"two 1 MiB tensors at once: peak {cuda.peak if cuda else None} B, expected {want} B: {'ok' if ok else 'MISMATCH'}"
    )
    print("all match" if not bad else f"{bad} mismatch(es)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
