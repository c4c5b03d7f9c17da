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
# The writer must import without TensorFlow.
exec bash "$repo/scripts/pinned-venv.sh" "$repo/.cache/tfevents-venv" "$here/requirements.txt" \
    'from tensorboard.summary.writer.event_file_writer import EventFileWriter' tfevents
