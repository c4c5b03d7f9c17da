#!/usr/bin/env bash
# Makes the multi-host captures the tests keep (crates/falcon-analysis/tests/data/multihost/), on this machine:
#   jax-4-late2-30ms    4 JAX processes (CPU, gloo), process 2 starting each of 10 steps 30 ms late
#   jax-4-control       the same 4 processes, no delay
#   jax-8-late5-15ms    8 processes, process 5 starting each step 15 ms late
#   jax-4-transfer      4 processes, no delay, a wide model (48 MB of gradients a step): the transfer dominates
# Each run folder holds plugins/profile/<run>/host-<i>.xplane.pb and truth.jsonl (each process's own clock).
#   bash examples/multihost/make_fixtures.sh [OUT]     (default: the tests' folder; existing runs are replaced)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/crates/falcon-analysis/tests/data/multihost}"
python="$(bash "$repo/examples/jax_transformer/setup.sh")"
mkdir -p "$out"
run() {
    local name="$1"
    shift
    rm -rf "${out:?}/$name"
    echo "multihost: $name ($*)" >&2
    "$python" "$here/capture.py" "$out/$name" "$@" >/dev/null
}
run jax-4-late2-30ms --processes 4 --late 2 --delay-ms 30
run jax-4-control --processes 4
run jax-8-late5-15ms --processes 8 --late 5 --delay-ms 15
run jax-4-transfer --processes 4 --width 2048
du -sh "$out"/* >&2
