#!/usr/bin/env bash
# The CUDA checks, on a machine with a GPU: the GPU tests, then the bundled
# CUDA suite (recipe section 3) measured and shown from a scratch repository.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))"
python3 -m pytest -q -m cuda "$here/tests/e2e/test_cuda.py" -s -p no:cacheprovider
scratch=$(mktemp -d)
cp -r "$here/benchmarks" "$scratch/"
cd "$scratch"
git init -q && git add -A && git -c user.name=gpu -c user.email=gpu@example.com commit -qm "bundled suites"
python3 -m regress run HEAD --bench "CUDA|Batched dot / \[1024, 1024\]"
python3 -m regress show HEAD
