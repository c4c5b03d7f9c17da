#!/usr/bin/env bash
# Makes the multi-host captures the tests keep (crates/falcon-analysis/tests/data/multihost/), on this machine:
#   jax-4-late2-30ms    4 JAX processes (CPU, gloo), process 2 starting each of 10 steps 30 ms late
#   jax-4-control       the same 4 processes, no delay
#   jax-8-late5-15ms    8 processes, process 5 starting each step 15 ms late (8 processes on 2 cores: the gloo
#                       all-reduce itself takes ~65 ms a step, more than the delay)
#   jax-8-late5-80ms    the same, 80 ms late: the waiting is the larger part again
#   jax-4-transfer      4 processes, no delay, a wide model (48 MB of gradients a step): the transfer dominates
#   torch-4-late2-30ms  4 PyTorch DDP ranks (CPU, gloo), rank 2 starting each of 10 steps 30 ms late
#   torch-4-control     the same 4 ranks, no delay
# A JAX run folder holds plugins/profile/<run>/host-<i>.xplane.pb and truth.jsonl (each process's own clock); a
# PyTorch one rank-<i>.pt.trace.json.gz and truth.jsonl (each rank's own clock); each also reference.json, made by
# reference.py from the raw events.
#   bash examples/multihost/make_fixtures.sh [OUT [jax|torch|all]]   (default: the tests' folder, all; existing
#                                                                     runs of those made are replaced;
#                                                                     "" names the default OUT)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/crates/falcon-analysis/tests/data/multihost}"
which="${2:-all}"
case "$which" in jax | torch | all) ;; *) echo "usage: make_fixtures.sh [OUT [jax|torch|all]]" >&2; exit 2 ;; esac
mkdir -p "$out"
run() {
    local python="$1" script="$2" name="$3"
    shift 3
    rm -rf "${out:?}/$name"
    echo "multihost: $name ($*)" >&2
    "$python" "$here/$script" "$out/$name" "$@" >/dev/null
    # The reference the tests hold Falcon to, from the run's raw events (reference.py says how).
    "$python" "$here/reference.py" "$out/$name"
}
if [[ $which != torch ]]; then
    python="$(bash "$repo/examples/jax_transformer/setup.sh")"
    run "$python" capture.py jax-4-late2-30ms --processes 4 --late 2 --delay-ms 30
    run "$python" capture.py jax-4-control --processes 4
    run "$python" capture.py jax-8-late5-15ms --processes 8 --late 5 --delay-ms 15
    run "$python" capture.py jax-8-late5-80ms --processes 8 --late 5 --delay-ms 80
    run "$python" capture.py jax-4-transfer --processes 4 --width 2048
fi
if [[ $which != jax ]]; then
    python="$(bash "$here/setup_torch.sh")"
    run "$python" capture_torch.py torch-4-late2-30ms --ranks 4 --late 2 --delay-ms 30
    run "$python" capture_torch.py torch-4-control --ranks 4
fi
du -sh "$out"/* >&2
