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

# As root, jobs run as users of their own: the venv must be made from a python they can run.
source "$repo/scripts/lib/job-python.sh"
job_python "$venv" example
# jaxlib must match jax and the import must work.
exec bash "$repo/scripts/pinned-venv.sh" "$venv" "$here/requirements.txt" \
    'import jax, jaxlib; assert jax.__version__ == jaxlib.__version__' example
