#!/usr/bin/env bash
# Creates the PyTorch venv of the multi-host examples at <repo>/.cache/torch-venv and installs
# torch-requirements.txt there. Idempotent: does nothing when the venv already has the pinned versions. Prints the
# python to use.
#
#   bash examples/multihost/setup_torch.sh          # from anywhere
#   PYTHON=python3.11 bash examples/multihost/setup_torch.sh
#
# Which torch: the CPU-only wheel (--index-url https://download.pytorch.org/whl/cpu, ~200 MB) would be the least
# download, but that index was not reachable where this was made; PyPI's torch is a CUDA build that will not even
# import without the nvidia-* libraries (libtorch_cuda.so links them), so the requirements pin torch and exactly
# those libraries and install them with no dependency resolution (PIP_NO_DEPS), which leaves out what the CPU run
# never loads (triton, cuda-bindings). About 3.5 GB to download, 4.3 GB installed. torch-requirements.txt says more.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.cache/torch-venv"

# As root, jobs run as users of their own: the venv must be made from a python they can run.
source "$repo/scripts/lib/job-python.sh"
job_python "$venv" torch
# Every package is pinned in the requirements: install those and nothing they would pull in besides.
export PIP_NO_DEPS=1
# torch must import with gloo (the CPU collectives) available.
exec bash "$repo/scripts/pinned-venv.sh" "$venv" "$here/torch-requirements.txt" \
    'import torch, torch.distributed as d; assert d.is_gloo_available()' torch
