#!/usr/bin/env bash
# Creates the tfevents example's virtual environment at <repo>/.cache/tfevents-venv and installs requirements.txt
# there. Idempotent: does nothing when the venv already has the pinned versions. Prints the python to use.
#
#   bash examples/tfevents/setup.sh          # from anywhere
#   PYTHON=python3.11 bash examples/tfevents/setup.sh
#   "$(bash examples/tfevents/setup.sh)" examples/tfevents/write_events.py   # regenerate the test data
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.cache/tfevents-venv"
req="$here/requirements.txt"
python="${PYTHON:-python3}"

# Keep pip from writing a cache outside the repo.
export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

# "name==version" for every pinned requirement (extras stripped), e.g. "tensorboard==2.21.0".
pins() {
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' -e 's/[[:space:]]//g' "$req" | grep '==' || true
}

# True when every pin is installed in the venv at exactly that version.
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
    # The writer must import without TensorFlow.
    "$venv/bin/python" -c 'from tensorboard.summary.writer.event_file_writer import EventFileWriter' >/dev/null 2>&1
}

if satisfied; then
    echo "tfevents venv up to date: $venv" >&2
else
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv with $("$python" --version 2>&1)" >&2
        mkdir -p "$repo/.cache"
        "$python" -m venv "$venv"
    fi
    echo "installing $(pins | tr '\n' ' ')into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet -r "$req" >&2
    satisfied || { echo "error: $venv does not have the versions in $req after installing" >&2; exit 1; }
fi

echo "$venv/bin/python"
