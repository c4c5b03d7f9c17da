#!/usr/bin/env bash
# Makes (or reuses) a Python virtual environment with exactly the pins of a requirements file, and prints the
# python to use. Idempotent: does nothing when every pin is installed at its version and CHECK succeeds.
#
#   bash scripts/pinned-venv.sh VENV REQUIREMENTS CHECK LABEL
#
# CHECK is Python code run in the venv that must succeed (an import smoke test); LABEL names the venv in
# messages. PYTHON selects the interpreter that creates the venv (default python3). pip writes no cache
# outside the repo.
set -euo pipefail

venv="$1" req="$2" check="$3" label="$4"
python="${PYTHON:-python3}"
export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

# "name==version" for every pinned requirement (extras stripped), e.g. "jax==0.10.2".
pins() {
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' -e 's/[[:space:]]//g' "$req" | grep '==' || true
}

# True when every pin is installed in the venv at exactly that version and the check passes.
satisfied() {
    [ -x "$venv/bin/python" ] || return 1
    local pin name want have
    for pin in $(pins); do
        name="${pin%%==*}"
        want="${pin#*==}"
        have="$("$venv/bin/python" -c 'import sys
from importlib.metadata import version, PackageNotFoundError
try: print(version(sys.argv[1]))
except PackageNotFoundError: pass' "$name" 2>/dev/null || true)"
        [ "$have" = "$want" ] || return 1
    done
    "$venv/bin/python" -c "$check" >/dev/null 2>&1
}

if satisfied; then
    echo "$label venv up to date: $venv" >&2
else
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv with $("$python" --version 2>&1)" >&2
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv"
    fi
    echo "installing $(pins | tr '\n' ' ')into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet -r "$req" >&2
    satisfied || { echo "error: $venv does not have the versions in $req after installing" >&2; exit 1; }
fi

echo "$venv/bin/python"
