#!/usr/bin/env bash
# Creates the example's virtual environment at <repo>/.cache/example-venv and installs requirements.txt there.
# Idempotent: does nothing when the venv already has the pinned versions. Prints the python to use.
#
#   bash examples/jax_transformer/setup.sh          # from anywhere
#   PYTHON=python3.11 bash examples/jax_transformer/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.cache/example-venv"

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
        echo "example: $venv was made from a python other users cannot run; making it again" >&2
        rm -rf "$venv"
    fi
fi
# jaxlib must match jax and the import must work.
exec bash "$repo/scripts/pinned-venv.sh" "$venv" "$here/requirements.txt" \
    'import jax, jaxlib; assert jax.__version__ == jaxlib.__version__' example
