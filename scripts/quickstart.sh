#!/usr/bin/env bash
# Falcon's main job on the embedded defaults (SQLite, local artifact dir, local job runner):
# builds the `falcon` binary, writes ./falcon.toml with `falcon init` if there is none, then runs
# `falcon doctor`, which checks every configured component end to end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "quickstart: building falcon (first build takes a few minutes)" >&2
cargo build --quiet -p falcon-cli
FALCON="$ROOT/target/debug/falcon"

if [[ -f falcon.toml ]]; then
    echo "quickstart: ./falcon.toml exists; keeping it" >&2
else
    "$FALCON" init
fi
"$FALCON" doctor
