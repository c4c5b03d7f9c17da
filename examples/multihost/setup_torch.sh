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

# As root, Falcon runs each job as a user of its own ([jobs] isolation): the venv's interpreter must be one such a
# user may run (a pyenv python under /root is not). Pick the first python3 that an unprivileged user can start,
# and make the venv again when it was made from one that user cannot.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null 2>&1; then
    if [[ -z "${PYTHON:-}" ]]; then
        for candidate in "$(command -v python3 || true)" /usr/bin/python3 /usr/local/bin/python3; do
            real="$(readlink -f "$candidate" 2>/dev/null || true)"
            if [[ -n "$real" ]] && as_nobody "$real" -c 'import venv' >/dev/null 2>&1; then
                export PYTHON="$real"
                break
            fi
        done
    fi
    if [[ -x "$venv/bin/python" ]] && ! as_nobody "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
        echo "torch: $venv was made from a python other users cannot run; making it again" >&2
        rm -rf "$venv"
    fi
fi
# Every package is pinned in the requirements: install those and nothing they would pull in besides.
export PIP_NO_DEPS=1
# torch must import with gloo (the CPU collectives) available.
exec bash "$repo/scripts/pinned-venv.sh" "$venv" "$here/torch-requirements.txt" \
    'import torch, torch.distributed as d; assert d.is_gloo_available()' torch
