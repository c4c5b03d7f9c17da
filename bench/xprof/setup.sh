#!/usr/bin/env bash
# Creates the benchmark's virtual environment at <repo>/.cache/xprof-bench-venv with the two tools that
# `bench/xprof/run.sh` compares Falcon against:
#   - XProf 2.24.2 (Google's profiler backend; its `xprof` console script has the agent CLI:
#     `xprof get_overview <session>`, `xprof get_top_hlo_ops <session>`),
#   - xprof-rs (a Rust re-implementation of the XProf backend, same CLI: `xprof-rs get_overview <session>`).
# Idempotent: does nothing when the venv already has the pinned versions. Prints the venv's bin directory.
#
#   bash bench/xprof/setup.sh
#   PYTHON=python3.11 bash bench/xprof/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.cache/xprof-bench-venv"
python="${PYTHON:-python3}"

XPROF_VERSION=2.24.2
XPROF_RS_VERSION="${XPROF_RS_VERSION:-0.1.3}"   # the version measured in docs/PERFORMANCE.md

export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

have() {
    "$venv/bin/python" -c 'import sys
from importlib.metadata import version, PackageNotFoundError
try: print(version(sys.argv[1]))
except PackageNotFoundError: pass' "$1" 2>/dev/null || true
}

satisfied() {
    [ -x "$venv/bin/python" ] || return 1
    [ "$(have xprof)" = "$XPROF_VERSION" ] || return 1
    [ "$(have xprof-rs)" = "$XPROF_RS_VERSION" ] || return 1
    [ -x "$venv/bin/xprof" ] && [ -x "$venv/bin/xprof-rs" ]
}

if satisfied; then
    echo "xprof bench venv up to date: $venv" >&2
else
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv with $("$python" --version 2>&1)" >&2
        mkdir -p "$repo/.cache"
        "$python" -m venv "$venv"
    fi
    echo "installing xprof==$XPROF_VERSION xprof-rs==$XPROF_RS_VERSION into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet "xprof==$XPROF_VERSION" "xprof-rs==$XPROF_RS_VERSION" >&2
    satisfied || { echo "error: $venv lacks xprof==$XPROF_VERSION / xprof-rs==$XPROF_RS_VERSION or their commands" >&2; exit 1; }
fi

echo "$venv/bin"
