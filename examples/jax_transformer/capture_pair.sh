#!/usr/bin/env bash
# Captures the example workload twice with one config change (batch size 8 → 16 by default), for A/B
# compare: profiles, metrics and XLA's optimized HLO of the train step (the ground truth of which op is
# which computation, used by the tests of `profile compare`).
#
#   bash examples/jax_transformer/capture_pair.sh [OUT_DIR] [--b-flag VALUE ...]
#
# OUT_DIR defaults to <repo>/.cache/compare-pair. Writes OUT_DIR/a and OUT_DIR/b, each with
# plugins/profile/<run>/<host>.xplane.pb, metrics.jsonl, config_effective.json and
# hlo/jit_step.after_optimizations.txt. Extra arguments are train.py flags for B only (default
# `--batch-size 16`). Uses the example's venv (examples/jax_transformer/setup.sh creates it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/.cache/compare-pair}"
shift $(( $# > 0 ? 1 : 0 ))
b_flags=("$@")
[ ${#b_flags[@]} -gt 0 ] || b_flags=(--batch-size 16)
python="$(bash "$here/setup.sh" | tail -1)"

# Small enough to commit as test data (about 1.4 MB per capture), large enough to have ~350 ops per step.
common=(--layers 2 --d-model 64 --heads 4 --seq-len 64 --batch-size 8 --steps 14
        --profile-start-step 4 --profile-num-steps 8)

capture() {
    local side="$1"; shift
    local dir="$out/$side" dump
    rm -rf "$dir"
    mkdir -p "$out"
    dump="$(mktemp -d)"
    echo "capturing $side: ${common[*]} $*" >&2
    XLA_FLAGS="--xla_dump_to=$dump --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=^$" \
        "$python" "$here/train.py" --artifact-dir "$dir" "${common[@]}" "$@" >"$dir.log" 2>&1 \
        || { echo "error: train.py failed for $side; see $dir.log" >&2; exit 1; }
    mkdir -p "$dir/hlo"
    local hlo
    hlo="$(ls "$dump"/*jit_step*after_optimizations.txt 2>/dev/null | head -1 || true)"
    [ -n "$hlo" ] || { echo "error: XLA wrote no optimized HLO for jit_step under $dump" >&2; exit 1; }
    cp "$hlo" "$dir/hlo/jit_step.after_optimizations.txt"
    rm -rf "$dump" "$dir.log"
    ls "$dir"/plugins/profile/*/*.xplane.pb >&2
}

capture a
capture b "${b_flags[@]}"
echo "$out"
